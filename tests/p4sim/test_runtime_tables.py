"""Table semantics: exact, lpm, ternary priorities, range, optional, defaults, const entries."""

from __future__ import annotations

import pytest

from p4sim.model import (
    AlreadyExists,
    Exact,
    KeyField,
    Lpm,
    NotFound,
    Optional_,
    P4SimError,
    Range,
    TableEntry,
    TableInfo,
    Ternary,
)
from p4sim.runtime.switch import Switch
from p4sim.runtime.tables import ActionSpec, Table
from tests.p4sim.p4sim_helpers import data_of, frame, program


def table(kinds, widths=None):
    widths = widths or [8] * len(kinds)
    info = TableInfo(
        name="c.t",
        keys=tuple(
            KeyField(f"k{i}", k, w, i + 1)
            for i, (k, w) in enumerate(zip(kinds, widths, strict=False))
        ),
    )
    t = Table(info, [ActionSpec("c.a", (("v", 8),)), ActionSpec("NoAction", ())])
    t.set_default("NoAction", {})
    return t


def add(t, match, v, prio=0):
    t.add(TableEntry("c.t", match, "c.a", {"v": v}, priority=prio))


def test_exact_lookup_and_duplicates():
    t = table(["exact", "exact"])
    add(t, {"k0": Exact(1), "k1": Exact(2)}, 7)
    assert t.lookup((1, 2)).args == (7,)
    assert t.lookup((2, 1)) is None
    with pytest.raises(AlreadyExists):
        add(t, {"k0": Exact(1), "k1": Exact(2)}, 8)
    with pytest.raises(P4SimError):
        add(t, {"k0": Exact(256), "k1": Exact(2)}, 8)
    t.delete(TableEntry("c.t", {"k0": Exact(1), "k1": Exact(2)}, "c.a"))
    assert t.lookup((1, 2)) is None
    with pytest.raises(NotFound):
        t.delete(TableEntry("c.t", {"k0": Exact(1), "k1": Exact(2)}, "c.a"))


def test_lpm_longest_prefix_wins():
    t = table(["lpm"], [32])
    add(t, {"k0": Lpm(0x0A000000, 8)}, 1)
    add(t, {"k0": Lpm(0x0A010000, 16)}, 2)
    add(t, {"k0": Lpm(0, 0)}, 3)
    assert t.lookup((0x0A010203,)).args == (2,)
    assert t.lookup((0x0A020203,)).args == (1,)
    assert t.lookup((0x0B000000,)).args == (3,)


def test_ternary_highest_priority_wins_and_needs_priority():
    t = table(["ternary"])
    add(t, {"k0": Ternary(0x10, 0xF0)}, 1, prio=10)
    add(t, {"k0": Ternary(0x12, 0xFF)}, 2, prio=20)
    assert t.lookup((0x12,)).args == (2,)
    assert t.lookup((0x13,)).args == (1,)
    with pytest.raises(P4SimError):
        add(t, {"k0": Ternary(1, 1)}, 3, prio=0)


def test_range_optional_and_wildcards():
    t = table(["range", "optional"])
    add(t, {"k0": Range(10, 20)}, 1, prio=1)  # optional key omitted: wildcard
    add(t, {"k0": Range(15, 15), "k1": Optional_(3)}, 2, prio=5)
    assert t.lookup((15, 3)).args == (2,)
    assert t.lookup((15, 4)).args == (1,)
    assert t.lookup((21, 3)) is None


def test_action_param_checks():
    t = table(["exact"])
    with pytest.raises(P4SimError):
        t.add(TableEntry("c.t", {"k0": Exact(1)}, "c.a", {}))
    with pytest.raises(NotFound):
        t.add(TableEntry("c.t", {"k0": Exact(1)}, "c.nosuch", {}))
    with pytest.raises(P4SimError):
        t.add(TableEntry("c.t", {"k0": Exact(1)}, "c.a", {"v": 1, "w": 2}))


IG_LOCALS = """
    direct_counter(CounterType.packets_and_bytes) dc;
    action set_a(bit<8> v) { hdr.data.a = v; }
    action set_b(bit<8> v) { hdr.data.b = v; }
    table t {
        key = { hdr.data.c: ternary @name("cee"); hdr.data.b: exact; }
        actions = { set_a; set_b; NoAction; }
        default_action = set_b(9);
        counters = dc;
    }
    table k {
        key = { hdr.data.a: exact; }
        actions = { set_a; NoAction; }
        const entries = { 5: set_a(55); 6: set_a(66); }
    }
"""


def test_table_in_program_hit_miss_default_counters_action_run(tmp_path):
    ig = """
        if (t.apply().hit) { hdr.data.d = 1; } else { hdr.data.d = 2; }
        switch (k.apply().action_run) {
            set_a: { hdr.data.c = 0xaaaa; }
            default: { }
        }
    """
    sw = Switch(program(tmp_path, ig=ig, ig_locals=IG_LOCALS))
    m = sw.model
    assert [f.name for f in m.tables["IG.t"].keys] == ["cee", "hdr.data.b"]
    assert m.tables["IG.k"].const_entries
    assert m.direct_counters["IG.dc"].table == "IG.t"
    e = TableEntry(
        "t", {"cee": Ternary(0x1200, 0xFF00), "hdr.data.b": Exact(2)}, "set_a", {"v": 5}, priority=1
    )
    sw.table_add(e)
    sw.send(0, frame(a=0, b=2, c=0x1234))
    sw.send(0, frame(a=0, b=3, c=0x1234))
    o1, o2 = (data_of(p.data) for p in sw.receive())
    assert o1 == (55, 2, 0xAAAA, 1)  # t hit -> a=5, then k const entry 5 -> 55
    assert o2 == (0, 9, 0x1234, 2)  # t miss -> default set_b(9); k misses
    assert sw.direct_counter_read("IG.t", e) == (1, 22)
    with pytest.raises(P4SimError):
        sw.table_add(TableEntry("k", {"hdr.data.a": Exact(1)}, "set_a", {"v": 1}))
    sw.table_set_default("t", "NoAction", {})
    assert sw.table_default("IG.t") == ("NoAction", {})


def test_validity_key_named_as_p4c(tmp_path):
    locals_ = """
    action a() { }
    table v { key = { hdr.data.isValid(): exact; hdr.data.a[3:0]: ternary; } actions = { a; } }
    """
    sw = Switch(program(tmp_path, ig_locals=locals_, ig="v.apply();"))
    assert [(k.name, k.bitwidth) for k in sw.model.tables["IG.v"].keys] == [
        ("hdr.data.$valid$", 1),
        ("hdr.data.a[3:0]", 4),
    ]


def test_single_key_lpm_fast_path_agrees_with_general_lookup():
    import random

    t = table(["lpm"], [32])
    rng = random.Random(1)
    entries = []
    for i in range(300):
        plen = rng.choice([0, 8, 16, 20, 24, 32])
        v = rng.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        e = TableEntry("c.t", {"k0": Lpm(v, plen)}, "c.a", {"v": i % 256})
        try:
            t.add(e)
            entries.append(e)
        except AlreadyExists:
            pass
    for e in entries[::3]:
        t.delete(e)
    for _ in range(2000):
        k = rng.getrandbits(32)
        assert t.lookup1(k) is t._lookup_lpm((k,))


def test_ternary_mask_groups_agree_with_linear_scan():
    import random

    t = table(["ternary", "optional", "lpm"], [16, 8, 16])
    rng = random.Random(3)
    entries = []
    for i in range(400):
        m = rng.choice([0xFFFF, 0xFF00, 0x00F0, 0])
        match = {"k0": Ternary(rng.getrandbits(16) & m, m)}
        if rng.random() < 0.5:
            match["k1"] = Optional_(rng.getrandbits(2))
        plen = rng.choice([0, 8, 16])
        match["k2"] = Lpm(rng.getrandbits(16) & (((1 << plen) - 1) << (16 - plen)), plen)
        e = TableEntry("c.t", match, "c.a", {"v": i % 256}, priority=rng.randint(1, 50))
        try:
            t.add(e)
            entries.append(e)
        except AlreadyExists:
            pass
    for e in entries[::4]:
        t.delete(e)
    assert t.lookup == t._lookup_masks
    for _ in range(3000):
        k = (rng.getrandbits(16), rng.getrandbits(2), rng.getrandbits(16))
        assert t.lookup(k) is t._lookup_scan(k)


def test_parser_value_set_members():
    from pathlib import Path

    prog = Path(__file__).resolve().parent / "programs" / "value_set.p4"
    sw = Switch(str(prog))
    sw.send(0, bytes([0x10, 0]))
    assert sw.receive()[0].data == bytes([0x10, 3])
    sw.value_set_set("special", [(0x10, 0xFF)])
    sw.send(0, bytes([0x10, 0]))
    assert sw.receive()[0].data == bytes([0x10, 1])
    with pytest.raises(P4SimError):
        sw.value_set_set("special", [(i, 0xFF) for i in range(5)])


def test_a_table_holds_exactly_its_size():
    """Mutant B7 (full one entry late). BMv2 refuses an add once `size` entries are in
    (MatchErrorCode::TABLE_FULL); P4Runtime RESOURCE_EXHAUSTED. Size 2: two adds, not three."""
    info = TableInfo(name="c.t", keys=(KeyField("k0", "exact", 8, 1),), size=2)
    t = Table(info, [ActionSpec("c.a", (("v", 8),)), ActionSpec("NoAction", ())])
    add(t, {"k0": Exact(1)}, 1)
    add(t, {"k0": Exact(2)}, 2)
    with pytest.raises(P4SimError, match="full"):
        add(t, {"k0": Exact(3)}, 3)
    assert t.lookup((3,)) is None and t.lookup((2,)).args == (2,)
    t.delete(TableEntry("c.t", {"k0": Exact(1)}, "c.a", {"v": 1}))
    add(t, {"k0": Exact(3)}, 3)  # room again after a delete
    assert t.lookup((3,)).args == (3,)


def test_lpm_and_ternary_values_are_masked_when_added():
    """Mutant B13 (the lpm value kept with its bits past the prefix). BMv2 masks the key of
    an lpm/ternary entry when it is added: 10.1.2.3/8 is 10.0.0.0/8 and matches 10.9.9.9."""
    t = table(["lpm"], [32])
    add(t, {"k0": Lpm(0x0A010203, 8)}, 1)
    assert t.lookup((0x0A090909,)).args == (1,)
    assert t.lookup1(0x0A090909).args == (1,)
    t2 = table(["lpm", "ternary"], [32, 8])  # the scan path (lpm inside a ternary table)
    add(t2, {"k0": Lpm(0x0A010203, 8), "k1": Ternary(0x1F, 0x0F)}, 2, prio=1)
    assert t2.lookup((0x0A090909, 0x2F)).args == (2,)


def test_reset_default_restores_the_programs_default(tmp_path):
    """Mutant B14 (reset_default a no-op). P4Runtime: a default entry without an action
    resets the default to the one the P4 program declares (here set_b(9))."""
    sw = Switch(program(tmp_path, ig="t.apply();", ig_locals=IG_LOCALS))
    assert sw.table_default("IG.t") == ("IG.set_b", {"v": 9})
    sw.table_set_default("t", "NoAction", {})
    assert sw.table_default("IG.t")[0] == "NoAction"
    sw.tables["IG.t"].reset_default()
    assert sw.table_default("IG.t") == ("IG.set_b", {"v": 9})


def test_an_emptied_table_misses_and_a_refilled_one_hits(tmp_path):
    """Generated code skips the key of a table with no entries (`T.recs` empty): every way
    entries come and go (add, delete, clear, modify) must keep that test true, for each
    lookup form (single exact key, exact tuple, single lpm, ternary)."""
    ig_locals = """
        action set_d(bit<32> v) { hdr.data.d = v; }
        table e1 { key = { hdr.data.a : exact; } actions = { set_d; NoAction; } default_action = NoAction(); }
        table e2 { key = { hdr.data.a : exact; hdr.data.b : exact; } actions = { set_d; NoAction; }
                   default_action = NoAction(); }
        table l1 { key = { hdr.data.c : lpm; } actions = { set_d; NoAction; } default_action = NoAction(); }
        table t1 { key = { hdr.data.b : ternary; } actions = { set_d; NoAction; } default_action = NoAction(); }
    """
    ig = "        e1.apply(); e2.apply(); l1.apply(); t1.apply();"
    sw = Switch(program(tmp_path, ig=ig, ig_locals=ig_locals))
    entries = {
        "e1": TableEntry("e1", {"hdr.data.a": Exact(1)}, "set_d", {"v": 11}),
        "e2": TableEntry(
            "e2", {"hdr.data.a": Exact(1), "hdr.data.b": Exact(2)}, "set_d", {"v": 22}
        ),
        "l1": TableEntry("l1", {"hdr.data.c": Lpm(0x1200, 8)}, "set_d", {"v": 33}),
        "t1": TableEntry("t1", {"hdr.data.b": Ternary(2, 0xFF)}, "set_d", {"v": 44}, priority=1),
    }

    def d_out() -> int:
        sw.send(0, frame(a=1, b=2, c=0x1234, d=7))
        (p,) = sw.receive()
        return data_of(p.data)[3]

    assert d_out() == 7  # every table empty: all miss
    for name, e in entries.items():
        sw.table_add(e)
        assert d_out() == e.params["v"], name  # the last table applied that hits wins
        sw.table_delete(e)
        assert d_out() == 7, name
        sw.table_add(e)
        sw.table_modify(TableEntry(e.table, e.match, "set_d", {"v": 99}, priority=e.priority))
        assert d_out() == 99, name
        sw.table_clear(name)
        assert d_out() == 7, name


def test_ternary_key_bits_above_the_width_do_not_reach_the_next_field():
    # tuple space search packs the key fields into one int: a value's bits above its width
    # (a negative int<W> is all ones above it) must be cut, not spill into the field before it
    t = table(["ternary", "ternary"])
    add(t, {"k0": Ternary(0x01, 0xFF), "k1": Ternary(0xFF, 0xFF)}, 1, prio=1)
    add(t, {"k0": Ternary(0x00, 0xFF), "k1": Ternary(0xFF, 0xFF)}, 2, prio=2)
    assert t.lookup((0x00, 0x1FF)).args == (2,)
    assert t.lookup((0x00, -1)).args == (2,)
    assert t.lookup((0x101, 0xFF)).args == (1,)
