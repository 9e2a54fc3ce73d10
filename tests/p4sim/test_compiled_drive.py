"""The compiled driver (p4sim/compiled/drive.py: send()'s common case as one typed function
of the program's extension) against the Python driver, the reference: sm_echo.p4 writes
every standard_metadata field egress sees into the packet, and the random traffic of
test_switch_fastpath (idle and busy ports, rates, drops, PFC pauses, clones, multicast,
resubmit, recirculation, truncation) must give the same outputs (port, bytes, time),
counters, traffic-manager statistics and log as the Python backend's queued path. Planted
slips in the driver's text must be caught; the header makers (`_p4new_<class>()`) must
make what the class call makes."""

from __future__ import annotations

import pytest

from p4sim.compiled import drive as drive_mod
from p4sim.compiled.program import typed_source
from p4sim.runtime.switch import Switch, load_program
from p4sim.runtime.tm import TrafficManager
from tests.p4sim.compiled_helpers import PROFILE_OF, compiled_cache, needs_compiler, quick_build  # noqa: F401 (autouse fixture)
from tests.p4sim_runtime.test_switch_fastpath import (
    PROGRAM,
    TM_CONFIGS,
    QueuedTM,
    counting,
    drive,
    make,
)


@pytest.fixture(scope="module")
def program():
    return load_program(PROGRAM)


def _switch(program, tm, backend: str, monkeypatch):
    monkeypatch.setenv("P4SIM_PROFILE", PROFILE_OF[backend])
    sw = make(program, tm)
    assert sw._ns["__p4sim_backend__"] == backend
    assert (sw._drive is not None) == (backend == "compiled")
    return sw


def test_the_driver_is_emitted(program) -> None:
    assert "def _p4sim_drive(sw, port, frame):" in typed_source(program, ["_RT"])
    assert "def _p4sim_send(sw, port, frame):" in typed_source(program, ["_RT"])


@needs_compiler
@pytest.mark.parametrize("seed,config", [(1, 0), (3, 1)])
def test_compiled_driver_matches_the_python_driver(
    program, seed: int, config: int, monkeypatch
) -> None:
    tm = TrafficManager(**TM_CONFIGS[config])
    taken = counting(tm)
    fast = drive(_switch(program, tm, "compiled", monkeypatch), seed)
    ref = drive(_switch(program, QueuedTM(**TM_CONFIGS[config]), "python", monkeypatch), seed)
    assert fast == ref
    assert taken[1] > 100 and taken[0] > 100  # both the inlined and the handed-back unicast case
    assert len(fast[0]) > 300 and fast[1]["tm_drops"] > 0 and fast[1]["drops"] > 0
    assert {len(d) for _, d, _ in fast[0]} >= {40, 70}  # truncate(), clone session truncation


PLANTS = {
    "enq_qdepth": ("    sm.f_enq_qdepth = 0\n", "    sm.f_enq_qdepth = 1\n"),
    "time": ("    end = now + tx\n", "    end = now + tx + 1\n"),
    "trunc": ("    trunc = sw.cap\n", "    trunc = 0\n"),
    # the compiled send() (drive._SEND): its receive count, the service of what it queued
    "rx": ('    sw.stats["rx"] += 1\n', '    sw.stats["rx"] += 2\n'),
    "service": ("    sw._service(sw._now)\n", "    pass\n"),
}


@needs_compiler
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_comparison_catches_a_planted_driver_slip(program, plant: str, monkeypatch) -> None:
    """Negative control: the driver off in one metadata field, in its time, in the
    ingress truncation it carries to the output, or the compiled send() off in its count
    or leaving what egress queued (clones, recirculation) unserved fails the comparison above."""
    quick_build(monkeypatch)
    old, new = PLANTS[plant]
    where = "_SEND" if plant in ("rx", "service") else "_TEMPLATE"
    text = getattr(drive_mod, where)
    assert text.count(old) == 1
    monkeypatch.setattr(drive_mod, where, text.replace(old, new))
    fast = drive(_switch(program, TrafficManager(), "compiled", monkeypatch), 1, 300)
    assert fast != drive(_switch(program, QueuedTM(), "python", monkeypatch), 1, 300)


def _fields(obj):
    """A header/struct (or a stack of headers) as plain values, for comparison."""
    if hasattr(obj, "_p4fields"):
        return (type(obj).__name__, {a: _fields(getattr(obj, a)) for a in obj._p4fields})
    if type(obj).__name__ == "Stack":
        return ("Stack", obj.n, obj.size, [_fields(h) for h in obj.a])
    assert obj is None or isinstance(obj, (int, bytes)), type(obj)
    return obj


@needs_compiler
def test_makers_make_what_the_class_makes(monkeypatch) -> None:
    """`_p4new_X()` (a C function) and `X()` (the class's __init__) give equal objects, for
    every class that has a maker (headers with wide fields, nested structs, metadata)."""
    from pathlib import Path

    monkeypatch.setenv("P4SIM_PROFILE", "fast")
    sw = Switch(load_program(str(Path(__file__).parent / "typed" / "typed_deparse.p4")))
    ns = sw._ns
    makers = sorted(k for k in ns if k.startswith("_p4new_"))
    assert makers == [
        "_p4new_H_a_t",
        "_p4new_H_b_t",
        "_p4new_S_headers_t",
        "_p4new_S_standard_metadata_t",
    ]
    for k in makers:
        cls = ns[k[len("_p4new_") :]]
        made, ref = ns[k](), cls()
        assert type(made) is cls and _fields(made) == _fields(ref), k
    # the comparison sees a field a maker would leave unset (None where the class sets a value)
    bare = _fields(ns["S_headers_t"].__new__(ns["S_headers_t"]))[1]
    assert bare != _fields(ns["S_headers_t"]())[1] and None in bare.values()


@needs_compiler
def test_compiled_send_hands_other_arguments_to_switch_send(program, monkeypatch) -> None:
    """The compiled send() takes Switch.send for a port or frame it does not inline: the same
    error for a port out of range, and a bytearray or a bool port go through as there."""
    from p4sim.model import P4SimError

    def frame_of(eport: int) -> bytes:  # sm_echo.p4: the egress port in the low bits of dst
        return eport.to_bytes(6, "big") + bytes(6) + b"\x08\x00" + bytes(50)

    sws = [_switch(program, TrafficManager(), b, monkeypatch) for b in ("compiled", "python")]
    assert sws[0].send.__func__ is sws[0]._ns["_p4sim_send"] and "send" not in sws[1].__dict__
    got = []
    for sw in sws:
        with pytest.raises(P4SimError) as e:
            sw.send(512, bytes(64))
        sw.send(True, bytearray(frame_of(2)))
        sw.send(1, frame_of(3))
        got.append(
            (str(e.value), [(o.port, o.data, o.time_ns) for o in sw.receive()], dict(sw.stats))
        )
    assert got[0] == got[1] and len(got[0][1]) == 2 and got[0][2]["rx"] == 2


@needs_compiler
@pytest.mark.parametrize("seed,config", [(2, 0), (4, 1)])
def test_driver_copy_of_send_now_matches_the_python_driver(
    program, seed: int, config: int, monkeypatch
) -> None:
    """No replacement of send_now: the driver's own copy of it runs (drive.SEND_NOW_INLINE,
    the traffic manager's and its port state's slots read at their offsets), and gives
    the Python backend's queued path's outputs, counters and TM statistics."""
    fast = drive(
        _switch(program, TrafficManager(**TM_CONFIGS[config]), "compiled", monkeypatch), seed
    )
    ref = drive(_switch(program, QueuedTM(**TM_CONFIGS[config]), "python", monkeypatch), seed)
    assert fast == ref and len(fast[0]) > 300


@needs_compiler
def test_a_class_replacement_of_send_now_is_called(program, monkeypatch) -> None:
    """The copy runs only while TrafficManager.send_now is the method it copies (an instance's
    replacement is the `counting` tests' above): a replacement on the class is called."""
    sw = _switch(program, TrafficManager(), "compiled", monkeypatch)
    real, calls = TrafficManager.send_now, []

    def spy(self, *a):
        calls.append(a)
        return real(self, *a)

    monkeypatch.setattr(TrafficManager, "send_now", spy)
    sw.send(1, (3).to_bytes(6, "big") + bytes(6) + b"\x08\x00" + bytes(50))
    assert len(calls) == 1 and [o.port for o in sw.receive()] == [3]


SEND_NOW_PLANTS = {
    "tx_bytes": ("state.tx_bytes = state.tx_bytes + length\n", "state.tx_bytes = state.tx_bytes\n"),
    "wrr turn": (
        "                    state.wrr_sent = 0\n",
        "                    state.wrr_sent = 1\n",
    ),
    "pause ignored": (" or state.paused_until[prio] > now:", ":"),
    "not busy": ("state.busy_until = now + tx\n", "state.busy_until = now\n"),
}


@needs_compiler
@pytest.mark.parametrize("plant", sorted(SEND_NOW_PLANTS))
def test_comparison_catches_a_planted_send_now_slip(program, plant: str, monkeypatch) -> None:
    """Negative control: the copy off in a statistic, in the WRR turn, in a pause or in the
    port's busy time fails the comparison above."""
    quick_build(monkeypatch)
    old, new = SEND_NOW_PLANTS[plant]
    assert drive_mod.SEND_NOW_INLINE.count(old) == 1
    monkeypatch.setattr(drive_mod, "SEND_NOW_INLINE", drive_mod.SEND_NOW_INLINE.replace(old, new))
    fast = drive(_switch(program, TrafficManager(**TM_CONFIGS[1]), "compiled", monkeypatch), 3)
    assert fast != drive(_switch(program, QueuedTM(**TM_CONFIGS[1]), "python", monkeypatch), 3)
