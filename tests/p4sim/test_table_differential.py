"""The indexed table lookups (exact dict, lpm per prefix length, tuple space search over
mask tuples, priority scan) against a plain reference written from the match-kind
definitions: random entries, random keys (half of them built to hit), adds, deletes,
re-adds and clears interleaved, so a faster lookup cannot be a wrong one.

Equal priorities: BMv2 keeps the first match in handle order and hands out the lowest
free handle (bm_sim/lookup_structures.cpp EntryList::lookup, bm_sim/handle_mgr.h
HandleMgr::get_handle); the reference models handles on its own, as a set.
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
from p4sim.runtime.tables import ActionSpec, Table


def _table(kinds: list[str], widths: list[int]) -> Table:
    info = TableInfo(name="c.t", size=1 << 20,
                     keys=tuple(KeyField(f"k{i}", k, w, i + 1)
                                for i, (k, w) in enumerate(zip(kinds, widths, strict=True))))
    t = Table(info, [ActionSpec("c.a", (("v", 16),)), ActionSpec("NoAction", ())])
    t.set_default("NoAction", {})
    return t


class Reference:
    """Every live entry in a list; a lookup tests each one from its match objects."""

    def __init__(self, kinds: list[str], widths: list[int]):
        self.kinds, self.widths = kinds, widths
        self.live: list[tuple[TableEntry, int]] = []  # (entry, handle)

    def add(self, e: TableEntry) -> None:
        used = {h for _, h in self.live}
        self.live.append((e, min(set(range(len(used) + 1)) - used)))

    def delete(self, e: TableEntry) -> None:
        self.live = [(x, h) for x, h in self.live if x is not e]

    def matches(self, e: TableEntry, key: tuple) -> bool:
        for i, (kind, w) in enumerate(zip(self.kinds, self.widths, strict=True)):
            m, k = e.match.get(f"k{i}"), key[i]
            if m is None:
                continue  # a wildcard (ternary/lpm/range/optional left out)
            if kind == "exact" and k != m.value:
                return False
            if kind == "optional" and k != m.value:
                return False
            if kind == "lpm" and m.prefix_len and k >> (w - m.prefix_len) != m.value >> (w - m.prefix_len):
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


def _match(kinds, widths, rng: random.Random, acl: bool) -> dict:
    out = {}
    for i, (kind, w) in enumerate(zip(kinds, widths, strict=True)):
        v = rng.getrandbits(w)
        if kind == "exact":
            out[f"k{i}"] = Exact(rng.getrandbits(3) if not acl else v)  # small space: collisions
        elif kind == "lpm":
            plen = rng.choice([0, 1, w // 2, w - 3, w])
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


@pytest.mark.parametrize("case", sorted(CASES))
def test_indexed_lookup_equals_reference(case):
    kinds, widths = CASES[case]
    rng = random.Random(case)
    t, ref = _table(kinds, widths), Reference(kinds, widths)
    exact_or_lpm = set(kinds) <= {"exact", "lpm"}
    acl = case == "acl5" or case.startswith("exact")
    live: list[TableEntry] = []
    hits = 0
    for step in range(800):
        r = rng.random()
        if r < 0.55 or not live:
            e = TableEntry("c.t", _match(kinds, widths, rng, acl), "c.a", {"v": step % 65536},
                           priority=0 if exact_or_lpm else rng.randint(1, 4))  # few priorities: ties
            try:
                t.add(e)
            except AlreadyExists:
                continue
            ref.add(e)
            live.append(e)
        elif r < 0.75:
            e = live.pop(rng.randrange(len(live)))
            t.delete(e)
            ref.delete(e)
        elif step == 400:
            t.clear()
            ref.live.clear()
            live.clear()
        else:
            for _ in range(10):
                key = _key_near(rng.choice(live) if rng.random() < 0.6 else None, kinds, widths, rng)
                want = ref.lookup(key)
                hits += want is not None
                assert _lookup(t, key) is want, (case, key)
    assert hits > 200  # the keys did exercise matches, not only misses


def test_equal_priority_goes_to_the_lowest_handle_and_handles_are_reused():
    t = _table(["ternary"], [8])
    a, b, c = (TableEntry("c.t", {"k0": Ternary(0x10, m)}, "c.a", {"v": i}, priority=5)
               for i, m in enumerate((0xF0, 0xFF, 0xF8)))
    t.add(a)  # handle 0
    t.add(b)  # handle 1
    assert t.lookup((0x10,)).entry is a
    t.delete(a)
    assert t.lookup((0x10,)).entry is b
    t.add(c)  # reuses handle 0: BMv2 now prefers c over the older b
    assert t.lookup((0x10,)).entry is c
    t.add(TableEntry("c.t", {"k0": Ternary(0, 0)}, "c.a", {"v": 9}, priority=6))
    assert t.lookup((0x10,)).entry.params == {"v": 9}  # a higher priority still wins over handles
