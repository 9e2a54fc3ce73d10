"""Match-action tables: exact (dict), lpm (dict per prefix length, longest first),
ternary/optional/lpm mixes (tuple space search: one dict per distinct mask tuple, masks
tried in order of their best priority), anything with a range (priority-ordered scan).
Highest priority wins (P4Runtime convention). Among equal priorities the entry with the
lowest handle wins, handles being allocated lowest-free-first, as BMv2 does
(bm_sim/lookup_structures.cpp EntryList::lookup keeps the first match in handle order;
bm_sim/handle_mgr.h HandleMgr::get_handle hands out the first unset handle, so a handle
freed by a delete is reused by the next add).

A table keeps one `Rec` per entry: the action index (position in the table's action list,
which the generated code dispatches on), the argument tuple, and the entry's direct
counter and meter state. Lookups return a `Rec` or None (miss).

Writes: `add`/`modify`/`delete` check an entry then commit it. A caller that has already
made the value-independent checks against this table (P4Runtime's Write fast path,
p4sim/server/fastwrite/builders.py) calls `insert_checked`/`modify_checked`/`delete_checked`
with the canonical key, and keeps only the checks that depend on the table's state;
the errors are the same exceptions with the same messages. Such an entry keeps no
`TableEntry` (`Rec.entry` is None): `entry_of` builds it when it is first read, the
same one `add` would have stored.

`Rec` and the bulk loops `insert_exact1_many`/`delete_exact1_many` have a compiled variant
(runtime/_write.pyx, selected by the profile: compiled_write.py),
swapped in at the end of this module, before any table exists; the code here is the reference.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass

from p4sim.model import (
    AlreadyExists,
    Exact,
    Lpm,
    NotFound,
    Optional_,
    P4SimError,
    Range,
    ResourceExhausted,
    TableEntry,
    TableInfo,
    Ternary,
)
from p4sim.runtime import compiled_write


@dataclass(frozen=True)
class ActionSpec:
    """What a table needs to know about one of its actions."""

    name: str
    params: tuple[tuple[str, int], ...]  # (name, bitwidth)
    scope: str = "TABLE_AND_DEFAULT"


class Rec:
    """One installed entry (or the default action) as the data path sees it."""

    __slots__ = (
        "entry",
        "aid",
        "args",
        "pkts",
        "bytes",
        "meter",
        "prio",
        "seq",
        "hnd",
        "tests",
        "mkey",
    )

    def __init__(
        self,
        entry: TableEntry | None,
        aid: int,
        args: tuple[int, ...],
        prio: int = 0,
        tests: tuple = (),
        mkey: tuple = (),
        seq: int = 0,
        hnd: int = 0,
    ):
        self.entry = entry
        self.aid = aid
        self.args = args
        self.pkts = 0
        self.bytes = 0
        self.meter = None  # direct meter state, created lazily by the switch
        self.prio = prio
        self.seq = seq  # insertion order (what reads return entries in)
        self.hnd = hnd  # BMv2-style handle: breaks ties between equal priorities
        self.tests = tests  # per key: (kind, a, b) for the scan
        self.mkey = mkey  # canonical match key (for duplicate detection)


REC_FIELDS = (
    Rec.__slots__
)  # every field of a Rec, whichever class (the compiled one has no __slots__)
PyRec = Rec  # the reference class (tests compare the compiled one with it)


class _FullLength(dict):
    """A single-key lpm table's entries of full prefix length (value -> Rec). While they are
    most of the table, the table's `lookup1` is this dict's own `__getitem__`: a hit is the
    longest possible match in one C probe; a miss (or a key outside the width) goes to
    `__missing__`, the table's general lookup, which stores nothing."""

    __slots__ = ("miss",)

    def __missing__(self, v: int) -> Rec | None:
        return self.miss(v)


def _scan_order(r: Rec) -> tuple[int, int]:
    return (-r.prio, r.hnd)


def _mask(w: int) -> int:
    return (1 << w) - 1


class Table:
    """Runtime state of one P4 table."""

    # what the compiled pipeline reads on every apply (p4sim/compiled/views.py): as slots
    # it reads them at a fixed offset (p4sim/compiled/slots.py), not by a dict probe; the
    # other attributes (and `lookup1` while `_bind_lookup1` binds it) stay in __dict__
    __slots__ = ("recs", "default", "exact_get", "exact1_get", "lookup", "__dict__", "__weakref__")

    def __init__(self, info: TableInfo, actions: list[ActionSpec]):
        self.info = info
        self.name = info.name
        self.actions = actions
        self.action_index = {a.name: i for i, a in enumerate(actions)}
        self.kinds = tuple(k.match_kind for k in info.keys)
        self.widths = tuple(k.bitwidth for k in info.keys)
        self.key_names = tuple(k.name for k in info.keys)
        # for the insert/delete paths: computed once, not per entry
        self._key_set = frozenset(self.key_names)
        self._key_specs = tuple(
            zip(
                self.key_names,
                self.kinds,
                self.widths,
                [_mask(w) for w in self.widths],
                strict=True,
            )
        )
        self._all_exact = all(k == "exact" for k in self.kinds)
        self._param_names = [frozenset(p for p, _ in a.params) for a in actions]
        kinds = set(self.kinds)
        if not kinds or kinds == {"exact"}:
            self.mode = "exact"
        elif kinds <= {"exact", "lpm"} and self.kinds.count("lpm") == 1:
            self.mode = "lpm"
            self.lpm_pos = self.kinds.index("lpm")
        else:
            self.mode = "scan"
        self.needs_priority = self.mode == "scan"
        self.recs: dict[tuple, Rec] = {}  # canonical key -> rec (all modes)
        # exact mode: the canonical key is the tuple of values, so the exact index is `recs`
        # itself (one dict store per insert, not two)
        self.exact: dict[tuple, Rec] = self.recs if self.mode == "exact" else {}
        self.lpm: dict[int, dict[tuple, Rec]] = {}
        self.lpm_lens: list[int] = []
        # single-key lpm: (mask, dict) per prefix length shorter than `lpm1_split` bits,
        # longest first; the longer lengths are listed per value of the key's top
        # `lpm1_split` bits, so a lookup probes only the lengths present under its own /16
        # (one or two in a large routing table) instead of every length in the table
        self.lpm1: list[tuple[int, dict[int, Rec]]] = []
        w0 = self.widths[0] if self.widths else 0
        self.lpm1_split = min(16, w0)
        self.lpm1_shift = w0 - self.lpm1_split
        self.lpm1_long: dict[int, list[tuple[int, dict[int, Rec]]]] = {}
        self.lpm1_cnt: dict[int, dict[int, int]] = {}
        self.lpm1d: dict[int, dict[int, Rec]] = {}
        self.scan: list[Rec] = []
        # tuple space search: packed mask -> {packed masked value: entries, best first}
        self.group_map: dict[int, dict[int, list[Rec]]] = {}
        self.group_top: dict[int, int] = {}  # packed mask -> best priority in that group
        self.groups: list[
            tuple[int, int, dict[int, list[Rec]]]
        ] = []  # (top, mask, dict), top first
        self._pack_w = self.widths
        self._pack_full = tuple(_mask(w) for w in self.widths)
        self.seq = 0
        self.next_handle = 0  # handles never used yet start here
        self.free_handles: list[int] = []  # heap of released handles below next_handle
        self.const_entries = False
        self.default = Rec(None, 0, ())
        self.initial_default = self.default
        self.lookup = self._lookup_exact
        if self.mode == "lpm":
            self.lookup = self._lookup_lpm
        elif self.mode == "scan":
            self.lookup = self._lookup_scan if "range" in kinds else self._lookup_masks
        self.exact_get = self.exact.get
        # single-key exact tables are also indexed by the bare int (no tuple per lookup)
        self.exact1: dict[int, Rec] = {}
        self.exact1_get = self.exact1.get

    def algorithm(self) -> str:
        """The lookup structure this table uses, in words (what the bench prints)."""
        if self.mode == "exact":
            return "exact match: one hash probe (dict keyed by the key values)"
        if self.mode == "lpm":
            return (
                f"longest prefix match: one dict per prefix length, probed longest first "
                f"({len(self.lpm)} prefix lengths installed; single-key tables probe only the "
                f"lengths present under the key's top {self.lpm1_split} bits, and their "
                f"full-length prefixes first in one probe while those are half the table or more)"
            )
        if self.lookup == self._lookup_scan:
            return f"linear scan in priority order (a range key), {len(self.scan)} entries"
        return (
            f"tuple space search: one dict probe per distinct mask tuple ({len(self.groups)} "
            "installed), groups tried in order of their best priority, stopping once no group "
            "left can beat the match; equal priorities go to the lowest handle, as BMv2"
        )

    # ---------------------------------------------------------------- lookups

    def _lookup_exact(self, key: tuple) -> Rec | None:
        return self.exact.get(key)

    def lookup1(self, v: int) -> Rec | None:
        """Single-key lpm: longest prefix first, one dict probe per prefix length (the
        generated code's call; `_bind_lookup1` may put a faster equal one in its place)."""
        cands = self.lpm1_long.get(v >> self.lpm1_shift)
        if cands is not None:
            for m, d in cands:
                r = d.get(v & m)
                if r is not None:
                    return r
        for m, d in self.lpm1:
            r = d.get(v & m)
            if r is not None:
                return r
        return None

    def _bind_lookup1(self) -> None:
        """While full-length prefixes (host routes) are at least half of a single-key lpm
        table, `lookup1` probes them first, in C (`_FullLength`); else the general loop
        (a table of /24s would only pay for a probe that misses)."""
        d = self.lpm1d.get(self.widths[0])
        if d is not None and 2 * len(d) >= len(self.recs):
            self.lookup1 = d.__getitem__  # type: ignore[method-assign]
        else:
            self.__dict__.pop("lookup1", None)

    def _rebuild_lpm1(self) -> None:
        # the short lengths, longest first; the dicts are shared with lpm1d
        w = self.widths[0] if self.widths else 0
        self.lpm1 = [
            (_mask(p) << (w - p), self.lpm1d[p])
            for p in sorted(self.lpm1d, reverse=True)
            if p < self.lpm1_split
        ]

    def _lpm1_count(self, plen: int, value: int, delta: int) -> None:
        """Keep the per-top-bits length lists of the long prefixes (>= lpm1_split bits)."""
        top = value >> self.lpm1_shift
        cnt = self.lpm1_cnt.setdefault(top, {})
        c = cnt.get(plen, 0) + delta
        if c:
            cnt[plen] = c
            if c != 1 or delta < 0:
                return  # the set of lengths under this top did not change
        else:
            del cnt[plen]
        if not cnt:
            del self.lpm1_cnt[top]
            del self.lpm1_long[top]
            return
        w = self.widths[0]
        self.lpm1_long[top] = [
            (_mask(p) << (w - p), self.lpm1d[p]) for p in sorted(cnt, reverse=True)
        ]

    def _lookup_lpm(self, key: tuple) -> Rec | None:
        pos = self.lpm_pos
        w = self.widths[pos]
        v = key[pos]
        for plen in self.lpm_lens:
            mk = v & ((_mask(plen)) << (w - plen))
            k = key[:pos] + (mk,) + key[pos + 1 :]
            r = self.lpm[plen].get(k)
            if r is not None:
                return r
        return None

    def _pack(self, vals) -> int:
        """The key fields as one int, first field in the top bits: a mask tuple becomes one
        int AND and a group probe one int-keyed dict lookup (4.5x faster than a tuple of
        masked fields at 100k ACL entries, same run)."""
        v = 0
        for k, w, full in zip(vals, self._pack_w, self._pack_full, strict=True):
            v = (v << w) | (k & full)
        return v

    def _lookup_masks(self, key: tuple) -> Rec | None:
        """Ternary/optional/lpm mixes without ranges (tuple space search): one dict probe per
        distinct mask tuple, groups in order of their best priority; once a match is found,
        a group whose best is below it cannot win, nor can any group after it. Within a
        bucket the best entry is first (higher priority, then lower handle)."""
        v = 0
        # (a key value's bits outside its width, e.g. a negative int<W>, are dropped first)
        for k, w, full in zip(key, self._pack_w, self._pack_full):  # noqa: B905 (hot path)
            v = (v << w) | (k & full)
        best: Rec | None = None
        for top, m, d in self.groups:
            if best is not None and top < best.prio:
                break
            recs = d.get(v & m)
            if recs:
                r = recs[0]
                # equal priority in another group: the lower handle wins (BMv2 EntryList)
                if best is None or r.prio > best.prio or (r.prio == best.prio and r.hnd < best.hnd):
                    best = r
        return best

    def _group_key(self, rec: Rec) -> tuple[int, int]:
        """(packed mask, packed masked value) of a value/mask entry."""
        return self._pack(t[2] for t in rec.tests), self._pack(t[1] for t in rec.tests)

    def _group_add(self, rec: Rec) -> None:
        m, k = self._group_key(rec)
        g = self.group_map.get(m)
        if g is None:
            g = self.group_map[m] = {}
        bisect.insort(g.setdefault(k, []), rec, key=_scan_order)
        if rec.prio > self.group_top.get(m, -1):
            self.group_top[m] = rec.prio
            self._regroup()

    def _group_remove(self, rec: Rec) -> None:
        m, k = self._group_key(rec)
        g = self.group_map[m]
        g[k].remove(rec)
        if not g[k]:
            del g[k]
        if not g:
            # an empty group would cost a probe per lookup for ever (add/delete churn of
            # odd masks would grow the list without bound)
            del self.group_map[m]
            del self.group_top[m]
        elif rec.prio == self.group_top[m]:
            # only the group's best can change its rank: no O(entries) pass per delete otherwise
            self.group_top[m] = max(recs[0].prio for recs in g.values())
        else:
            return
        self._regroup()

    def _regroup(self) -> None:
        self.groups = sorted(
            ((self.group_top[m], m, g) for m, g in self.group_map.items()), key=lambda x: -x[0]
        )

    def _lookup_scan(self, key: tuple) -> Rec | None:
        for r in self.scan:
            for v, (kind, a, b) in zip(key, r.tests, strict=True):
                if kind == 0:  # value/mask
                    if v & b != a:
                        break
                elif not (a <= v <= b):
                    break
            else:
                return r
        return None

    # ---------------------------------------------------------------- control plane

    def _action(self, name: str, params: dict[str, int], default: bool) -> tuple[int, tuple]:
        aid = self.action_index.get(name)
        if aid is None:
            # accept a unique suffix as the STF runner does; exact names first
            cands = [
                i
                for i, a in enumerate(self.actions)
                if a.name.endswith("." + name) or a.name.split(".")[-1] == name
            ]
            if len(cands) != 1:
                raise NotFound(f"action {name!r} is not an action of table {self.name}")
            aid = cands[0]
        spec = self.actions[aid]
        if default and spec.scope == "TABLE_ONLY":
            raise P4SimError(f"action {spec.name} cannot be the default action of {self.name}")
        if not default and spec.scope == "DEFAULT_ONLY":
            raise P4SimError(f"action {spec.name} can only be the default action of {self.name}")
        args = []
        names = self._param_names[aid]
        for extra in params:
            if extra not in names:
                raise P4SimError(f"action {spec.name} has no parameter {extra!r}")
        for pname, w in spec.params:
            if pname not in params:
                raise P4SimError(f"action {spec.name}: missing parameter {pname!r}")
            v = int(params[pname])
            if v < 0 or v >> w:
                raise P4SimError(
                    f"action {spec.name}: value {v:#x} of {pname!r} does not fit in {w} bits"
                )
            args.append(v)
        return aid, tuple(args)

    def _entry_action(self, entry: TableEntry) -> tuple[int, tuple]:
        """(action index, arguments) of an entry being added or modified; names its action
        in full. The last check of add/modify (indirect tables override it)."""
        aid, args = self._action(entry.action, entry.params, default=False)
        entry.action = self.actions[aid].name
        return aid, args

    def _canon(self, entry: TableEntry) -> tuple[tuple, tuple]:
        """(canonical key for identity, per-key tests for the data path)."""
        match = entry.match
        for kname in match:
            if kname not in self._key_set:
                raise P4SimError(f"table {self.name} has no key field {kname!r}")
        if self._all_exact:
            return self._canon_exact(match)
        canon = []
        tests = []
        for kname, kind, w, full in self._key_specs:
            m = match.get(kname)
            if m is None:
                if kind == "exact":
                    raise P4SimError(f"table {self.name}: exact key {kname!r} needs a value")
                # an omitted key is a wildcard. lpm: a /0 prefix, as BMv2 LPMMatchUnit stores it
                # and as P4Runtime encodes it (spec: "don't care" LPM is an omitted field), so its
                # identity is that of an explicit Lpm(0, 0) and _index finds its prefix length
                canon.append((0, 0) if kind == "lpm" else None)
                tests.append((0, 0, 0) if kind != "range" else (1, 0, full))
                continue
            if kind == "exact":
                if not isinstance(m, Exact):
                    raise P4SimError(f"table {self.name}: key {kname!r} is exact")
                v = m.value
                if v < 0 or v > full:
                    raise P4SimError(
                        f"table {self.name}: value {v:#x} of {kname!r} does not fit in {w} bits"
                    )
                canon.append(v)
                tests.append((0, v, full))
            elif kind == "lpm":
                if isinstance(m, Exact):
                    m = Lpm(m.value, w)
                if not isinstance(m, Lpm):
                    raise P4SimError(f"table {self.name}: key {kname!r} is lpm")
                if not 0 <= m.prefix_len <= w:
                    raise P4SimError(
                        f"table {self.name}: prefix length {m.prefix_len} out of range for {kname!r}"
                    )
                if m.value < 0 or m.value > full:
                    raise P4SimError(
                        f"table {self.name}: value {m.value:#x} of {kname!r} does not fit in {w} bits"
                    )
                mask = _mask(m.prefix_len) << (w - m.prefix_len)
                canon.append((m.value & mask, m.prefix_len))
                tests.append((0, m.value & mask, mask))
            elif kind == "ternary":
                if isinstance(m, Exact):
                    m = Ternary(m.value, full)
                if not isinstance(m, Ternary):
                    raise P4SimError(f"table {self.name}: key {kname!r} is ternary")
                if m.value < 0 or m.value > full or m.mask < 0 or m.mask > full:
                    raise P4SimError(
                        f"table {self.name}: value/mask of {kname!r} do not fit in {w} bits"
                    )
                canon.append((m.value & m.mask, m.mask))
                tests.append((0, m.value & m.mask, m.mask))
            elif kind == "range":
                if isinstance(m, Exact):
                    m = Range(m.value, m.value)
                if not isinstance(m, Range):
                    raise P4SimError(f"table {self.name}: key {kname!r} is range")
                if m.low < 0 or m.high > full or m.low > m.high:
                    raise P4SimError(
                        f"table {self.name}: bad range {m.low}..{m.high} for {kname!r}"
                    )
                canon.append((m.low, m.high))
                tests.append((1, m.low, m.high))
            elif kind == "optional":
                if isinstance(m, Exact):
                    m = Optional_(m.value)
                if not isinstance(m, Optional_):
                    raise P4SimError(f"table {self.name}: key {kname!r} is optional")
                if m.value < 0 or m.value > full:
                    raise P4SimError(
                        f"table {self.name}: value {m.value:#x} of {kname!r} does not fit in {w} bits"
                    )
                canon.append(m.value)
                tests.append((0, m.value, full))
            else:
                raise P4SimError(f"table {self.name}: unknown match kind {kind}")
        key = tuple(canon)
        if self.needs_priority:
            key = key + (entry.priority,)
        return key, tuple(tests)

    def _canon_exact(self, match: dict) -> tuple[tuple, tuple]:
        """_canon for a table of exact keys only (the same checks, the same messages)."""
        canon = []
        tests = []
        for kname, _kind, w, full in self._key_specs:
            m = match.get(kname)
            if m is None:
                raise P4SimError(f"table {self.name}: exact key {kname!r} needs a value")
            if not isinstance(m, Exact):
                raise P4SimError(f"table {self.name}: key {kname!r} is exact")
            v = m.value
            if v < 0 or v > full:
                raise P4SimError(
                    f"table {self.name}: value {v:#x} of {kname!r} does not fit in {w} bits"
                )
            canon.append(v)
            tests.append((0, v, full))
        return tuple(canon), tuple(tests)

    def add(self, entry: TableEntry, *, const: bool = False) -> Rec:
        if self.const_entries and not const:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        if self.mode == "scan" and entry.priority <= 0:
            raise P4SimError(f"table {self.name} needs a priority > 0 for its entries")
        if self.mode != "scan" and entry.priority:
            entry.priority = 0  # priorities are meaningless for exact/lpm tables
        key, tests = self._canon(entry)
        if key in self.recs:
            raise AlreadyExists(f"table {self.name}: entry already exists")
        if len(self.recs) >= self.info.size and not const:
            raise ResourceExhausted(f"table {self.name} is full ({self.info.size} entries)")
        aid, args = self._entry_action(entry)
        return self._commit(entry, key, tests, aid, args, entry.priority)

    def _commit(
        self, entry: TableEntry | None, key: tuple, tests: tuple, aid: int, args: tuple, prio: int
    ) -> Rec:
        """Store a checked entry: a handle, the insertion order, the indexes."""
        self.seq += 1
        if self.free_handles:
            hnd = heapq.heappop(self.free_handles)
        else:
            hnd = self.next_handle
            self.next_handle += 1
        rec = self.recs[key] = Rec(entry, aid, args, prio, tests, key, self.seq, hnd)
        self._index(rec)
        return rec

    # The pre-checked entry points. The caller guarantees what `_canon` and `_entry_action`
    # would check: `key`/`tests` are what `_canon` returns for the entry (every key field
    # given, values in range; the priority, > 0, last in `key` when `needs_priority`), and
    # `aid`/`args` what `_entry_action` returns (an action of this table allowed in an
    # entry, every argument in range). Only this table's state is checked here, in `add`'s
    # order and with its messages. Never for an IndirectTable (its actions are targets).

    def insert_checked(self, key: tuple, tests: tuple, aid: int, args: tuple, prio: int = 0) -> Rec:
        """`add` of a pre-checked entry; its TableEntry is built when first read (`entry_of`)."""
        if self.const_entries:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        recs = self.recs
        if key in recs:
            raise AlreadyExists(f"table {self.name}: entry already exists")
        if len(recs) >= self.info.size:
            raise ResourceExhausted(f"table {self.name} is full ({self.info.size} entries)")
        return self._commit(None, key, tests, aid, args, prio)

    def insert_exact1_checked(self, v: int, aid: int, args: tuple) -> None:
        """`insert_checked` for a table of one exact key (an L2 table: the bulk of a batch),
        with the same checks and the same state, in fewer steps."""
        if self.const_entries:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        key = (v,)
        recs = self.recs
        if key in recs:
            raise AlreadyExists(f"table {self.name}: entry already exists")
        if len(recs) >= self.info.size:
            raise ResourceExhausted(f"table {self.name} is full ({self.info.size} entries)")
        self.seq += 1
        if self.free_handles:
            hnd = heapq.heappop(self.free_handles)
        else:
            hnd = self.next_handle
            self.next_handle += 1
        recs[key] = self.exact1[v] = Rec(
            None, aid, args, 0, ((0, v, self._pack_full[0]),), key, self.seq, hnd
        )

    # Whole runs of pre-checked single-exact-key updates (a Write batch of one layout). Each
    # either does nothing and returns False, when one update of the run would fail (the
    # caller then makes them one by one, each with its own error), or leaves exactly the
    # state the same updates one by one through the entry points above leave, and returns
    # True: with no failure the one-by-one results are known (no state check can differ).

    def insert_exact1_many(self, vs: list[int], aid: int, args: list[tuple]) -> bool:
        """`insert_exact1_checked` of every (vs[j], aid, args[j]), in order."""
        n = len(vs)
        exact1 = self.exact1
        if (
            self.const_entries
            or len(self.recs) + n > self.info.size
            or len(set(vs)) != n
            or not exact1.keys().isdisjoint(vs)
        ):
            return False
        seq = self.seq
        self.seq = seq + n
        free = self.free_handles
        # one by one pops the lowest free handle each time, then takes new ones: the n lowest,
        # in order (one sort in C, not n heap pops); the rest, sorted, is still a heap
        taken: list[int] = []
        if free:
            ordered = sorted(free)
            taken = ordered[:n]
            free[:] = ordered[n:]
        first = self.next_handle
        self.next_handle = first + n - len(taken)
        hnds = (
            taken + list(range(first, self.next_handle))
            if taken
            else range(first, self.next_handle)
        )
        full = self._pack_full[0]
        recs = []
        add, new = recs.append, object.__new__
        for j, (v, a, h) in enumerate(zip(vs, args, hnds, strict=True), seq + 1):
            # Rec(None, aid, a, 0, ((0, v, full),), (v,), j, h) without the __init__ call
            # (0.08 us of 0.43 here): every field of Rec (test_p4rt_fastwrite checks them all)
            r = new(PyRec)  # (the reference class: with the compiled path this is not called)
            r.entry, r.aid, r.args, r.pkts, r.bytes, r.meter = None, aid, a, 0, 0, None
            r.prio, r.seq, r.hnd, r.tests, r.mkey = 0, j, h, ((0, v, full),), (v,)
            add(r)
        self.recs.update(zip([r.mkey for r in recs], recs, strict=True))
        exact1.update(zip(vs, recs, strict=True))
        return True

    def modify_exact1_many(self, vs: list[int], aid: int, args: list[tuple]) -> bool:
        """`modify_checked` of every ((vs[j],), aid, args[j]), in order."""
        exact1 = self.exact1
        if self.const_entries or not exact1.keys() >= set(vs):
            return False
        set_action = self._set_action
        for v, a in zip(vs, args, strict=True):
            set_action(exact1[v], aid, a)
        return True

    def delete_exact1_many(self, vs: list[int]) -> bool:
        """`delete_checked((v,))` of every v of `vs`, in order."""
        exact1 = self.exact1
        distinct = set(vs)
        if self.const_entries or len(distinct) != len(vs) or not exact1.keys() >= distinct:
            return False
        recs, pop1, free, push = self.recs, exact1.pop, self.free_handles, heapq.heappush
        for v in vs:
            rec = pop1(v)
            del recs[rec.mkey]
            push(free, rec.hnd)
        return True

    def modify_checked(self, key: tuple, aid: int, args: tuple) -> None:
        """`modify` of a pre-checked entry."""
        if self.const_entries:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        rec = self.recs.get(key)
        if rec is None:
            raise NotFound(f"table {self.name}: no such entry")
        self._set_action(rec, aid, args)

    def _set_action(self, rec: Rec, aid: int, args: tuple) -> None:
        rec.aid, rec.args = aid, args
        e = rec.entry
        if e is not None:  # else entry_of builds it from aid/args when it is read
            spec = self.actions[aid]
            e.action = spec.name
            e.params = {p: v for (p, _), v in zip(spec.params, args, strict=True)}

    def delete_checked(self, key: tuple) -> None:
        """`delete` of a pre-checked entry."""
        if self.const_entries:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        rec = self.recs.pop(key, None)
        if rec is None:
            raise NotFound(f"table {self.name}: no such entry")
        self._unindex(rec)
        heapq.heappush(self.free_handles, rec.hnd)

    def entry_of(self, rec: Rec) -> TableEntry:
        """The TableEntry of an installed entry. One stored by a pre-checked insert is built
        here once, as `add` would have stored it: every key field by name in key order
        (exact: Exact; lpm: Lpm of the masked value; ternary: Ternary of the masked value;
        optional: Optional_), the action's full name, the arguments by name in order."""
        e = rec.entry
        if e is None:
            match: dict = {}
            for name, kind, c in zip(
                self.key_names, self.kinds, rec.mkey, strict=False
            ):  # mkey may end in the priority
                if kind == "exact":
                    match[name] = Exact(c)
                elif kind == "lpm":
                    match[name] = Lpm(c[0], c[1])
                elif kind == "ternary":
                    match[name] = Ternary(c[0], c[1])
                elif kind == "optional":
                    match[name] = Optional_(c)
                else:  # ranges never take the pre-checked path
                    raise AssertionError(f"table {self.name}: no pre-checked {kind} key")
            spec = self.actions[rec.aid]
            params = {p: v for (p, _), v in zip(spec.params, rec.args, strict=True)}
            e = rec.entry = TableEntry(self.name, match, spec.name, params, rec.prio)
        return e

    def _index(self, rec: Rec) -> None:
        if self.mode == "exact":
            # the canonical key is the tuple of values (no priority: needs_priority is False), so
            # `exact` (which is `recs`) has it already
            if len(rec.tests) == 1:
                self.exact1[rec.tests[0][1]] = rec
        elif self.mode == "lpm":
            plen = rec.mkey[self.lpm_pos][1]
            k = tuple(t[1] for t in rec.tests)
            if plen not in self.lpm:
                self.lpm[plen] = {}
                self.lpm_lens = sorted(self.lpm, reverse=True)
            self.lpm[plen][k] = rec
            if len(self.kinds) == 1:
                d = self.lpm1d.get(plen)
                if d is None:
                    if plen == self.widths[0]:
                        d = _FullLength()
                        d.miss = type(self).lookup1.__get__(self)
                    else:
                        d = {}
                    self.lpm1d[plen] = d
                    d[k[0]] = rec
                    self._rebuild_lpm1()
                else:
                    d[k[0]] = rec
                if plen >= self.lpm1_split:
                    self._lpm1_count(plen, k[0], 1)
                self._bind_lookup1()
        else:
            # higher priority first; among equals the lower handle (BMv2 EntryList order)
            bisect.insort(self.scan, rec, key=_scan_order)
            if self.lookup == self._lookup_masks:
                self._group_add(rec)

    def _unindex(self, rec: Rec) -> None:
        if self.mode == "exact":
            # (`exact` is `recs`: the caller has removed it)
            if len(rec.tests) == 1:
                del self.exact1[rec.tests[0][1]]
        elif self.mode == "lpm":
            plen = rec.mkey[self.lpm_pos][1]
            del self.lpm[plen][tuple(t[1] for t in rec.tests)]
            if not self.lpm[plen]:
                del self.lpm[plen]
                self.lpm_lens = sorted(self.lpm, reverse=True)
            if len(self.kinds) == 1:
                d = self.lpm1d[plen]
                del d[rec.tests[0][1]]
                if plen >= self.lpm1_split:
                    self._lpm1_count(plen, rec.tests[0][1], -1)
                if not d:
                    del self.lpm1d[plen]
                    self._rebuild_lpm1()
                self._bind_lookup1()
        else:
            # (priority, handle) is unique among live entries: bisect finds it, no O(n) compare
            i = bisect.bisect_left(self.scan, _scan_order(rec), key=_scan_order)
            assert self.scan[i] is rec
            del self.scan[i]
            if self.lookup == self._lookup_masks:
                self._group_remove(rec)

    def find(self, entry: TableEntry) -> Rec:
        key, _ = self._canon(entry)
        rec = self.recs.get(key)
        if rec is None:
            raise NotFound(f"table {self.name}: no such entry")
        return rec

    def modify(self, entry: TableEntry) -> None:
        if self.const_entries:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        rec = self.find(entry)
        rec.aid, rec.args = self._entry_action(entry)
        stored = self.entry_of(rec)
        stored.action = entry.action
        stored.params = dict(entry.params)

    def delete(self, entry: TableEntry) -> None:
        if self.const_entries:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        rec = self.find(entry)
        del self.recs[rec.mkey]
        self._unindex(rec)
        heapq.heappush(self.free_handles, rec.hnd)

    def clear(self) -> None:
        if self.const_entries:
            raise P4SimError(f"table {self.name} has const entries: it is read-only")
        self.recs.clear()
        self.next_handle = 0
        self.free_handles.clear()
        self.exact.clear()
        self.exact1.clear()
        self.lpm.clear()
        self.lpm_lens = []
        self.lpm1 = []
        self.lpm1_long.clear()
        self.lpm1_cnt.clear()
        self.lpm1d.clear()
        self.__dict__.pop("lookup1", None)
        self.scan.clear()
        self.group_map.clear()
        self.group_top.clear()
        self.groups = []

    def set_default(self, action: str, params: dict[str, int], *, force: bool = False) -> None:
        if self.info.const_default_action and not force:
            raise P4SimError(f"table {self.name} has a const default action")
        aid, args = self._action(action, params, default=True)
        self.default = Rec(None, aid, args)

    def reset_default(self) -> None:
        self.default = self.initial_default

    def default_action(self) -> tuple[str, dict[str, int]]:
        spec = self.actions[self.default.aid]
        return spec.name, {p: v for (p, _), v in zip(spec.params, self.default.args, strict=True)}

    def entries(self) -> list[TableEntry]:
        out = []
        entry_of = self.entry_of
        for rec in sorted(self.recs.values(), key=lambda r: r.seq):
            e = entry_of(rec)
            e.counter_packets = rec.pkts
            e.counter_bytes = rec.bytes
            out.append(e)
        return out


# The compiled write path (p4sim/runtime/compiled_write.py: the profile), chosen here, once, before any Table exists: every module that builds a Rec (this one,
# action_profile.py) takes the class from here, so a process has Recs of one class only.
COMPILED = compiled_write.load()
# the reference bulk loops, kept for the differential tests when the compiled ones replace them
py_insert_exact1_many, py_delete_exact1_many = Table.insert_exact1_many, Table.delete_exact1_many
if COMPILED is not None:
    assert tuple(COMPILED.FIELDS) == REC_FIELDS
    Rec = COMPILED.Rec  # type: ignore[misc]
    Table.insert_exact1_many = COMPILED.insert_exact1_many  # type: ignore[method-assign]
    Table.delete_exact1_many = COMPILED.delete_exact1_many  # type: ignore[method-assign]
