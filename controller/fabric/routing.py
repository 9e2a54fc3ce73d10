"""L3 routes and ECMP groups per switch, and the entities that program them.

Routes are shortest paths (hop count) over the switch graph toward the switch that owns a
destination's /24; every neighbour on a shortest path is an equal-cost next hop, so a leaf
reaches another leaf's prefix through an ECMP group of all spines. `only` restricts the
directed switch edges routes may use (a one-way ring, a detour after a link failure).

The entities come from the same code as `rocelab apply`: a per-switch `controller.config`
mapping (ports, local hosts, single-next-hop `routes`, classes, ECN, PFC, CNP, buffer) goes
through `parse_config`/`check`/`compile_config`; only the ECMP group entries, which that
schema has no key for, are built here (table/action names as in p4src/README.md).
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass, field

from controller.config import Config, ConfigError, Names, check, compile_config, parse_config
from controller.targets.base import Entity, Exact, Lpm, TableEntry

from .topology import Topology

ECMP_NHOP_BASE = 1000  # next-hop ids of ECMP members (compile_config numbers from 1)


@dataclass
class SwitchRoutes:
    switch: str
    # destination prefix -> egress ports (one: a plain route; more: an ECMP group)
    routes: dict[str, list[int]] = field(default_factory=dict)


def _adjacency(t: Topology, only: set[tuple[str, str]] | None) -> dict[str, list[tuple[int, str]]]:
    adj: dict[str, list[tuple[int, str]]] = {s: [] for s in t.switches}
    for s in t.switches:
        for port, (peer, _pp, _lk) in t.switch_ports(s).items():
            if peer in t.switches and (only is None or (s, peer) in only):
                adj[s].append((port, peer))
    return adj


def compute_routes(
    t: Topology, only: set[tuple[str, str]] | None = None
) -> dict[str, SwitchRoutes]:
    """Shortest-path next hops from every switch to every other switch's prefix."""
    adj = _adjacency(t, only)
    radj: dict[str, list[str]] = {s: [] for s in t.switches}
    for s, nbrs in adj.items():
        for _port, peer in nbrs:
            radj[peer].append(s)
    out = {s: SwitchRoutes(s) for s in t.switches}
    for dst in t.switches.values():
        if not t.hosts_of(dst.name):
            continue
        dist = {dst.name: 0}  # BFS on reversed edges: hops from each switch to dst
        q = deque([dst.name])
        while q:
            u = q.popleft()
            for v in radj[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    q.append(v)
        for s in t.switches:
            if s == dst.name:
                continue
            if s not in dist:
                raise ValueError(f"{s} cannot reach {dst.name} with the allowed links")
            ports = sorted(p for p, peer in adj[s] if dist.get(peer) == dist[s] - 1)
            out[s].routes[dst.prefix] = ports
    return out


def switch_config(t: Topology, switch: str, routes: SwitchRoutes, policy: dict) -> dict:
    """The `controller.config` mapping of one switch: `policy` holds the fabric-wide keys
    (classes, ecn, pfc, buffer, cnp, roce_mtu); ports, hosts, routes come from the topology."""
    sw = t.switches[switch]
    raw = copy.deepcopy(policy)
    for key in ("ports", "hosts", "routes", "router_mac", "routing"):
        if key in raw:
            raise ConfigError(key, "comes from the topology, not the fabric policy")
    raw["routing"] = "l3"
    raw["router_mac"] = sw.router_mac
    raw["ports"] = {}
    raw["hosts"] = {}
    raw["routes"] = []
    for port, (_peer, _pp, lk) in t.switch_ports(switch).items():
        raw["ports"][port] = {
            "speed": lk.bps,
            "cable_m": lk.delay_ns / 5.0,
            "mac": sw.port_mac(port),
        }
    for h in t.hosts_of(switch):
        raw["hosts"][h.name] = {"port": h.port, "mac": h.mac, "ip": h.ip}
    for prefix, ports in sorted(routes.routes.items()):
        if len(ports) == 1:
            peer = t.switch_ports(switch)[ports[0]][0]
            raw["routes"].append(
                {"prefix": prefix, "port": ports[0], "dmac": t.switches[peer].router_mac}
            )
    return raw


@dataclass
class SwitchProgram:
    config: Config
    entities: list[Entity]
    port_speeds: dict[int, float]
    queue_capacity: dict[tuple[int, int], int]
    ecmp_groups: dict[str, list[int]]


def compile_switch(
    t: Topology, switch: str, routes: SwitchRoutes, policy: dict, names: Names
) -> SwitchProgram:
    raw = switch_config(t, switch, routes, policy)
    cfg, errors = parse_config(raw, f"fabric:{switch}")
    bad = [f for f in check(cfg, errors) if f.level == "error"]
    if bad:
        raise ConfigError(f"{switch}.{bad[0].key}", bad[0].message)
    comp = compile_config(cfg, names)
    ents = list(comp.entities)
    T, A = names.table, names.action
    groups = {p: ports for p, ports in sorted(routes.routes.items()) if len(ports) > 1}
    nh = ECMP_NHOP_BASE
    ports_of = t.switch_ports(switch)
    for gid, (prefix, ports) in enumerate(groups.items(), start=1):
        net_ip, plen = prefix.split("/")
        a, b, c, d = (int(x) for x in net_ip.split("."))
        ents.append(
            TableEntry(
                T("ipv4_lpm"),
                {"hdr.ipv4.dst": Lpm(a << 24 | b << 16 | c << 8 | d, int(plen))},
                A("set_ecmp"),
                {"group": gid, "size": len(ports)},
            )
        )
        for member, port in enumerate(ports):
            nh += 1
            peer = t.switches[ports_of[port][0]]
            ents.append(
                TableEntry(
                    T("ecmp_member"),
                    {"meta.ecmp_group": Exact(gid), "meta.ecmp_member": Exact(member)},
                    A("set_nhop"),
                    {"nhop_id": nh},
                )
            )
            ents.append(
                TableEntry(
                    T("nexthop"),
                    {"meta.nhop_id": Exact(nh)},
                    A("set_nexthop"),
                    {
                        "port": port,
                        "smac": _mac(cfg.ports[port].mac),
                        "dmac": _mac(peer.router_mac),
                    },
                )
            )
    return SwitchProgram(cfg, ents, comp.port_speeds, comp.queue_capacity, groups)


def _mac(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def program_switch(target, prog: SwitchProgram) -> None:
    """Push a compiled switch program through the Target interface (as `apply_config`)."""
    from controller.targets.base import TargetError

    target.write(prog.entities, modify_existing=True)
    try:  # a P4Runtime device keeps its own port speeds and queue sizes
        for port, bps in prog.port_speeds.items():
            target.set_port_speed(port, bps)
        for (port, tc), cap in prog.queue_capacity.items():
            target.set_queue_capacity(port, tc, cap)
    except TargetError as exc:
        if exc.code != "UNIMPLEMENTED":
            raise
