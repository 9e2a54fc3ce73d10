"""Packet replication engine: multicast groups (port, egress_rid) and clone sessions."""

from __future__ import annotations

from p4sim.model import NotFound, P4SimError


class PRE:
    def __init__(self) -> None:
        self.groups: dict[int, list[tuple[int, int]]] = {}
        self.sessions: dict[int, tuple[list[tuple[int, int]], int]] = {}
        # simple_switch_CLI's node model (mc_node_create / mc_node_associate), for STF
        self.nodes: dict[int, tuple[int, list[int]]] = {}  # handle -> (rid, ports)
        self.node_group: dict[int, int] = {}  # node handle -> group
        self._next_node = 0

    # -- multicast
    def group_set(self, group: int, replicas: list[tuple[int, int]]) -> None:
        if not 0 < group < 1 << 16:
            raise P4SimError(f"multicast group id {group} out of range 1..65535")
        for p, r in replicas:
            if not 0 <= int(p) < 512 or not 0 <= int(r) < 1 << 16:
                raise P4SimError(f"multicast replica ({p}, {r}): port must be 0..511, rid 0..65535")
        self.groups[group] = [(int(p), int(r)) for p, r in replicas]

    def group_delete(self, group: int) -> None:
        if group not in self.groups:
            raise NotFound(f"multicast group {group} does not exist")
        del self.groups[group]

    def replicas(self, group: int) -> list[tuple[int, int]]:
        return self.groups.get(group, [])

    # -- BMv2 CLI style nodes
    def node_create(self, rid: int, ports: list[int]) -> int:
        h = self._next_node
        self._next_node += 1
        self.nodes[h] = (rid, ports)
        return h

    def node_associate(self, group: int, handle: int) -> None:
        if handle not in self.nodes:
            raise NotFound(f"multicast node {handle} does not exist")
        self.node_group[handle] = group
        self._rebuild(group)

    def group_create(self, group: int) -> None:
        self.groups.setdefault(group, [])

    def _rebuild(self, group: int) -> None:
        reps: list[tuple[int, int]] = []
        for h, g in self.node_group.items():
            if g == group:
                rid, ports = self.nodes[h]
                reps.extend((p, rid) for p in ports)
        self.groups[group] = reps

    # -- clone sessions
    def session_set(self, session: int, replicas: list[tuple[int, int]], truncate: int = 0) -> None:
        if not 0 <= session < 1 << 16:
            raise P4SimError(f"clone session id {session} out of range")
        for p, r in replicas:
            if not 0 <= int(p) < 512 or not 0 <= int(r) < 1 << 16:
                raise P4SimError(f"clone replica ({p}, {r}): port must be 0..511, rid 0..65535")
        self.sessions[session] = ([(int(p), int(r)) for p, r in replicas], int(truncate))

    def session_delete(self, session: int) -> None:
        if session not in self.sessions:
            raise NotFound(f"clone session {session} does not exist")
        del self.sessions[session]

    def session(self, session: int) -> tuple[list[tuple[int, int]], int] | None:
        return self.sessions.get(session)
