"""Slot reads at probed offsets (p4sim/compiled/slots.py): the probe finds the word each
attribute lives in (checked word by word against getattr, with every slot holding its own
object), the C helpers read and write what getattr/setattr would (another type or an unset
slot takes getattr: its value or its AttributeError; a write keeps both reference counts
right), and the compiled pipeline with the rewrite still equals the Python backend
(tests/p4sim/test_compiled_views.py's control-plane script). Planted slips: a probe that
looks for a slot's current value (False is in three slots), helpers without the type check
or without the old value's release, a switch slot or an entry field bound to a
neighbour's offset."""

from __future__ import annotations

import ctypes
import re
import sys

import pytest

from p4sim.compiled import build as build_mod
from p4sim.compiled import program as program_mod
from p4sim.compiled import slots as slots_mod
from p4sim.runtime import tables
from p4sim.runtime.switch import Switch, load_program
from tests.p4sim.compiled_helpers import compiled_cache, needs_compiler, quick_build  # noqa: F401 (autouse fixture)
from tests.p4sim.test_compiled_views import PROGRAM, _switch, run


@pytest.fixture(scope="module")
def program():
    return load_program(str(PROGRAM))


def _word(obj: object, off: int) -> int | None:
    return ctypes.c_void_p.from_address(id(obj) + off).value


def _check_switch_offsets(sw: Switch) -> None:
    names = slots_mod.switch_slots()
    offs = slots_mod.slot_offsets(sw, names)
    assert set(offs) == set(names) and all(o >= 16 for o in offs.values())
    assert len(set(offs.values())) == len(names)
    saved = {n: getattr(sw, n) for n in names}
    try:
        for n in names:  # every slot its own object: each word must hold its own
            setattr(sw, n, object())
        assert all(_word(sw, offs[n]) == id(getattr(sw, n)) for n in names)
    finally:
        for n, v in saved.items():
            setattr(sw, n, v)


def test_switch_slot_offsets_hold_the_slots(program, monkeypatch) -> None:
    monkeypatch.setenv("P4SIM_PROFILE", "reference")
    sw = Switch(program)
    before = {n: getattr(sw, n) for n in slots_mod.switch_slots()}
    _check_switch_offsets(sw)
    assert all(getattr(sw, n) is v for n, v in before.items())  # the probe restores every value
    assert slots_mod.slot_offsets(sw, ("tables", "send", "nope")) == {
        "tables": -1,
        "send": -1,
        "nope": -1,
    }

    class Odd:  # a slot shadowed by a property in a subclass, and an unset slot
        __slots__ = ("a", "b")

    class Sub(Odd):
        a = property(lambda self: 1)

    o = Sub()
    assert slots_mod.slot_offsets(o, ("a", "b")) == {"a": -1, "b": 16 + 8}
    assert not hasattr(o, "b")  # left unset, as found


def test_a_probe_by_current_value_is_caught(program, monkeypatch) -> None:
    """Negative control: searching for the value a slot holds (not a fresh sentinel) finds the
    first of the slots that share it (False: _dirty, _pending, cksum_err)."""
    monkeypatch.setenv("P4SIM_PROFILE", "reference")
    sw = Switch(program)

    def first(obj, value):
        base = id(obj)
        return next(
            off
            for off in range(16, type(obj).__basicsize__, 8)
            if ctypes.c_void_p.from_address(base + off).value == id(value)
        )

    def by_value(obj, names):
        return {n: first(obj, getattr(obj, n)) for n in names}

    monkeypatch.setattr(slots_mod, "slot_offsets", by_value)
    with pytest.raises(AssertionError):
        _check_switch_offsets(sw)


def test_rec_offsets_hold_aid_and_args() -> None:
    """Both entry classes: the reference's slots and the compiled write path's fields."""
    from p4sim.runtime import compiled_write

    classes = [tables.PyRec]
    if not build_mod.unavailable_reason():
        classes.append(compiled_write.build(compiled_write.SOURCE.read_text(encoding="utf-8")).Rec)
    for cls in classes:
        offs = slots_mod.rec_offsets(cls)
        r = cls(None, 5, (7, 8))
        assert _word(r, offs["aid"]) == id(r.aid) and _word(r, offs["args"]) == id(r.args), cls


HARNESS = """
import cython
{helpers}


def get(o, t, off, name):
    return _p4sim_sget(o, t, off, name)


def put(o, t, off, name, v):
    _p4sim_sset(o, t, off, name, v)
"""

HELPER_PLANTS = {
    "no type check": ("if off >= 0 and type(o) is t:", "if off >= 0:"),
    "old value kept": ("        _p4sim_XDECREF(old)\n", ""),
}


class _A:
    __slots__ = ("x",)


class _B:  # another layout: its word at _A.x's offset is `pad`
    __slots__ = ("pad", "x")


def _helpers(plant: str | None):
    text = slots_mod.HELPERS
    if plant:
        old, new = HELPER_PLANTS[plant]
        assert text.count(old) == 1
        text = text.replace(old, new)
    return build_mod.build_module(HARNESS.format(helpers=text), "slots_harness")


def _exercise(m) -> None:
    off = slots_mod.slot_offsets(_A(), ("x",))["x"]
    a, b = _A(), _B()
    old, new = object(), object()
    a.x, b.pad, b.x = old, "pad", "x"
    assert m.get(a, _A, off, "x") is old and m.get(b, _A, off, "x") == "x"
    assert m.get(a, _A, -1, "x") is old
    n_old, n_new = sys.getrefcount(old), sys.getrefcount(new)
    m.put(a, _A, off, "x", new)
    counts = (
        sys.getrefcount(old),
        sys.getrefcount(new),
    )  # before pytest's assert keeps temporaries
    assert counts == (n_old - 1, n_new + 1) and a.x is new
    m.put(b, _A, off, "x", new)  # another type: setattr
    assert b.pad == "pad" and b.x is new
    del a.x
    with pytest.raises(AttributeError):  # unset: getattr's error, not a NULL
        m.get(a, _A, off, "x")
    m.put(a, _A, off, "x", 3)
    assert a.x == 3


@needs_compiler
def test_helpers_read_and_write_as_getattr_and_setattr(monkeypatch) -> None:
    quick_build(monkeypatch)
    _exercise(_helpers(None))


@needs_compiler
@pytest.mark.parametrize("plant", sorted(HELPER_PLANTS))
def test_a_planted_helper_slip_is_caught(plant: str, monkeypatch) -> None:
    quick_build(monkeypatch)
    with pytest.raises(AssertionError):
        _exercise(_helpers(plant))


def test_the_rewrite_is_emitted(program) -> None:
    src = program_mod.typed_source(program, ["_RT"])
    funcs = src.split("def _p4sim_bind", 1)[1]
    assert "_p4sim_sget(_RT, _p4sim_SwT, _p4sim_os_plen, 'plen')" in funcs
    assert "_p4sim_sget(sw, _p4sim_SwT, _p4sim_os__now, '_now')" in funcs
    assert re.search(r"_p4sim_sget\(_r\d+, _p4sim_RecT, _p4sim_or_aid, 'aid'\)", funcs)
    # no getattr of a slot or an entry field left in the functions
    left = re.findall(r"(?<![\w.])(?:_RT|sw)\.(\w+)|(?<![\w.])_r\d+\.(aid|args)\b", funcs)
    assert not [x for x in left if x[1] or x[0] in slots_mod.switch_slots()]


def test_an_in_place_update_of_a_slot_is_refused() -> None:
    with pytest.raises(ValueError, match="in place"):
        slots_mod.rewrite_switch("    sw._now += 1\n", "sw")
    with pytest.raises(ValueError, match="inside an expression"):
        slots_mod.rewrite_switch("    f(sw.plen = 1)\n", "sw")


@needs_compiler
def test_the_rewritten_pipeline_equals_python(program, monkeypatch) -> None:
    ref = run(_switch(program, "python", monkeypatch))
    assert run(_switch(program, "compiled", monkeypatch)) == ref


PLANTS = {
    # the packet length (`_RT.plen`, the counters' byte count) kept in the payload's slot
    # (a plant that shares the truncation length's slot goes unseen: the driver writes plen
    # there before every read, and a cap of the packet's own length cuts nothing)
    "plen at payload": (
        "_p4sim_os_plen = cython.declare(cython.Py_ssize_t, _p4sim_os['plen'])",
        "_p4sim_os_plen = cython.declare(cython.Py_ssize_t, _p4sim_os['payload'])",
    ),
    # an entry's action index read at its arguments' word: no action's code runs
    "aid at args": (
        "_p4sim_or_aid = cython.declare(cython.Py_ssize_t, _p4sim_or['aid'])",
        "_p4sim_or_aid = cython.declare(cython.Py_ssize_t, _p4sim_or['args'])",
    ),
}


@needs_compiler
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_comparison_catches_a_planted_offset_slip(program, plant: str, monkeypatch) -> None:
    quick_build(monkeypatch)
    ref = run(_switch(program, "python", monkeypatch))
    real = program_mod.typed_source

    def planted(p, injected):
        src = real(p, injected)
        old, new = PLANTS[plant]
        assert src.count(old) == 1
        return src.replace(old, new)

    monkeypatch.setattr(program_mod, "typed_source", planted)
    try:
        got = run(_switch(program, "compiled", monkeypatch))
    except Exception as e:  # noqa: BLE001 (a slip may also stop the run: caught as well)
        got = e
    assert got != ref
