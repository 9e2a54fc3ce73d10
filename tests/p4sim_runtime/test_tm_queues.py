"""Traffic manager: queue depths, drops, schedulers, rates and PFC, all in virtual time."""

from __future__ import annotations

import random

import pytest

from p4sim.model import QueuedPacket
from p4sim.runtime.tm import TrafficManager, VirtualClock

PORT = 3


def pkt(port: int = PORT, prio: int = 0, length: int = 1000, tag: object = None) -> QueuedPacket:
    return QueuedPacket(egress_port=port, priority=prio, length=length, state=tag)


def test_2to1_incast_depths_drops_and_timing() -> None:
    # Two 10 Gb/s senders each send 976-byte frames (1,000 B of line time with FCS,
    # preamble, SFD and IFG) back to back into one 10 Gb/s port: one frame per 800 ns
    # leaves, two arrive, so the queue grows by one per round.
    tm = TrafficManager()  # 64 packets per queue, like BMv2
    tm.set_port_rate(PORT, bits_per_s=10e9)
    rounds = 100
    enq_depths: list[tuple[int, int]] = []
    accepted: list[QueuedPacket] = []
    drops = 0
    for k in range(rounds):
        t = k * 800
        a, b = pkt(tag=("A", k), length=976), pkt(tag=("B", k), length=976)
        ok_a, ok_b = tm.enqueue(a, t), tm.enqueue(b, t)
        enq_depths.append((a.enq_qdepth if ok_a else -1, b.enq_qdepth if ok_b else -1))
        accepted += [p for p, ok in ((a, ok_a), (b, ok_b)) if ok]
        drops += (not ok_a) + (not ok_b)
    # round 0: A leaves at once (idle port), B finds an empty queue; round k: the queue
    # holds k-1 frames after the departure at that instant, so A sees k-1 and B sees k.
    assert enq_depths[0] == (0, 0)
    for k in range(1, 64):
        assert enq_depths[k] == (k - 1, k), k
    # from round 64 the queue is full (64) after A: B is tail-dropped every round
    for k in range(64, rounds):
        assert enq_depths[k] == (63, -1), k
    assert drops == rounds - 64 == 36
    stats = tm.stats()["ports"][PORT]
    assert stats["drops"][0] == 36 and sum(stats["drops"]) == 36
    assert stats["max_depth"][0] == 64
    assert tm.depth(PORT, 0) == 64

    # drain: FIFO order, exactly one frame per 800 ns, deq metadata per BMv2
    out = tm.dequeue(10**9)
    assert [p.state for p in out] == [p.state for p in accepted]
    assert [p.tx_start_ns for p in out] == [i * 800 for i in range(len(accepted))]
    assert all(p.tx_end_ns == p.tx_start_ns + 800 for p in out)
    for p in out:
        assert p.deq_timedelta == p.tx_start_ns - p.enq_timestamp
    # depth left behind by each frame: the backlog, then it drains to zero
    assert out[-1].deq_qdepth == 0 and out[-2].deq_qdepth == 1
    assert max(p.deq_qdepth for p in out) == 63
    assert tm.idle() and tm.next_departure() is None


def test_unlimited_rate_sends_at_once() -> None:
    tm = TrafficManager()
    for _ in range(5):
        p = pkt()
        assert tm.enqueue(p, 42)
        assert p.enq_qdepth == 0
    out = tm.dequeue(42)
    assert len(out) == 5 and all(p.tx_start_ns == 42 and p.deq_timedelta == 0 for p in out)


def test_pfc_pauses_exactly_the_enabled_priority_for_exactly_the_time() -> None:
    tm = TrafficManager()
    tm.set_port_rate(PORT, bits_per_s=10e9)  # 1 quantum = 512 bits = 51.2 ns
    tm.pause(PORT, class_enable=1 << 3, quanta=[0, 0, 0, 100, 0, 0, 0, 0], now_ns=1000)
    assert tm.is_paused(PORT, 3, 1000) and not tm.is_paused(PORT, 5, 1000)
    p3, p5 = pkt(prio=3, length=64), pkt(prio=5, length=64)
    tm.enqueue(p3, 1000)
    tm.enqueue(p5, 1000)
    # priority 5 is not paused: it leaves at once even though priority 3 is served first
    assert tm.dequeue(6119) == [p5]
    assert tm.next_departure() == 1000 + 100 * 512 * 1_000_000_000 // 10_000_000_000 == 6120
    assert tm.dequeue(6120) == [p3]
    assert p3.tx_start_ns == 6120 and p3.deq_timedelta == 5120
    s = tm.stats()["ports"][PORT]
    assert s["pauses"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert s["paused_ns"][3] == 5120


def test_pfc_xon_resumes_and_a_new_pause_restarts_the_timer() -> None:
    tm = TrafficManager()
    tm.set_port_rate(PORT, bits_per_s=100e9)  # 1 quantum = 5.12 ns
    tm.pause(PORT, 1 << 2, [0, 0, 0xFFFF, 0, 0, 0, 0, 0], 0)
    p = pkt(prio=2)
    tm.enqueue(p, 10)
    tm.pause(PORT, 1 << 2, [0, 0, 1000, 0, 0, 0, 0, 0], 100)  # restarts: until 100+5120
    assert tm.dequeue(5219) == []
    assert tm.next_departure() == 5220
    tm.pause(PORT, 1 << 2, [0] * 8, 3000)  # XON
    assert tm.dequeue(3000) == [p] and p.tx_start_ns == 3000
    s = tm.stats()["ports"][PORT]
    assert s["pauses"][2] == 2 and s["resumes"][2] == 1
    assert s["paused_ns"][2] == 3000  # paused from 0 to 3000


def test_8023x_pause_stops_every_priority_at_default_link_speed() -> None:
    tm = TrafficManager(default_link_bps=10_000_000_000)  # no port rate: 10 Gb/s link
    tm.pause(PORT, 0xFF, [10] * 8, 0)  # 10 quanta = 512 ns at 10 Gb/s
    pkts = [pkt(prio=i) for i in range(8)]
    for p in pkts:
        tm.enqueue(p, 0)
    assert tm.dequeue(511) == []
    # unlimited rate: all leave at once, priority 7 first (BMv2's strict priority)
    assert tm.dequeue(512) == pkts[::-1]
    assert tm.stats()["ports"][PORT]["pauses"] == [1] * 8


def test_strict_priority_order_both_ways() -> None:
    for order, expected in (("low_first", list(range(8))), ("high_first", list(range(7, -1, -1)))):
        tm = TrafficManager(priority_order=order)
        tm.set_port_rate(PORT, pps=1000)
        blocker = pkt(prio=0)
        tm.enqueue(blocker, 0)  # occupies the port for 1 ms
        for prio in (5, 0, 7, 2, 1, 6, 3, 4):
            tm.enqueue(pkt(prio=prio), 0)
        out = tm.dequeue(10**10)
        assert out[0] is blocker
        assert [p.priority for p in out[1:]] == expected, order
        assert [p.tx_start_ns for p in out] == [i * 1_000_000 for i in range(9)]


def test_strict_priority_starves_lower_priority() -> None:
    tm = TrafficManager()  # BMv2's order: the higher priority number is served first
    tm.set_port_rate(PORT, pps=1_000_000)  # 1 us per packet
    tm.enqueue(pkt(prio=1, tag="low"), 0)  # leaves at 0
    tm.enqueue(pkt(prio=1, tag="low2"), 0)
    for i in range(5):
        tm.enqueue(pkt(prio=4, tag=i), 0)
    out = tm.dequeue(10**9)
    assert [p.state for p in out] == ["low", 0, 1, 2, 3, 4, "low2"]


def test_wrr_shares_by_weight() -> None:
    tm = TrafficManager(scheduler="wrr", weights=[1, 1, 1, 1, 1, 1, 1, 3])
    tm.set_port_rate(PORT, pps=1000)
    tm.enqueue(pkt(prio=0, tag="first"), 0)  # starts at once
    for i in range(6):  # service order 7, 6, ..., 0: after priority 0 comes 7
        tm.enqueue(pkt(prio=7, tag=f"a{i}"), 0)
        tm.enqueue(pkt(prio=6, tag=f"b{i}"), 0)
    out = [p.state for p in tm.dequeue(10**12)]
    assert out == ["first", "a0", "a1", "a2", "b0", "a3", "a4", "a5", "b1", "b2", "b3", "b4", "b5"]


def test_capacity_per_queue_and_bad_priority() -> None:
    tm = TrafficManager(default_capacity=2)
    tm.set_port_rate(PORT, pps=1)
    tm.set_queue_capacity(PORT, 6, 4)
    results = [tm.enqueue(pkt(prio=6), 0) for _ in range(7)]
    # first leaves at once (port idle), then 4 fit, then drops
    assert results == [True] * 5 + [False] * 2
    assert [tm.enqueue(pkt(prio=1), 0) for _ in range(3)] == [True, True, False]
    assert tm.depth(PORT, 6) == 4 and tm.depth(PORT, 1) == 2
    assert tm.stats()["ports"][PORT]["drops"] == [0, 1, 0, 0, 0, 0, 2, 0]
    assert not tm.enqueue(pkt(prio=8), 0)
    assert tm.stats()["bad_priority_drops"] == 1
    with pytest.raises(ValueError):
        tm.set_queue_capacity(PORT, 8, 1)
    with pytest.raises(ValueError):
        TrafficManager(scheduler="fifo")


def test_nb_queues_drops_priorities_beyond_it_as_bmv2() -> None:
    # BMv2 started without --priority-queues has one queue: priority 3 is dropped
    tm = TrafficManager(nb_queues=1)
    assert tm.enqueue(pkt(prio=0), 0)
    assert not tm.enqueue(pkt(prio=3), 0)
    assert tm.stats()["bad_priority_drops"] == 1
    tm4 = TrafficManager(nb_queues=4)
    assert tm4.enqueue(pkt(prio=3), 0) and not tm4.enqueue(pkt(prio=4), 0)
    for bad in (0, 9):
        with pytest.raises(ValueError):
            TrafficManager(nb_queues=bad)


def test_depth_scope_port_counts_every_priority() -> None:
    tm = TrafficManager(depth_scope="port")
    tm.set_port_rate(PORT, pps=1000)
    tm.enqueue(pkt(prio=0), 0)  # on the wire
    a, b, c = pkt(prio=1), pkt(prio=2), pkt(prio=1)
    for p in (a, b, c):
        tm.enqueue(p, 0)
    assert (a.enq_qdepth, b.enq_qdepth, c.enq_qdepth) == (0, 1, 2)
    out = tm.dequeue(10**10)
    assert [p.deq_qdepth for p in out[1:]] == [2, 1, 0]


def test_bit_rate_serialization_depends_on_length() -> None:
    tm = TrafficManager()
    tm.set_port_rate(PORT, bits_per_s=1e9)  # 8 ns per byte
    a, b = pkt(length=64), pkt(length=1500)
    tm.enqueue(a, 0)
    tm.enqueue(b, 0)
    c = pkt(length=100)
    tm.enqueue(c, 5)
    out = tm.dequeue(10**9)
    # each frame holds the port for its length + 24 B (FCS 4, preamble 7, SFD 1, IFG 12)
    assert [p.tx_start_ns for p in out] == [0, 88 * 8, 88 * 8 + 1524 * 8]
    assert out[2].tx_end_ns == 88 * 8 + 1524 * 8 + 124 * 8


def test_wire_overhead_is_configurable_and_caps_payload_rate() -> None:
    from p4sim.runtime.tm import WIRE_OVERHEAD_BYTES, wire_bytes

    assert WIRE_OVERHEAD_BYTES == 24 and wire_bytes(1082) == 1106
    bare = TrafficManager(wire_overhead=0)
    bare.set_port_rate(PORT, bits_per_s=1e9)
    bare.enqueue(pkt(length=100), 0)
    bare.enqueue(pkt(length=100), 0)
    assert [p.tx_start_ns for p in bare.dequeue(10**6)] == [0, 800]
    with pytest.raises(ValueError):
        TrafficManager(wire_overhead=-1)
    # 1,000 back-to-back 1,082-byte RoCE frames (1,024 B payload) at 10 Gb/s: the payload
    # rate is 10e9 * 1024 / 1106 = 9.259 Gb/s, not the 9.46 Gb/s of bare frames
    tm = TrafficManager(default_capacity=2000)
    tm.set_port_rate(PORT, bits_per_s=10e9)
    for _ in range(1000):
        tm.enqueue(pkt(length=1082), 0)
    out = tm.dequeue(10**9)
    payload_bps = 1000 * 1024 * 8 / (out[-1].tx_end_ns / 1e9)
    assert payload_bps == pytest.approx(10e9 * 1024 / 1106, rel=1e-4)


def _random_run(seed: int, eager: bool) -> list[tuple]:
    rng = random.Random(seed)
    tm = TrafficManager(default_capacity=8)
    for port in (1, 2, 3):
        tm.set_port_rate(port, bits_per_s=rng.choice([1e9, 10e9, 25e9]))
    t = 0
    out: list[QueuedPacket] = []
    for i in range(400):
        t += rng.randrange(0, 600)
        if rng.random() < 0.05:
            tm.pause(
                rng.choice((1, 2, 3)),
                rng.randrange(256),
                [rng.randrange(0, 50) for _ in range(8)],
                t,
            )
        p = pkt(
            port=rng.choice((1, 2, 3)), prio=rng.randrange(8), length=rng.randrange(64, 1500), tag=i
        )
        tm.enqueue(p, t)
        if eager:
            out += tm.dequeue(t)
    out += tm.dequeue(t + 10**9)
    return [
        (
            p.state,
            p.egress_port,
            p.tx_start_ns,
            p.tx_end_ns,
            p.enq_qdepth,
            p.deq_qdepth,
            p.deq_timedelta,
        )
        for p in out
    ]


def test_deterministic_whatever_the_call_pattern() -> None:
    first = _random_run(7, eager=True)
    assert first == _random_run(7, eager=True)
    assert first == _random_run(7, eager=False)
    assert len(first) > 100
    # the departure log is in time order
    starts = [row[2] for row in first]
    assert starts == sorted(starts)


def test_virtual_clock() -> None:
    clock = VirtualClock()
    assert clock.advance(5) == 5 and clock.now() == 5
    with pytest.raises(ValueError):
        clock.set(4)


def test_default_line_rate_applies_to_every_port() -> None:
    tm = TrafficManager(default_rate_bps=1e9)  # 8 ns per byte
    a, b = pkt(port=7, length=100), pkt(port=7, length=100)
    tm.enqueue(a, 0)
    tm.enqueue(b, 0)
    tm.set_port_rate(9, pps=1)  # an explicit rate still wins
    out = tm.dequeue(10**6)
    assert [p.tx_start_ns for p in out] == [0, 124 * 8]  # 100 B + 24 B of wire overhead
    assert tm.stats()["ports"][7]["bits_per_s"] == 1_000_000_000
    assert tm.stats()["ports"][9]["pps"] == 1.0
    with pytest.raises(ValueError):
        TrafficManager(default_rate_bps=0)


def test_simultaneous_departures_go_in_port_order() -> None:
    """Mutants Q21/Q22 (ties broken by the highest or the last port). The docstring's
    contract: departures in time order, ports in number order on ties, whatever order the
    packets were queued in (egress runs them in that order: shared registers see it)."""
    tm = TrafficManager()
    for port in (5, 1, 3):
        tm.set_port_rate(port, bits_per_s=10e9)
    for port in (5, 1, 3):
        tm.enqueue(pkt(port=port, length=976, tag=(port, 0)), 0)
        tm.enqueue(pkt(port=port, length=976, tag=(port, 1)), 0)
    out = tm.dequeue(10**6)
    assert [p.state for p in out] == [(5, 0), (1, 0), (3, 0), (1, 1), (3, 1), (5, 1)]
    assert [p.tx_start_ns for p in out] == [0, 0, 0, 800, 800, 800]


def test_set_all_capacities_applies_to_ports_not_seen_yet() -> None:
    """Mutant Q26 (only the existing ports). BMv2 `set_queue_depth N` without a port sets
    every port's queues, including ports no packet has used yet."""
    tm = TrafficManager()
    tm.set_port_rate(1, bits_per_s=1e9)
    tm.set_all_capacities(2)
    tm.set_port_rate(7, bits_per_s=1e9)  # a new port: the new default applies
    results = [tm.enqueue(pkt(port=7, tag=i), 0) for i in range(4)]
    # the first leaves at once (idle port), two fill the queue, the fourth is tail-dropped
    assert results == [True, True, True, False]
    assert tm.stats()["ports"][7]["capacity"] == [2] * 8


def test_pause_time_rounds_to_the_nearest_ns() -> None:
    """Mutant Q27 (truncated). 3 quanta at 10 Gb/s = 3 * 512 bits = 153.6 ns: 154 ns,
    rounded half up as the docstring says (truncation would give 153)."""
    tm = TrafficManager()
    tm.set_port_rate(PORT, bits_per_s=10e9)
    tm.pause(PORT, 1 << 2, [0, 0, 3, 0, 0, 0, 0, 0], 1000)
    assert tm.is_paused(PORT, 2, 1153) and not tm.is_paused(PORT, 2, 1154)
    assert tm.stats()["ports"][PORT]["paused_ns"][2] == 154


def test_tx_bytes_counts_queued_departures_too() -> None:
    """Mutant Q28 (only packets that left at once counted): tx_bytes is every byte sent."""
    tm = TrafficManager()
    tm.set_port_rate(PORT, bits_per_s=10e9)
    for length in (100, 200, 300):
        tm.enqueue(pkt(length=length), 0)
    assert len(tm.dequeue(10**6)) == 3
    assert tm.stats()["ports"][PORT]["tx_bytes"] == 600
