"""Runtime of v1model `action_profile` / `action_selector` and of the tables they implement.

An indirect table's entry holds no action: it points at a member of the profile (an action
with its arguments) or, for a selector, at a group of members. As BMv2 does:
- a member's handle is allocated lowest-free-first (bm_sim/handle_mgr.h `get_handle`);
- a group keeps its members in handle order (bm_sim/action_profile.cpp, GroupInfo's
  RandAccessUIntSet) and a packet gets member `get_nth(hash % size)`
  (`ActionProfile::GroupMgr::get_from_hash`), the hash being the selector's algorithm over
  the table's `selector` keys (`ActionProfile::choose_from_group`: `hash->output(pkt)`);
- an entry may not point at an empty group (match_tables.cpp `add_entry_ws`: EMPTY_GRP);
  a group emptied later runs no action, the table still hits
  (`MatchTableIndirect::lookup`: "yielded empty group", `empty_action`);
- a member still in a group or used by an entry cannot be deleted (MBR_STILL_USED), nor a
  group used by an entry (GRP_STILL_USED); deleting a group releases its members.

Member ids and group ids are the control plane's (P4Runtime); handles are p4sim's own.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from p4sim.model import (
    AlreadyExists,
    FailedPrecondition,
    NotFound,
    P4SimError,
    ResourceExhausted,
    TableEntry,
    TableInfo,
)
from p4sim.runtime.tables import ActionSpec, Rec, Table

NO_ACTION = Rec(None, -1, ())  # an emptied group: no branch of the table's dispatch runs


class _Handles:
    """Lowest free handle first (BMv2 HandleMgr)."""

    def __init__(self) -> None:
        self.next = 0
        self.free: list[int] = []

    def get(self) -> int:
        if self.free:
            return heapq.heappop(self.free)
        self.next += 1
        return self.next - 1

    def release(self, h: int) -> None:
        heapq.heappush(self.free, h)


class Member:
    """An action with its arguments; `recs[slot]` is it as each table's data path runs it."""

    __slots__ = ("mid", "hnd", "action", "params", "recs", "refs")
    is_member = True

    def __init__(self, mid: int, hnd: int):
        self.mid, self.hnd = mid, hnd
        self.action = ""
        self.params: dict[str, int] = {}
        self.recs: list[Rec] = []
        self.refs = 0  # groups and entries pointing at it


class Group:
    __slots__ = ("gid", "hnd", "members", "refs", "prof")
    is_member = False

    def __init__(self, gid: int, hnd: int, prof: Profile):
        self.gid, self.hnd, self.prof = gid, hnd, prof
        self.members: list[Member] = []  # in handle order
        self.refs = 0  # entries pointing at it

    def pick(self, data: bytes, slot: int) -> Rec:
        """The member a packet with selector-key bytes `data` runs, as table `slot` runs it."""
        n = len(self.members)
        if not n:
            return NO_ACTION
        return self.members[self.prof.hashfn(data) % n].recs[slot]


class Profile:
    """One action profile or selector: its members, its groups, the tables using it."""

    def __init__(
        self,
        name: str,
        size: int,
        selector: bool,
        max_group_size: int = 0,
        hashfn: Callable[[bytes], int] | None = None,
    ):
        self.name, self.size, self.selector = name, size, selector
        self.max_group_size = max_group_size
        self.hashfn = (
            hashfn  # set by the switch for selectors (custom CRCs and random are per switch)
        )
        self.members: dict[int, Member] = {}
        self.groups: dict[int, Group] = {}
        self.tables: list[IndirectTable] = []
        self._mh = _Handles()
        self._gh = _Handles()

    def bind(self, table: IndirectTable) -> int:
        self.tables.append(table)
        return len(self.tables) - 1

    # ---------------------------------------------------------------- members

    def _recs(self, action: str, params: dict[str, int]) -> tuple[str, list[Rec]]:
        """The action as every table using the profile runs it (each checks it is its own)."""
        if not self.tables:
            raise P4SimError(f"action profile {self.name} is used by no table: it has no actions")
        recs = []
        for t in self.tables:
            aid, args = t._action(action, params, default=False)
            recs.append(Rec(None, aid, args))
        return self.tables[0].actions[recs[0].aid].name, recs

    def next_ids(self) -> tuple[int, int]:
        """(member, group) handles the next creations get: simple_switch_CLI names members
        and groups by these (act_prof_create_member prints its handle)."""
        return (
            self._mh.free[0] if self._mh.free else self._mh.next,
            self._gh.free[0] if self._gh.free else self._gh.next,
        )

    def action_params(self, action: str) -> list[str]:
        """The parameter names of `action` (a unique suffix will do), in declaration order."""
        if not self.tables:
            raise P4SimError(f"action profile {self.name} is used by no table: it has no actions")
        t = self.tables[0]
        aid = t.action_index.get(action)
        if aid is None:
            cands = [i for i, a in enumerate(t.actions) if a.name.endswith("." + action)]
            if len(cands) != 1:
                raise NotFound(f"action {action!r} is not an action of action profile {self.name}")
            aid = cands[0]
        return [p for p, _ in t.actions[aid].params]

    def member(self, mid: int) -> Member:
        m = self.members.get(mid)
        if m is None:
            raise NotFound(f"action profile {self.name} has no member {mid}")
        return m

    def member_add(self, mid: int, action: str, params: dict[str, int]) -> None:
        if mid in self.members:
            raise AlreadyExists(f"action profile {self.name}: member {mid} already exists")
        if len(self.members) >= self.size:
            raise ResourceExhausted(f"action profile {self.name} is full ({self.size} members)")
        name, recs = self._recs(action, params)
        m = Member(mid, self._mh.get())
        m.action, m.params, m.recs = name, dict(params), recs
        self.members[mid] = m

    def member_modify(self, mid: int, action: str, params: dict[str, int]) -> None:
        m = self.member(mid)
        name, recs = self._recs(action, params)
        m.action, m.params, m.recs = name, dict(params), recs  # entries and groups see it at once

    def member_delete(self, mid: int) -> None:
        m = self.member(mid)
        if m.refs:
            raise FailedPrecondition(
                f"action profile {self.name}: member {mid} is still used by"
                f" {m.refs} group(s) or table entr(y/ies)"
            )
        del self.members[mid]
        self._mh.release(m.hnd)

    # ---------------------------------------------------------------- groups

    def _need_selector(self) -> None:
        if not self.selector:
            raise P4SimError(f"action profile {self.name} has no selector: it has no groups")

    def group(self, gid: int) -> Group:
        self._need_selector()
        g = self.groups.get(gid)
        if g is None:
            raise NotFound(f"action selector {self.name} has no group {gid}")
        return g

    def _members_of(self, mids: list[int]) -> list[Member]:
        if len(set(mids)) != len(mids):
            raise P4SimError(f"action selector {self.name}: a member is listed twice in the group")
        if self.max_group_size and len(mids) > self.max_group_size:
            raise ResourceExhausted(
                f"action selector {self.name}: a group holds at most"
                f" {self.max_group_size} members, {len(mids)} given"
            )
        return sorted((self.member(mid) for mid in mids), key=lambda m: m.hnd)

    def _set_members(self, g: Group, members: list[Member]) -> None:
        for m in g.members:
            m.refs -= 1
        for m in members:
            m.refs += 1
        g.members = members

    def group_add(self, gid: int, mids: list[int]) -> None:
        self._need_selector()
        if gid in self.groups:
            raise AlreadyExists(f"action selector {self.name}: group {gid} already exists")
        if len(self.groups) >= self.size:
            # v1model declares no group count; `size` bounds it so a client cannot grow it forever
            raise ResourceExhausted(f"action selector {self.name} holds at most {self.size} groups")
        members = self._members_of(mids)
        g = Group(gid, self._gh.get(), self)
        self._set_members(g, members)
        self.groups[gid] = g

    def group_modify(self, gid: int, mids: list[int]) -> None:
        """The group's members become `mids` (P4Runtime MODIFY replaces the list)."""
        g = self.group(gid)
        self._set_members(g, self._members_of(mids))

    def group_delete(self, gid: int) -> None:
        g = self.group(gid)
        if g.refs:
            raise FailedPrecondition(
                f"action selector {self.name}: group {gid} is still used by"
                f" {g.refs} table entr(y/ies)"
            )
        self._set_members(g, [])
        del self.groups[gid]
        self._gh.release(g.hnd)

    def target(self, entry: TableEntry, table: str) -> Member | Group:
        """What an entry of `table` points at (checked as BMv2 checks it)."""
        if entry.group is not None:
            if entry.member is not None:
                raise P4SimError(f"table {table}: an entry names a member or a group, not both")
            g = self.group(entry.group)
            if not g.members:
                raise FailedPrecondition(
                    f"table {table}: group {entry.group} of {self.name} is empty"
                )
            return g
        if entry.member is None:
            raise P4SimError(
                f"table {table} is indirect (action profile {self.name}): an entry names"
                " a member or a group, not an action"
            )
        return self.member(entry.member)


class IndirectTable(Table):
    """A table whose entries point at members or groups of `profile`; the generated code
    resolves a hit through `rec.args` (the Member or Group) and `slot`."""

    def __init__(self, info: TableInfo, actions: list[ActionSpec], profile: Profile):
        super().__init__(info, actions)
        self.profile = profile
        self.slot = profile.bind(self)

    def _entry_action(self, entry: TableEntry) -> tuple[int, tuple]:
        if entry.action or entry.params:
            raise P4SimError(
                f"table {self.name} is indirect (action profile {self.profile.name}): an entry"
                " names a member or a group, not an action"
            )
        t = self.profile.target(entry, self.name)
        t.refs += 1
        return -1, t  # type: ignore[return-value]  (the data path reads the target from `args`)

    def modify(self, entry: TableEntry) -> None:
        old = self.find(entry)
        before = old.args
        super().modify(entry)
        before.refs -= 1  # type: ignore[attr-defined]
        assert old.entry is not None
        old.entry.member, old.entry.group = entry.member, entry.group

    def delete(self, entry: TableEntry) -> None:
        target = self.find(entry).args
        super().delete(entry)
        target.refs -= 1  # type: ignore[attr-defined]

    def clear(self) -> None:
        for rec in self.recs.values():
            rec.args.refs -= 1  # type: ignore[attr-defined]
        super().clear()
