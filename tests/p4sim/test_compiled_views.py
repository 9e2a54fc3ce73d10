"""The compiled pipeline's bound views (p4sim/compiled/views.py: tables' attributes read at
their slots' offsets and `lookup1` through the instance dict, counter/register arrays' lists
and sizes bound once per switch) against the
Python backend, with the control plane changing what the views read between packets:
entries added and deleted (a single-key lpm table's `lookup1` bound on the instance and
dropped again), defaults set, a table cleared, counters and registers written, and two
switches of the same program in one process (each binds its own objects). Planted slips
(a default bound once though set_default rebinds it, a copy of a table's entries or of a
counter's or register's list, a wrong size) must be caught (a stale `lookup1` is no slip: each
of its bindings gives the same answers, only at another speed), and a rebinding of a bound list must be refused."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from p4sim.compiled import program as program_mod
from p4sim.externs import counter as counter_mod
from p4sim.externs.counter import CounterArray
from p4sim.externs.register import RegisterArray
from p4sim.model import Exact, Lpm, TableEntry
from p4sim.runtime.switch import Switch, load_program
from tests.p4sim.compiled_helpers import PROFILE_OF, compiled_cache, needs_compiler, quick_build  # noqa: F401 (autouse fixture)

PROGRAM = Path(__file__).with_name("views") / "views.p4"


@pytest.fixture(scope="module")
def program():
    return load_program(str(PROGRAM))


def _switch(program, backend: str, monkeypatch) -> Switch:
    monkeypatch.setenv("P4SIM_PROFILE", PROFILE_OF[backend])
    sw = Switch(program)
    assert sw._ns["__p4sim_backend__"] == backend
    return sw


def _frame(k: int, addr: int) -> bytes:
    return bytes([k]) + addr.to_bytes(4, "big") + b"\0" * 6 + b"payload"


def _batch(sw: Switch, rng: random.Random, n: int = 24) -> list[tuple[int, bytes]]:
    for _ in range(n):
        sw.send(
            0,
            _frame(
                rng.randrange(10),
                rng.choice([0x0A000001, 0x0A000002, 0x0A010203, 0x0B000001, rng.getrandbits(32)]),
            ),
        )
    return [(o.port, o.data) for o in sw.receive()]


def _routes(prefixes: list[tuple[int, int]], tag0: int) -> list[TableEntry]:
    return [
        TableEntry("route", {"hdr.h.addr": Lpm(v, p)}, "set_tag", {"t": tag0 + i})
        for i, (v, p) in enumerate(prefixes)
    ]


HOSTS = [(0x0A000001, 32), (0x0A000002, 32), (0x0B000001, 32)]
SHORT = [(0x0A000000, 8), (0x0A010000, 16), (0x0B000000, 8), (0x0C000000, 8)]


def run(sw: Switch, seed: int = 7) -> list:
    """One control-plane script with packets between its steps; everything observable."""
    rng = random.Random(seed)
    seen: list = [_batch(sw, rng)]  # every table empty: by_k's default drops
    for k in range(8):
        sw.table_add(TableEntry("by_k", {"hdr.h.k": Exact(k)}, "set_port", {"p": 1 + k}))
    for e in _routes(HOSTS, 10):  # host routes only: lookup1 is bound on the table itself
        sw.table_add(e)
    sw.table_add(
        TableEntry("pair", {"hdr.h.k": Exact(1), "hdr.h.tag": Exact(10)}, "set_cls", {"c": 3})
    )
    seen.append(_batch(sw, rng))
    sw.table_set_default("by_k", "set_port", {"p": 9})
    sw.table_set_default("fixed", "set_cls", {"c": 7})
    seen.append(_batch(sw, rng))
    for e in _routes(SHORT, 20):  # now mostly short prefixes: lookup1 is the class's method again
        sw.table_add(e)
    seen.append(_batch(sw, rng))
    for e in _routes(SHORT, 20):
        sw.table_delete(e)
    seen.append(_batch(sw, rng))
    sw.table_clear("route")
    sw.table_clear("by_k")
    seen.append(_batch(sw, rng))
    sw._table("by_k").reset_default()
    sw.table_add(TableEntry("by_k", {"hdr.h.k": Exact(3)}, "set_port", {"p": 4}))
    for e in _routes(HOSTS[:1] + SHORT[:1], 30):
        sw.table_add(e)
    seen.append(_batch(sw, rng))
    sw.counter_write("seen_by_k", None, 100, 1000)
    sw.counter_write("seen_by_k", 2, 5, 50)
    sw.register_write("visits", None, 40)
    sw.register_write("visits", 3, 7)
    seen.append(_batch(sw, rng))
    seen.append({n: sw.counter_read(n, None) for n in sw.counters})
    seen.append({n: sw.register_read(n, None) for n in sw.registers})
    seen.append((dict(sw.stats), list(sw.log)))
    return seen


@needs_compiler
def test_views_follow_the_control_plane(program, monkeypatch) -> None:
    ref = run(_switch(program, "python", monkeypatch))
    assert sum(len(b) for b in ref[:-3]) > 100 and len({p for b in ref[:-3] for p, _ in b}) >= 6
    assert run(_switch(program, "compiled", monkeypatch)) == ref


@needs_compiler
def test_two_switches_of_one_program_bind_their_own_objects(program, monkeypatch) -> None:
    """The extension module is loaded once per process: each switch's views are its own."""
    a, b = _switch(program, "compiled", monkeypatch), _switch(program, "compiled", monkeypatch)
    ra, rb = _switch(program, "python", monkeypatch), _switch(program, "python", monkeypatch)
    for sw in (b, rb):  # b differs from a in an entry, a default and a register cell
        sw.table_add(TableEntry("by_k", {"hdr.h.k": Exact(2)}, "set_port", {"p": 6}))
        sw.table_set_default("fixed", "set_cls", {"c": 5})
        sw.register_write("visits", 2, 11)
    rng = [random.Random(3), random.Random(3), random.Random(3), random.Random(3)]
    got = [_batch(a, rng[0]), _batch(b, rng[1]), _batch(a, rng[0])]
    want = [_batch(ra, rng[2]), _batch(rb, rng[3]), _batch(ra, rng[2])]
    assert got == want and got[0] != got[1]
    assert a.counter_read("seen_by_k", None) == ra.counter_read("seen_by_k", None)
    assert b.register_read("visits", None) == rb.register_read("visits", None)


_BOUND = r"^(    (\w+)__t = cython\.declare\(type, type\(\w+\)\))$"  # a table's slot reads bound


def _stale_default(src: str) -> str:
    # every table's default read once, when the switch is built
    src = re.sub(r"_p4sim_sget\((\w+), \w+, \w+, 'default'\)", r"\1__dflt", src)
    return re.sub(_BOUND, r"\1\n    \2__dflt = \2.default", src, flags=re.M)


def _snapshot_recs(src: str) -> str:
    # a table's entries read once, when the switch is built (empty then: every apply misses)
    src = re.sub(r"_p4sim_sget\((\w+), \w+, \w+, 'recs'\)", r"\1__recs", src)
    return re.sub(_BOUND, r"\1\n    \2__recs = dict(\2.recs)", src, flags=re.M)


PLANTS = {
    "stale default": _stale_default,
    "snapshot recs": _snapshot_recs,
    # a copy of a counter's or register's list: the control plane no longer sees the counts
    "copied pkts": lambda s: re.sub(
        r"(__pkts = cython\.declare\(list, )(\w+\.pkts)\)", r"\1list(\2))", s
    ),
    "copied cells": lambda s: re.sub(
        r"(__cells = cython\.declare\(list, )(\w+\.cells)\)", r"\1list(\2))", s
    ),
    "short size": lambda s: re.sub(
        r"(__size = cython\.declare\(cython\.longlong, )(\w+\.size)\)", r"\1\2 - 1)", s
    ),
}


@needs_compiler
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_comparison_catches_a_planted_view_slip(program, plant: str, monkeypatch) -> None:
    quick_build(monkeypatch)
    ref = run(_switch(program, "python", monkeypatch))
    real = program_mod.typed_source

    def planted(p, injected):
        src = real(p, injected)
        out = PLANTS[plant](src)
        assert out != src, "the plant must change the source"
        return out

    monkeypatch.setattr(program_mod, "typed_source", planted)
    assert run(_switch(program, "compiled", monkeypatch)) != ref


def test_a_bound_list_or_size_cannot_be_rebound(monkeypatch) -> None:
    c, r = CounterArray("c", 4, "both"), RegisterArray("r", 4, 8)
    for obj, name in ((c, "pkts"), (c, "bytes"), (c, "size"), (r, "cells"), (r, "size")):
        with pytest.raises(AttributeError, match="bound into the compiled pipeline"):
            setattr(obj, name, [0] * 4)
        with pytest.raises(AttributeError):
            delattr(obj, name)
    c.pkts[:] = [1] * 4  # in place: what the bound view sees
    assert c.pkts == [1] * 4
    # negative control: without the refusal the rebinding goes through unnoticed
    monkeypatch.setattr(
        counter_mod, "refuse_rebind", lambda o, n, v, bound: object.__setattr__(o, n, v)
    )
    c2 = CounterArray("c2", 4, "both")
    c2.pkts = [9] * 4
    assert c2.pkts == [9] * 4


def test_views_are_emitted(program) -> None:
    src = program_mod.typed_source(program, ["_RT"])
    assert "T_" in src and "__o_recs, 'recs')" in src and "__pkts = cython.declare(list" in src
    assert (
        re.search(
            r"\bX_\w+\.(pkts|bytes|cells|size)\b",
            src.split("def _p4sim_bind", 1)[1].split("\n    def ", 1)[1],
        )
        is None
    )  # no getattr left in the functions
