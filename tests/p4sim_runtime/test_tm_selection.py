"""The traffic manager's selection caches (per-port next start, earliest port) change how
the next packet is found, never which packet leaves or when: the service order under
PFC pause and resume is pinned, and random traffic is checked packet for packet against
a scan of every queue (an independent oracle on purpose: the selection as the docstring of
tm.py states it, recomputed from scratch at each step with no cache)."""

from __future__ import annotations

import random

import pytest

from p4sim.model import QueuedPacket
from p4sim.runtime.tm import NUM_PRIORITIES, TrafficManager

BPS = 10_000_000_000


def pkt(port: int, prio: int, tag: object, length: int = 1226) -> QueuedPacket:
    # 1,226 B + 24 B of wire overhead = 1,250 B = 1,000 ns at 10 Gb/s
    return QueuedPacket(egress_port=port, priority=prio, length=length, state=tag)


def _quanta(prio: int, q: int) -> list[int]:
    out = [0] * NUM_PRIORITIES
    out[prio] = q
    return out


def test_service_order_under_pause_and_resume():
    """Port 1 at 10 Gb/s: a packet of priority 0 is on the wire, then 3, 5 and 7 queue up.
    Priority 7 is paused (XOFF), so 5 leaves first, then 3 (strict priority over what may
    go); XON for 7 at 2,500 ns resumes it: it leaves at the next free instant (3,000 ns),
    before the rest of 3 and 0. A pause that ends by itself (7 quanta = 358.4 ns, rounded)
    releases its queue at its end when the port is idle."""
    tm = TrafficManager()
    tm.set_port_rate(1, bits_per_s=BPS)
    tm.enqueue(pkt(1, 0, "a0"), 0)  # leaves at once: the port is busy until 1,000
    for tag, prio in (("b3", 3), ("c5", 5), ("d7", 7), ("e3", 3), ("f0", 0), ("g5", 5)):
        tm.enqueue(pkt(1, prio, tag), 100)
    tm.pause(1, 1 << 7, _quanta(7, 0xFFFF), 200)
    assert tm.next_departure() == 1000
    out = tm.dequeue(2500)
    assert [(p.state, p.tx_start_ns) for p in out] == [("a0", 0), ("c5", 1000), ("g5", 2000)]
    tm.pause(1, 1 << 7, _quanta(7, 0), 2500)  # XON
    out = tm.dequeue(10_000)
    assert [(p.state, p.tx_start_ns) for p in out] == [
        ("d7", 3000),
        ("b3", 4000),
        ("e3", 5000),
        ("f0", 6000),
    ]
    assert [p.deq_timedelta for p in out] == [2900, 3900, 4900, 5900]
    # a short pause on an idle port: the packet waits for the timer, not for an XON
    tm.pause(1, 1 << 2, _quanta(2, 7), 20_000)  # 7 x 512 bits at 10 Gb/s = 358.4 ns
    tm.enqueue(pkt(1, 2, "h2"), 20_100)
    assert tm.next_departure() == 20_358
    assert [(p.state, p.tx_start_ns) for p in tm.dequeue(30_000)] == [("h2", 20_358)]
    assert tm.idle()


def test_ports_tie_in_number_order_and_a_pause_on_one_port_leaves_the_other():
    """Ports 9 and 4 paused by the same timer (100 quanta = 5,120 ns at 10 Gb/s) become
    eligible at the same instant: port 4 is served first, then 9, round after round; port 2,
    paused until an XON, waits for it."""
    tm = TrafficManager()
    for port in (4, 2, 9):
        tm.set_port_rate(port, bits_per_s=BPS)
    tm.pause(9, 1 << 3, _quanta(3, 100), 0)
    tm.pause(4, 1 << 3, _quanta(3, 100), 0)
    tm.pause(2, 1 << 3, _quanta(3, 0xFFFF), 0)
    for port in (9, 4, 2):
        tm.enqueue(pkt(port, 3, f"p{port}a"), 0)
        tm.enqueue(pkt(port, 3, f"p{port}b"), 0)
    assert tm.next_departure() == 5120
    out = tm.dequeue(8000)
    assert [(p.state, p.tx_start_ns) for p in out] == [
        ("p4a", 5120),
        ("p9a", 5120),
        ("p4b", 6120),
        ("p9b", 6120),
    ]
    tm.pause(2, 1 << 3, _quanta(3, 0), 8000)
    assert [(p.state, p.tx_start_ns) for p in tm.dequeue(20_000)] == [("p2a", 8000), ("p2b", 9000)]


class ScanTM(TrafficManager):
    """The oracle: every queue of every active port scanned at each step, no cache."""

    def _earliest(self):
        best = None
        for port in sorted(self._active):
            state = self._ports[port]
            for prio in range(NUM_PRIORITIES):
                t = self._eligible_at(state, prio)
                if t is not None and (best is None or t < best[0]):
                    best = (t, port)
        return best

    def _pick(self, state, t):
        eligible = [
            p for p in self._order if (e := self._eligible_at(state, p)) is not None and e <= t
        ]
        if self.scheduler == "strict" or not eligible:
            return eligible[0] if eligible else None
        return super()._pick(state, t)


def _drive(tm: TrafficManager, seed: int) -> list[tuple]:
    """Random enqueues, pause frames (XOFF, XON, short pauses), dequeues on three ports of
    different rates (one unlimited); everything the TM reports, in order."""
    rng = random.Random(seed)
    tm.set_port_rate(1, bits_per_s=BPS)
    tm.set_port_rate(2, bits_per_s=BPS // 4)
    tm.set_port_rate(3, pps=2_000_000)
    log: list[tuple] = []
    now = 0
    n = 0
    for _ in range(400):
        now += rng.choice((0, 0, 37, 250, 1000, 3000))
        op = rng.random()
        if op < 0.6:
            port = rng.choice((1, 2, 3, 5))
            ok = tm.enqueue(pkt(port, rng.randrange(8), n, rng.randrange(60, 1500)), now)
            log.append(("enq", n, ok))
            n += 1
        elif op < 0.8:
            cev = rng.randrange(1, 256)
            q = [rng.choice((0, 0, 3, 50, 0xFFFF)) for _ in range(8)]
            tm.pause(rng.choice((1, 2, 3, 5)), cev, q, now)
        log.append(("next", tm.next_departure()))
        for p in tm.dequeue(now):
            log.append(
                (
                    "deq",
                    p.state,
                    p.egress_port,
                    p.priority,
                    p.tx_start_ns,
                    p.tx_end_ns,
                    p.enq_qdepth,
                    p.deq_qdepth,
                    p.deq_timedelta,
                )
            )
    for p in tm.dequeue(now + 10**9):
        log.append(("deq", p.state, p.tx_start_ns))
    log.append(("stats", repr(tm.stats())))
    return log


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"depth_scope": "port"},
        {"priority_order": "low_first"},
        {"scheduler": "wrr", "weights": [1, 2, 3, 1, 2, 3, 1, 4]},
        {"default_capacity": 4},
    ],
)
def test_cached_selection_equals_a_full_scan(kw):
    for seed in range(6):
        got, want = _drive(TrafficManager(**kw), seed), _drive(ScanTM(**kw), seed)
        assert got == want, (kw, seed)
        assert sum(1 for e in got if e[0] == "deq") > 100  # the traffic really moved
