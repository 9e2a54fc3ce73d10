"""The switch's fast path (a unicast packet through an idle traffic manager and egress in
one go, `TrafficManager.send_now`) against its queued path, bit for bit: the same outputs
(port, bytes, time), counters and traffic-manager statistics for random traffic that mixes
idle and busy ports, rates, drops, PFC pauses, clones, multicast, resubmit, recirculation
and truncation. sm_echo.p4 writes every standard_metadata field egress sees into the packet.
The reference switch runs a TrafficManager subclass: the switch takes its fast path only
with the TrafficManager class itself."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4sim.runtime.switch import Switch, load_program
from p4sim.runtime.tm import TrafficManager

PROGRAM = str(Path(__file__).parent / "programs" / "sm_echo.p4")


class QueuedTM(TrafficManager):
    """The same traffic manager; its type keeps the switch on the queued path."""


@pytest.fixture(autouse=True)
def reference_profile(monkeypatch):
    """The Python driver's fast path is what this module checks (its negative controls plant
    into Switch._egress_run, which the compiled driver inlines): the reference profile. The
    compiled driver is checked against it in tests/p4sim/test_compiled_drive.py."""
    monkeypatch.setenv("P4SIM_PROFILE", "reference")


@pytest.fixture(scope="module")
def program():
    return load_program(PROGRAM)


TM_CONFIGS = [{}, {"depth_scope": "port", "scheduler": "wrr", "weights": [2, 1, 3, 1, 1, 1, 1, 1]}]


def make(program, tm: TrafficManager) -> Switch:
    sw = Switch(program, tm=tm)
    sw.clone_session_set(5, [(7, 3)])
    sw.clone_session_set(6, [(8, 4), (4, 5)], truncate=70)
    sw.mc_group_set(1, [(2, 1), (3, 2), (6, 3)])
    sw.mc_group_set(2, [(4, 9)])
    tm.set_port_rate(4, bits_per_s=10e9)  # 1,000-byte frames: 819 ns each
    tm.set_queue_capacity(4, 0, 3)
    tm.set_queue_capacity(4, 2, 2)
    tm.set_port_rate(5, pps=100_000)  # 10 us per packet
    tm.set_queue_capacity(9, 1, 0)  # every packet to port 9, priority 1, is dropped
    return sw


def frame(rng: random.Random) -> bytes:
    port = rng.choice([1, 2, 3, 4, 4, 5, 6, 9, 511])
    prio = rng.choice([0, 0, 0, 1, 2])
    d = port | prio << 9
    if rng.random() < 0.1:
        d |= rng.choice([1, 2, 3]) << 12  # multicast (group 3 has no replicas: a drop)
    for bit in (20, 21, 22, 23, 24, 25):
        if rng.random() < 0.06:
            d |= 1 << bit
    size = rng.choice([64, 200, 1000])
    return d.to_bytes(6, "big") + rng.randbytes(6) + b"\x08\x00" + rng.randbytes(size - 14)


def pfc(quanta: int) -> bytes:
    body = (0x0101).to_bytes(2, "big") + (0xFF).to_bytes(2, "big") + quanta.to_bytes(2, "big") * 8
    f = bytes.fromhex("0180c2000001") + bytes(6) + b"\x88\x08" + body
    return f + bytes(60 - len(f))


def drive(sw: Switch, seed: int, n: int = 600) -> list:
    """Random traffic in virtual time: what came out, the counters, the TM's statistics."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.3:
            sw.advance(rng.choice([1, 500, 900, 5_000, 20_000]))
        elif r < 0.33:
            sw.send(rng.choice([4, 6]), pfc(rng.choice([0, 3, 40])))  # pause / resume a port
        elif r < 0.35:
            sw.run_until_idle()
        sw.send(rng.choice([0, 1, 2]), frame(rng))
        if rng.random() < 0.2:
            out += [(o.port, o.data, o.time_ns) for o in sw.receive()]
    sw.run_until_idle()
    out += [(o.port, o.data, o.time_ns) for o in sw.receive()]
    return [out, dict(sw.stats), sw.tm.stats(), sw.now(), sw.log]


def counting(tm: TrafficManager) -> list[int]:
    """Count the packets that took the fast path (send_now let them through)."""
    taken = [0, 0]
    real = tm.send_now

    def send_now(*a):
        tx = real(*a)
        taken[tx >= 0] += 1
        return tx

    tm.send_now = send_now  # type: ignore[method-assign]
    return taken


@pytest.mark.parametrize("seed,config", [(1, 0), (2, 0), (3, 1), (4, 1)])
def test_fast_path_matches_queued_path(program, seed: int, config: int) -> None:
    tm = TrafficManager(**TM_CONFIGS[config])
    taken = counting(tm)
    fast = drive(make(program, tm), seed)
    ref = drive(make(program, QueuedTM(**TM_CONFIGS[config])), seed)
    assert fast == ref
    out = fast[0]
    assert len(out) > 300
    # the mix reached both paths and the cases the comparison is about
    assert taken[1] > 100 and taken[0] > 100
    echo = [(port, d[14:]) for port, d, _ in out if len(d) >= 14 + 50]
    assert sum(int.from_bytes(e[16:20], "big") > 0 for _, e in echo) > 20  # enq_qdepth
    assert sum(int.from_bytes(e[24:28], "big") > 0 for _, e in echo) > 5  # deq_qdepth
    assert sum(int.from_bytes(e[20:24], "big") > 0 for _, e in echo) > 20  # deq_timedelta
    assert {int.from_bytes(e[32:36], "big") for _, e in echo} == {0, 1, 2, 5}  # instance types
    assert {e[43] for _, e in echo} == {0, 1}  # passes: resubmitted or recirculated ones came out
    assert {len(d) for _, d, _ in out} >= {40, 70}  # truncate(), clone session truncation
    assert fast[1]["tm_drops"] > 0 and fast[1]["drops"] > 0 and fast[1]["pfc_rx"] > 0


def test_fast_path_fills_egress_metadata(program) -> None:
    """One packet through an idle port at t = 7 us: what egress sees, field by field."""
    sw = make(program, TrafficManager())
    taken = counting(sw.tm)
    sw.advance(7_000)
    sw.send(2, (1).to_bytes(6, "big") + bytes(6) + b"\x08\x00" + bytes(50))
    (o,) = sw.receive()
    assert taken == [0, 1] and o.port == 1 and o.time_ns == 7_000
    e = o.data[14:]
    fields = [
        int.from_bytes(e[a:b], "big")
        for a, b in [
            (0, 6),
            (6, 12),
            (12, 16),
            (16, 20),
            (20, 24),
            (24, 28),
            (28, 30),
            (30, 32),
            (32, 36),
            (36, 40),
        ]
    ]
    # ig_ts, eg_ts, enq_ts (us), enq_qdepth, deq_td, deq_qdepth, eport, ingress_port, itype, plen
    assert fields == [7, 7, 7, 0, 0, 0, 1, 2, 0, 64]
    assert e[48:50] == bytes(2)  # egress_spec reads 0 in egress
    port = sw.tm.stats()["ports"][1]
    one = [1, 0, 0, 0, 0, 0, 0, 0]
    assert (port["enqueued"], port["dequeued"], port["max_depth"], port["tx_bytes"]) == (
        one,
        one,
        one,
        64,
    )


@pytest.mark.parametrize("plant", ["tx", "enq_qdepth", "timestamp"])
def test_comparison_catches_a_planted_fast_path_bug(program, plant: str, monkeypatch) -> None:
    """Negative control: a fast path off by one in its time or in one metadata field fails."""
    tm = TrafficManager()
    sw = make(program, tm)
    if plant == "tx":
        real = tm.send_now
        tm.send_now = lambda *a: (lambda tx: tx + 1 if tx >= 0 else tx)(real(*a))  # type: ignore[method-assign]
    else:
        run = sw._egress_run

        def planted(p, hdr, meta, sm, *rest):
            if p is None:  # only the fast path's packets
                if plant == "enq_qdepth":
                    sm.f_enq_qdepth = 1
                else:
                    sm.f_egress_global_timestamp += 1
            return run(p, hdr, meta, sm, *rest)

        monkeypatch.setattr(sw, "_egress_run", planted)
    assert drive(sw, 1, 150) != drive(make(program, QueuedTM()), 1, 150)


def _record(p) -> tuple:
    return (
        p.state,
        p.enq_timestamp,
        p.enq_qdepth,
        p.deq_qdepth,
        p.deq_timedelta,
        p.tx_start_ns,
        p.tx_end_ns,
    )


@pytest.mark.parametrize("config", [0, 1])
def test_send_now_is_enqueue_then_dequeue(config: int) -> None:
    """The traffic manager alone: send_now (enqueue when it declines) against enqueue +
    dequeue, step by step: departures, statistics, next departure, the queues' clock."""
    from p4sim.model import QueuedPacket

    rng = random.Random(7)
    a, b = TrafficManager(**TM_CONFIGS[config]), TrafficManager(**TM_CONFIGS[config])
    for tm in (a, b):
        tm.set_port_rate(1, bits_per_s=1e9)
        tm.set_port_rate(2, pps=1e6)
        tm.set_queue_capacity(3, 2, 0)
    now, took = 0, 0
    for n in range(3000):
        now += rng.choice([0, 0, 10, 300, 1_000, 10_000])
        if rng.random() < 0.03:
            cev, q = rng.choice([1, 4, 0xFF]), [rng.choice([0, 2, 30])] * 8
            a.pause(1, cev, q, now)
            b.pause(1, cev, q, now)
        port, prio, length = (
            rng.choice([1, 2, 3, 4]),
            rng.choice([0, 2, 2, 9]),
            rng.choice([64, 1500]),
        )
        tx = a.send_now(port, prio, length, now)
        if tx >= 0:
            took += 1
            got = [(n, now, 0, 0, 0, now, now + tx)]
        else:
            a.enqueue(QueuedPacket(port, prio, length, n), now)
            got = [_record(p) for p in a.dequeue(now)]
        b.enqueue(QueuedPacket(port, prio, length, n), now)
        assert got == [_record(p) for p in b.dequeue(now)]
        assert (
            a.stats() == b.stats() and a.next_departure() == b.next_departure() and a._now == b._now
        )
    assert 200 < took < 2500  # both ways taken
