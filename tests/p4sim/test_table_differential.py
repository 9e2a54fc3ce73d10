"""The indexed table lookups (exact dict, lpm per prefix length, tuple space search over
mask tuples, priority scan) against a plain reference written from the match-kind
definitions: random entries, random keys (half of them built to hit), adds, modifies,
deletes, re-adds, default-action changes and clears interleaved, so a faster lookup cannot
be a wrong one. After every change the index structures are rebuilt from the live entries
and compared with the table's (no empty mask group, no stale group best, no stale prefix
length list). Planted bugs (a lookup that ignores priority ties, a delete that keeps an
empty mask group, ...) must make the same run fail: the check can fail.

Priorities: P4Runtime's higher number wins; BMv2 inverts it on the way in (PI
targets/bm/pi_tables_imp.cpp PriorityInverter::pi_to_bm, BM_MAX_PRIORITY - p) and keeps the
entry with the smallest internal priority, the first in handle order among equals
(bm_sim/lookup_structures.cpp EntryList::lookup skips `entry->priority >= min_priority`), with
the lowest free handle handed out (bm_sim/handle_mgr.h HandleMgr::get_handle). So: higher
P4Runtime priority wins, ties go to the lowest handle. The reference models handles on its
own, as a set.
"""

from __future__ import annotations

import random

import pytest

from p4sim.model import (
    AlreadyExists,
    Exact,
    KeyField,
    Lpm,
    Optional_,
    Range,
    TableEntry,
    TableInfo,
    Ternary,
)
from p4sim.runtime import tables
from p4sim.runtime.tables import ActionSpec, Table


def _table(kinds: list[str], widths: list[int], cls: type[Table] = Table) -> Table:
    info = TableInfo(
        name="c.t",
        size=1 << 20,
        keys=tuple(
            KeyField(f"k{i}", k, w, i + 1)
            for i, (k, w) in enumerate(zip(kinds, widths, strict=True))
        ),
    )
    t = cls(info, [ActionSpec("c.a", (("v", 16),)), ActionSpec("NoAction", ())])
    t.set_default("NoAction", {})
    return t


class Reference:
    """Every live entry in a list; a lookup tests each one from its match objects."""

    def __init__(self, kinds: list[str], widths: list[int]):
        self.kinds, self.widths = kinds, widths
        self.live: list[tuple[TableEntry, int]] = []  # (entry, handle)
        self.params = {}

    def add(self, e: TableEntry) -> None:
        used = {h for _, h in self.live}
        self.live.append((e, min(set(range(len(used) + 1)) - used)))

    def delete(self, e: TableEntry) -> None:
        self.live = [(x, h) for x, h in self.live if x is not e]
        self.params.pop(id(e), None)

    params: dict[int, dict]  # id(entry) -> its parameters after the last modify

    def modify(self, e: TableEntry, params: dict) -> None:
        self.params[id(e)] = dict(params)

    def params_of(self, e: TableEntry) -> dict:
        return self.params.get(id(e), e.params)

    def matches(self, e: TableEntry, key: tuple) -> bool:
        for i, (kind, w) in enumerate(zip(self.kinds, self.widths, strict=True)):
            m, k = e.match.get(f"k{i}"), key[i]
            if m is None:
                continue  # a wildcard (ternary/lpm/range/optional left out)
            if kind == "exact" and k != m.value:
                return False
            if kind == "optional" and k != m.value:
                return False
            if (
                kind == "lpm"
                and m.prefix_len
                and k >> (w - m.prefix_len) != m.value >> (w - m.prefix_len)
            ):
                return False
            if kind == "ternary" and k & m.mask != m.value & m.mask:
                return False
            if kind == "range" and not m.low <= k <= m.high:
                return False
        return True

    def lookup(self, key: tuple) -> TableEntry | None:
        hits = [(e, h) for e, h in self.live if self.matches(e, key)]
        if not hits:
            return None
        if "lpm" in self.kinds and set(self.kinds) <= {"exact", "lpm"}:
            pos = self.kinds.index("lpm")
            return max(hits, key=lambda x: x[0].match[f"k{pos}"].prefix_len)[0]
        return min(hits, key=lambda x: (-x[0].priority, x[1]))[0]


def _match(kinds, widths, rng: random.Random, acl: bool, hosts: bool = False) -> dict:
    out = {}
    for i, (kind, w) in enumerate(zip(kinds, widths, strict=True)):
        v = rng.getrandbits(w)
        if kind == "exact":
            out[f"k{i}"] = Exact(rng.getrandbits(3) if not acl else v)  # small space: collisions
        elif kind == "lpm":
            # hosts: mostly full-length prefixes (host routes), some shorter ones under them
            plen = w if hosts and rng.random() < 0.7 else rng.choice([0, 1, w // 2, w - 3, w])
            if hosts:
                v = (v & 0x0000FFFF) | 0x0A0B0000  # one /16: the short prefixes cover the hosts
            out[f"k{i}"] = Lpm(v & (((1 << plen) - 1) << (w - plen)), plen)
        elif kind == "ternary":
            # ACL-like: a prefix mask, an exact value, or a wildcard (sometimes omitted)
            r = rng.random()
            if r < 0.2:
                continue
            full = (1 << w) - 1
            mask = full if r < 0.5 else full ^ ((1 << rng.choice([1, 4, w // 2])) - 1)  # prefix
            out[f"k{i}"] = Ternary(v & mask, mask)
        elif kind == "range":
            if rng.random() < 0.2:
                continue
            lo = rng.getrandbits(w)
            out[f"k{i}"] = Range(lo, min((1 << w) - 1, lo + rng.getrandbits(w - 2)))
        elif kind == "optional":
            if rng.random() < 0.4:
                continue
            out[f"k{i}"] = Optional_(rng.getrandbits(2))
    return out


def _key_near(e: TableEntry | None, kinds, widths, rng: random.Random) -> tuple:
    key = []
    for i, (kind, w) in enumerate(zip(kinds, widths, strict=True)):
        k = rng.getrandbits(w) if kind != "optional" and kind != "exact" else rng.getrandbits(3)
        m = e.match.get(f"k{i}") if e is not None else None
        if m is not None:
            if kind in ("exact", "optional"):
                k = m.value
            elif kind == "lpm":
                keep = ((1 << m.prefix_len) - 1) << (w - m.prefix_len)
                k = m.value | (k & ~keep & ((1 << w) - 1))
            elif kind == "ternary":
                k = m.value | (k & ~m.mask & ((1 << w) - 1))
            elif kind == "range":
                k = rng.randint(m.low, m.high)
        key.append(k)
    return tuple(key)


CASES = {
    "exact1": (["exact"], [16]),
    "exact2": (["exact", "exact"], [16, 8]),
    "lpm1": (["lpm"], [32]),
    "lpm1 host routes": (["lpm"], [32]),
    "exact+lpm": (["exact", "lpm"], [8, 32]),
    "acl5": (["ternary", "ternary", "ternary", "ternary", "ternary"], [32, 32, 8, 16, 16]),
    "lpm+ternary+optional": (["lpm", "ternary", "optional"], [32, 16, 8]),
    "ternary+range+optional": (["ternary", "range", "optional"], [16, 16, 8]),
}


def _lookup(t: Table, key: tuple):
    """What the generated code calls for this table's key shape (codegen table_apply)."""
    kinds = set(t.kinds)
    if len(key) == 1 and kinds == {"exact"}:
        r = t.exact1_get(key[0])
        assert r is t.exact_get(key)
    elif kinds == {"exact"}:
        r = t.exact_get(key)
    elif len(key) == 1 and kinds == {"lpm"}:
        r = t.lookup1(key[0])
        assert r is t.lookup(key)
    else:
        r = t.lookup(key)
    return None if r is None else r.entry


def check_structure(t: Table) -> None:
    """Rebuild every index from the live entries (t.recs) and compare with the table's."""
    recs = list(t.recs.values())
    assert all(t.recs[r.mkey] is r for r in recs)
    hnds = [r.hnd for r in recs]
    assert len(set(hnds)) == len(hnds), "two live entries share a handle"
    assert set(hnds) | set(t.free_handles) == set(range(t.next_handle))
    assert not set(hnds) & set(t.free_handles)
    if t.mode == "exact":
        assert t.exact == {r.mkey: r for r in recs}
        assert t.exact_get.__self__ is t.exact  # the data path probes the live index
        if len(t.kinds) == 1:
            assert t.exact1 == {r.tests[0][1]: r for r in recs}
        return
    if t.mode == "lpm":
        want: dict[int, dict] = {}
        for r in recs:
            want.setdefault(r.mkey[t.lpm_pos][1], {})[tuple(x[1] for x in r.tests)] = r
        assert t.lpm == want
        assert t.lpm_lens == sorted(want, reverse=True)
        if len(t.kinds) == 1:
            assert t.lpm1d == {p: {k[0]: r for k, r in d.items()} for p, d in want.items()}
            w = t.widths[0]
            assert [(m, id(d)) for m, d in t.lpm1] == [
                (((1 << p) - 1) << (w - p), id(t.lpm1d[p]))
                for p in sorted(want, reverse=True)
                if p < t.lpm1_split
            ]
            tops: dict[int, set] = {}
            for p, d in want.items():
                if p >= t.lpm1_split:
                    for k in d:
                        tops.setdefault(k[0] >> t.lpm1_shift, set()).add(p)
            assert {top: set(c) for top, c in t.lpm1_cnt.items()} == tops
            full = t.lpm1d.get(w)
            if full is not None and 2 * len(full) >= len(recs):  # host routes first, in one probe
                assert (
                    t.lookup1 == full.__getitem__
                    and type(full).__missing__ is tables._FullLength.__missing__
                )
            else:
                assert t.lookup1 == Table.lookup1.__get__(t)
            assert {top: [(m, id(d)) for m, d in lst] for top, lst in t.lpm1_long.items()} == {
                top: [(((1 << p) - 1) << (w - p), id(t.lpm1d[p])) for p in sorted(ps, reverse=True)]
                for top, ps in tops.items()
            }
        return
    order = sorted(recs, key=lambda r: (-r.prio, r.hnd))
    assert t.scan == order
    if t.lookup != t._lookup_masks:
        return
    groups: dict[int, dict[int, list]] = {}
    for r in order:  # best first, so each bucket's list is best first
        m, k = t._group_key(r)
        groups.setdefault(m, {}).setdefault(k, []).append(r)
    assert t.group_map == groups, "mask groups differ from the live entries (an empty group kept?)"
    assert t.group_top == {m: max(r.prio for b in g.values() for r in b) for m, g in groups.items()}
    tops = [top for top, _, _ in t.groups]
    assert tops == sorted(tops, reverse=True), "groups are not probed best first"
    assert {(top, m) for top, m, _ in t.groups} == {(t.group_top[m], m) for m in groups}
    assert len(t.groups) == len(groups)
    assert all(d is t.group_map[m] for _, m, d in t.groups)


def run_differential(case: str, cls: type[Table] = Table, steps: int = 800) -> None:
    """Random adds/modifies/deletes/clears/default changes; every lookup against the reference."""
    kinds, widths = CASES[case]
    rng = random.Random(case)
    t, ref = _table(kinds, widths, cls), Reference(kinds, widths)
    exact_or_lpm = set(kinds) <= {"exact", "lpm"}
    acl = case == "acl5" or case.startswith("exact")
    live: list[TableEntry] = []
    hits = modified_hits = 0
    default = ("NoAction", {})
    for step in range(steps):
        r = rng.random()
        if r < 0.5 or not live:
            e = TableEntry(
                "c.t",
                _match(kinds, widths, rng, acl, hosts="host" in case),
                "c.a",
                {"v": step % 65536},
                priority=0 if exact_or_lpm else rng.randint(1, 4),
            )  # few priorities: ties
            try:
                t.add(e)
            except AlreadyExists:
                continue
            ref.add(e)
            live.append(e)
        elif r < 0.6:
            e = rng.choice(live)
            params = {"v": rng.getrandbits(16)}
            # a fresh entry object with the same match and priority: found by its key
            t.modify(TableEntry("c.t", dict(e.match), "c.a", params, priority=e.priority))
            ref.modify(e, params)
        elif r < 0.75:
            e = live.pop(rng.randrange(len(live)))
            t.delete(TableEntry("c.t", dict(e.match), "c.a", {}, priority=e.priority))
            ref.delete(e)
        elif r < 0.77:
            default = ("c.a", {"v": step}) if rng.random() < 0.5 else ("NoAction", {})
            t.set_default(*default)
        elif step == 400:
            t.clear()
            ref.live.clear()
            ref.params.clear()
            live.clear()
        else:
            for _ in range(10):
                key = _key_near(
                    rng.choice(live) if rng.random() < 0.6 else None, kinds, widths, rng
                )
                want = ref.lookup(key)
                hits += want is not None
                got = _lookup(t, key)
                assert got is want, (case, key)
                if want is not None:
                    rec = t.recs[next(k for k, x in t.recs.items() if x.entry is got)]
                    assert rec.args == (ref.params_of(want)["v"],), (
                        "a modify did not reach the data path"
                    )
                    modified_hits += id(want) in ref.params
                else:
                    assert t.default_action() == (
                        t.actions[t.action_index[default[0]]].name,
                        default[1],
                    )
            continue
        check_structure(t)
    assert hits > 200  # the keys did exercise matches, not only misses
    assert modified_hits > 10  # and modified entries among them


@pytest.mark.parametrize("case", sorted(CASES))
def test_indexed_lookup_equals_reference(case):
    run_differential(case)


# ---------------------------------------------------------------- planted bugs


class TiesToFirstGroup(Table):
    """Equal priorities in two mask groups: the first group probed wins, not the lower handle."""

    def _lookup_masks(self, key):
        v = self._pack(key)
        best = None
        for top, m, d in self.groups:
            if best is not None and top < best.prio:
                break
            recs = d.get(v & m)
            if recs and (best is None or recs[0].prio > best.prio):
                best = recs[0]
        return best


class KeepsEmptyGroups(Table):
    """A delete that leaves an emptied mask group in place."""

    def _group_remove(self, rec):
        m, k = self._group_key(rec)
        g = self.group_map[m]
        g[k].remove(rec)
        if not g[k]:
            del g[k]
        if g:
            self.group_top[m] = max(recs[0].prio for recs in g.values())
        self._regroup()


class StaleGroupTop(Table):
    """An add that does not raise its group's best priority (the early exit then stops too soon)."""

    def _group_add(self, rec):
        m, k = self._group_key(rec)
        g = self.group_map.setdefault(m, {})
        import bisect

        bisect.insort(g.setdefault(k, []), rec, key=tables._scan_order)
        if m not in self.group_top:
            self.group_top[m] = rec.prio
            self._regroup()


class ForgetsShortLengths(Table):
    """Single-key lpm: a new short prefix length is never added to the probe list."""

    def _rebuild_lpm1(self):
        if not self.lpm1:
            super()._rebuild_lpm1()


class HostMissEndsTheSearch(Table):
    """Single-key lpm with host routes probed first: a key no host route matches misses,
    whatever shorter prefix covers it."""

    def _bind_lookup1(self):
        super()._bind_lookup1()
        d = self.lpm1d.get(self.widths[0])
        if d is not None:
            d.miss = lambda v: None


class ModifyKeepsOldArgs(Table):
    """A modify that updates the entry read back but not what the data path uses."""

    def modify(self, entry):
        rec = self.find(entry)
        assert rec.entry is not None
        rec.entry.params = dict(entry.params)


class DeleteKeepsExact1(Table):
    """A delete that forgets the single-key exact index."""

    def _unindex(self, rec):
        if self.mode != "exact":  # exact mode: `exact` is `recs`, so only exact1 is left to undo
            super()._unindex(rec)


@pytest.mark.parametrize(
    "cls, case",
    [
        (TiesToFirstGroup, "acl5"),
        (KeepsEmptyGroups, "acl5"),
        (KeepsEmptyGroups, "lpm+ternary+optional"),
        (StaleGroupTop, "acl5"),
        (ForgetsShortLengths, "lpm1"),
        (HostMissEndsTheSearch, "lpm1 host routes"),
        (ModifyKeepsOldArgs, "exact2"),
        (ModifyKeepsOldArgs, "ternary+range+optional"),
        (DeleteKeepsExact1, "exact1"),
    ],
)
def test_a_planted_bug_fails_the_differential_run(cls, case):
    with pytest.raises(AssertionError):
        run_differential(case, cls)


def test_equal_priority_goes_to_the_lowest_handle_and_handles_are_reused():
    t = _table(["ternary"], [8])
    a, b, c = (
        TableEntry("c.t", {"k0": Ternary(0x10, m)}, "c.a", {"v": i}, priority=5)
        for i, m in enumerate((0xF0, 0xFF, 0xF8))
    )
    t.add(a)  # handle 0
    t.add(b)  # handle 1
    assert t.lookup((0x10,)).entry is a
    t.delete(a)
    assert t.lookup((0x10,)).entry is b
    t.add(c)  # reuses handle 0: BMv2 now prefers c over the older b
    assert t.lookup((0x10,)).entry is c
    t.add(TableEntry("c.t", {"k0": Ternary(0, 0)}, "c.a", {"v": 9}, priority=6))
    assert t.lookup((0x10,)).entry.params == {"v": 9}  # a higher priority still wins over handles
