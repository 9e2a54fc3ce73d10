"""p4sim's traffic manager: per-port priority queues, port service rates, PFC reception.

Pure logic on integer nanoseconds: callers pass the time (`now_ns`) and the traffic manager
never reads a clock itself, so the same calls give the same results to the nanosecond.
`VirtualClock` and `WallClock` are the two clocks a switch drives it with.

What BMv2's simple_switch does, and what we copy (behavioral-model after PR #1270 and
#1276, 2024; checked in its `simple_switch.cpp` and `queueing.h`):
- each egress port has `nb_queues_per_port` priority queues (BMv2's `--priority-queues`,
  default 1 there; `nb_queues` here, default 8), selected by `standard_metadata.priority`;
  a priority out of range (>= that number) drops the packet;
- priority 7 is served first (strict priority, highest priority first), as BMv2: since
  PR #1276 `SimpleSwitch::enqueue` pushes into queue index `priority` and
  `QueueingLogicPriRL::pop_back` (bm_sim/queueing.h) serves the highest index first;
  before it the index was `nb_queues_per_port - 1 - priority` and `pop_back` scanned
  from index 0 up, so priority 7 also left first. `priority_order="low_first"` flips it
  (priority 0 first), a model of no BMv2 build, kept for experiments;
- `enq_qdepth` = packets in that priority queue *before* this packet was added;
- `deq_qdepth` = packets left in that priority queue *after* this packet was removed;
- `enq_timestamp` is the enqueue time and `deq_timedelta` the time spent queued (BMv2
  shows both in microseconds; the traffic manager keeps nanoseconds and the switch
  converts when it fills `standard_metadata`);
- a full queue tail-drops (capacity in packets, default 64 as in BMv2);
- `set_queue_rate` in packets per second; we also offer bits per second (a real line
  rate: the port is busy `wire_bytes(length) * 8 / rate` after a packet starts, see
  "Wire accounting" below). One difference: in
  BMv2 (QueueingLogicPriRL) the rate applies to each priority queue separately, so N busy
  priorities of a port send up to N times it; here the rate is the port's, shared by its
  priorities, as on a real link.
`depth_scope="port"` reproduces the pre-2024 BMv2 behaviour where both depths counted
every priority queue of the port.

Timing model: a port transmits one packet at a time. A packet *leaves its queue* (and is
handed to egress processing) when the port is free and the scheduler picks it; the port
then stays busy for the packet's serialization time (0 when the rate is unlimited, the
default). `dequeue(now)` returns every packet that left by `now`, each with two extra
attributes: `tx_start_ns` (when it left the queue) and `tx_end_ns` (when its last bit
left the port).

Wire accounting (bit rates only; BMv2 has none, its rates are packets per second): a
frame here carries no FCS, and on the wire it also takes a 7-byte preamble, a 1-byte SFD
and a 12-byte inter-frame gap, so it holds a port for `wire_bytes(length) = length + 4 +
20` bytes (`wire_overhead` to change it, 0 for the bare frame). A 10 Gb/s port thus moves
1,082-byte RoCEv2 frames (1,024 B payload) at 10e9 * 1024 / 1106 = 9.26 Gb/s of payload.

PFC (802.1Qbb) reception: `pause(port, class_enable, quanta, now)` stops priority i of the
port from starting new packets for `quanta[i] * 512` bit times at the port's speed (its
bit rate, or `default_link_bps` when the port has no bit rate); quanta 0 resumes (XON);
a new pause frame restarts the timer; a packet already on the wire finishes.
802.3x PAUSE is `class_enable=0xff` with eight equal quanta.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from p4sim.model import QueuedPacket

NUM_PRIORITIES = 8
PAUSE_QUANTUM_BITS = 512
FCS_BYTES = 4  # frames in p4sim carry no FCS; the wire does
PREAMBLE_SFD_IFG_BYTES = 7 + 1 + 12  # preamble, start-of-frame delimiter, inter-frame gap
WIRE_OVERHEAD_BYTES = FCS_BYTES + PREAMBLE_SFD_IFG_BYTES


def wire_bytes(frame_len: int, overhead: int = WIRE_OVERHEAD_BYTES) -> int:
    """Bytes of line time a frame of `frame_len` bytes (no FCS) takes on an Ethernet link."""
    return frame_len + overhead


NS_PER_S = 1_000_000_000
_STALE = object()  # TrafficManager._best: to be recomputed


@dataclass(
    slots=True
)  # slots: the compiled driver reads them at their offsets (p4sim.compiled.slots)
class _PortState:
    capacity: list[int]
    queues: list[deque[QueuedPacket]] = field(
        default_factory=lambda: [deque() for _ in range(NUM_PRIORITIES)]
    )
    bits_per_s: int | None = None  # line rate, None = unlimited
    pps: float | None = None  # packet rate, None = unlimited
    busy_until: int = 0  # ns at which the packet on the wire has left
    tx_rem: int = 0  # serialisation time carried over, in 1/bits_per_s ns
    paused_until: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    # WRR state: the priority being served and how many packets it sent this turn
    wrr_current: int = 0
    wrr_sent: int = 0
    # statistics, one slot per priority
    drops: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    enqueued: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    dequeued: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    pauses: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    resumes: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    paused_ns: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    max_depth: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    tx_bytes: int = 0

    def depth_total(self) -> int:
        return sum(len(q) for q in self.queues)


class TrafficManager:
    """Queues between ingress and egress, implementing `p4sim.model.TrafficManagerAPI`.

    scheduler: "strict" (default) or "wrr" (weighted round robin, `weights` per priority,
    a weight being the number of packets a priority may send in its turn).
    priority_order: "high_first" (default, as BMv2: priority 7 served first) or
    "low_first" (priority 0 first; not what BMv2 does).
    depth_scope: "queue" (BMv2 today) or "port" (all priority queues of the port).
    default_link_bps: the speed PFC pause quanta are measured at when a port has no
    bit rate (100 Gb/s, a common RoCE link).
    default_rate_bps: the line rate every port starts with (None: unlimited, as BMv2).
    nb_queues: priority queues per port, 1..8 (BMv2's `--priority-queues`): a packet with
    priority >= nb_queues is dropped, as BMv2 does.
    wire_overhead: bytes each frame adds to its length on a bit-rate port (FCS, preamble,
    SFD, inter-frame gap: 24); 0 serialises the bare frame.
    """

    # what the compiled driver's copy of send_now reads (p4sim/compiled/drive.py): slots,
    # read at their offsets (p4sim.compiled.slots); everything else stays in __dict__
    __slots__ = (
        "_active",
        "_departed",
        "nb_queues",
        "_ports",
        "_now",
        "scheduler",
        "weights",
        "__dict__",
        "__weakref__",
    )

    def __init__(
        self,
        default_capacity: int = 64,
        scheduler: str = "strict",
        *,
        weights: list[int] | None = None,
        priority_order: str = "high_first",
        depth_scope: str = "queue",
        default_link_bps: int = 100_000_000_000,
        default_rate_bps: float | None = None,
        nb_queues: int = NUM_PRIORITIES,
        wire_overhead: int = WIRE_OVERHEAD_BYTES,
    ) -> None:
        if wire_overhead < 0:
            raise ValueError("wire_overhead must be >= 0 bytes")
        self.wire_overhead = int(wire_overhead)
        if scheduler not in ("strict", "wrr"):
            raise ValueError(f"scheduler must be 'strict' or 'wrr', not {scheduler!r}")
        if priority_order not in ("high_first", "low_first"):
            raise ValueError(
                f"priority_order must be 'high_first' or 'low_first', not {priority_order!r}"
            )
        if depth_scope not in ("queue", "port"):
            raise ValueError(f"depth_scope must be 'queue' or 'port', not {depth_scope!r}")
        if default_capacity < 0:
            raise ValueError("queue capacity must be >= 0")
        if not 1 <= nb_queues <= NUM_PRIORITIES:
            raise ValueError(f"nb_queues must be 1..{NUM_PRIORITIES}, not {nb_queues}")
        self.nb_queues = nb_queues
        weights = list(weights) if weights is not None else [1] * NUM_PRIORITIES
        if len(weights) != NUM_PRIORITIES or any(w < 1 for w in weights):
            raise ValueError("weights: eight integers >= 1, one per priority")
        self.default_capacity = default_capacity
        self.scheduler = scheduler
        self.weights = weights
        self.priority_order = priority_order
        self.depth_scope = depth_scope
        self.default_link_bps = int(default_link_bps)
        if default_rate_bps is not None and default_rate_bps <= 0:
            raise ValueError("default_rate_bps must be > 0 (None for unlimited)")
        self.default_rate_bps = (
            int(round(default_rate_bps)) if default_rate_bps is not None else None
        )
        order = range(NUM_PRIORITIES)
        self._order: tuple[int, ...] = tuple(
            order if priority_order == "low_first" else reversed(order)
        )
        self._ports: dict[int, _PortState] = {}
        self._active: set[int] = set()  # ports with queued packets
        # Selection caches (they change which work is done, never which packet leaves):
        # each active port's next start time (absent: recompute), and the earliest
        # (time, port) over the active ports (_STALE: recompute; None: nothing queued).
        # A port's next start depends only on its queue heads' enqueue times, its pause
        # timers and busy_until, so it is dropped (_touch) whenever one of those changes:
        # an enqueue, a departure, a pause frame.
        self._start: dict[int, int] = {}
        self._best: tuple[int, int] | None | object = None
        self._departed: list[QueuedPacket] = []
        self._now = 0  # latest time the queues have been advanced to
        self.bad_priority_drops = 0

    # ------------------------------------------------------------ configuration

    def _port(self, port: int) -> _PortState:
        state = self._ports.get(port)
        if state is None:
            state = _PortState(
                capacity=[self.default_capacity] * NUM_PRIORITIES, bits_per_s=self.default_rate_bps
            )
            self._ports[port] = state
        return state

    def set_port_rate(
        self, port: int, bits_per_s: float | None = None, pps: float | None = None
    ) -> None:
        """Service rate of one egress port; both None = unlimited (BMv2's rate 0)."""
        if bits_per_s is not None and pps is not None:
            raise ValueError("give the rate in bits/s or in packets/s, not both")
        if (bits_per_s is not None and bits_per_s <= 0) or (pps is not None and pps <= 0):
            raise ValueError("a rate must be > 0 (None for unlimited)")
        state = self._port(port)
        state.bits_per_s = int(round(bits_per_s)) if bits_per_s is not None else None
        state.tx_rem = 0
        state.pps = float(pps) if pps is not None else None

    def set_queue_capacity(self, port: int, priority: int, packets: int) -> None:
        _check_priority(priority)
        if packets < 0:
            raise ValueError("queue capacity must be >= 0")
        self._port(port).capacity[priority] = packets

    def set_all_capacities(self, packets: int) -> None:
        """BMv2's `set_queue_depth N` without a port: every queue, present and future."""
        if packets < 0:
            raise ValueError("queue capacity must be >= 0")
        self.default_capacity = packets
        for state in self._ports.values():
            state.capacity = [packets] * NUM_PRIORITIES

    # ------------------------------------------------------------ the queues

    def enqueue(self, pkt: QueuedPacket, now_ns: int) -> bool:
        """Queue a packet after ingress; False when it is tail-dropped."""
        if self._active:
            self._advance(now_ns)
        elif now_ns > self._now:  # _advance with nothing queued only moves the clock
            self._now = now_ns
        prio = pkt.priority
        if not 0 <= prio < self.nb_queues:
            self.bad_priority_drops += 1  # BMv2: "Priority out of range, dropping packet"
            return False
        port = pkt.egress_port
        state = self._ports.get(port)
        if state is None:
            state = self._port(port)
        queue = state.queues[prio]
        if len(queue) >= state.capacity[prio]:
            state.drops[prio] += 1
            return False
        if not queue and state.busy_until <= now_ns and state.paused_until[prio] <= now_ns:
            # Fast path: the packet leaves at once. After the _advance above nothing else
            # is eligible by now_ns (other ports and this port's other priorities wait
            # for later), so the general loop would pick exactly this packet, alone.
            # the bookkeeping of the enqueue below and of the _advance step that sends it
            port_scope = self.depth_scope != "queue"
            pkt.enq_timestamp = now_ns
            pkt.enq_qdepth = state.depth_total() if port_scope else 0
            state.enqueued[prio] += 1
            if state.max_depth[prio] < 1:
                state.max_depth[prio] = 1
            if self.scheduler != "strict":
                # what _pick does with this priority as the only eligible one
                if not (state.wrr_current == prio and state.wrr_sent < self.weights[prio]):
                    state.wrr_current, state.wrr_sent = prio, 0
            state.wrr_sent += 1
            state.dequeued[prio] += 1
            length = pkt.length
            tx = 0 if state.bits_per_s is None and state.pps is None else self._tx_ns(state, length)
            state.busy_until = now_ns + tx
            if port in self._active:  # its other priorities now wait for busy_until
                self._touch(port)
            state.tx_bytes += length
            pkt.deq_timedelta = 0
            pkt.deq_qdepth = state.depth_total() if port_scope else 0
            pkt.tx_start_ns = now_ns  # type: ignore[attr-defined]
            pkt.tx_end_ns = now_ns + tx  # type: ignore[attr-defined]
            self._departed.append(pkt)
            return True
        pkt.enq_timestamp = now_ns
        pkt.enq_qdepth = len(queue) if self.depth_scope == "queue" else state.depth_total()
        queue.append(pkt)
        self._active.add(port)
        if len(queue) == 1:  # a new head (a packet behind another changes no start time)
            self._touch(port)
        state.enqueued[pkt.priority] += 1
        if len(queue) > state.max_depth[pkt.priority]:
            state.max_depth[pkt.priority] = len(queue)
        # an idle port with an unlimited rate sends at once: keep depths exact for
        # the next packet enqueued at this same instant
        self._advance(now_ns)
        return True

    def send_now(self, port: int, prio: int, length: int, now_ns: int) -> int:
        """`enqueue` then `dequeue(now_ns)` of one packet that leaves at once, for a caller
        that keeps the packet itself (the switch's fast path): the same counters, clock and
        port state, no packet object. Only when nothing is queued or departed: the packet
        then leaves alone, with enq_timestamp = now_ns, both depths 0 (every queue is empty,
        whatever depth_scope) and deq_timedelta 0. Returns its serialisation time in ns
        (tx_start_ns = now_ns, tx_end_ns = now_ns + that), or -1, with nothing changed, when
        the packet must take `enqueue` (queued packets, a busy or paused port, a drop)."""
        if self._active or self._departed:
            return -1
        if not 0 <= prio < self.nb_queues:
            return -1
        state = self._ports.get(port)
        if state is None:
            state = self._port(port)  # as enqueue does, once the priority is known good
        if (
            state.capacity[prio] <= 0
            or state.busy_until > now_ns
            or state.paused_until[prio] > now_ns
        ):
            return -1
        # enqueue's fast path, step for step, with the packet's attributes left out
        if now_ns > self._now:
            self._now = now_ns
        state.enqueued[prio] += 1
        if state.max_depth[prio] < 1:
            state.max_depth[prio] = 1
        if self.scheduler != "strict":
            if not (state.wrr_current == prio and state.wrr_sent < self.weights[prio]):
                state.wrr_current, state.wrr_sent = prio, 0
        state.wrr_sent += 1
        state.dequeued[prio] += 1
        tx = 0 if state.bits_per_s is None and state.pps is None else self._tx_ns(state, length)
        state.busy_until = now_ns + tx
        state.tx_bytes += length
        return tx

    def next_departure(self) -> int | None:
        """Earliest time at which some queued packet can leave, or None when all are empty."""
        best = self._best  # _earliest's cache, read here first (a call saved per hit)
        if best is _STALE:
            best = self._earliest()
        if best is None:
            return None
        return best[0] if best[0] >= self._now else self._now

    def dequeue(self, now_ns: int) -> list[QueuedPacket]:
        """Every packet that left its queue by `now_ns`, in the order they left."""
        if self._active:
            self._advance(now_ns)
        elif now_ns > self._now:
            self._now = now_ns
        out, self._departed = self._departed, []
        return out

    def pause(self, port: int, class_enable: int, quanta: list[int], now_ns: int) -> None:
        """A PFC frame (or 802.3x PAUSE) received on `port` at `now_ns`."""
        if len(quanta) != NUM_PRIORITIES:
            raise ValueError("PFC carries eight pause times")
        self._advance(now_ns)
        state = self._port(port)
        speed = state.bits_per_s or self.default_link_bps
        for prio in range(NUM_PRIORITIES):
            if not class_enable >> prio & 1:
                continue
            q = int(quanta[prio])
            if not 0 <= q <= 0xFFFF:
                raise ValueError(f"pause time {q} is not a 16-bit quanta count")
            # close the pause interval that was running, if any
            if state.paused_until[prio] > now_ns:
                state.paused_ns[prio] -= state.paused_until[prio] - now_ns
            if q == 0:
                state.resumes[prio] += 1
                state.paused_until[prio] = now_ns
            else:
                state.pauses[prio] += 1
                duration = _div_round(q * PAUSE_QUANTUM_BITS * NS_PER_S, speed)
                state.paused_until[prio] = now_ns + duration
                state.paused_ns[prio] += duration
        if port in self._active:
            self._touch(port)
        self._advance(now_ns)

    # ------------------------------------------------------------ observation

    def depth(self, port: int, priority: int) -> int:
        _check_priority(priority)
        state = self._ports.get(port)
        return len(state.queues[priority]) if state else 0

    def port_depth(self, port: int) -> int:
        state = self._ports.get(port)
        return state.depth_total() if state else 0

    def is_paused(self, port: int, priority: int, now_ns: int) -> bool:
        state = self._ports.get(port)
        return bool(state) and state.paused_until[priority] > now_ns

    def idle(self) -> bool:
        return not self._departed and not self._active

    def stats(self) -> dict:
        """Counters per port, each a list indexed by priority (JSON-friendly)."""
        ports = {}
        for port in sorted(self._ports):
            s = self._ports[port]
            ports[port] = {
                "drops": list(s.drops),
                "enqueued": list(s.enqueued),
                "dequeued": list(s.dequeued),
                "pauses": list(s.pauses),
                "resumes": list(s.resumes),
                "paused_ns": list(s.paused_ns),
                "max_depth": list(s.max_depth),
                "depth": [len(q) for q in s.queues],
                "capacity": list(s.capacity),
                "tx_bytes": s.tx_bytes,
                "bits_per_s": s.bits_per_s,
                "pps": s.pps,
            }
        return {
            "ports": ports,
            "drops_total": sum(sum(p["drops"]) for p in ports.values()) + self.bad_priority_drops,
            "bad_priority_drops": self.bad_priority_drops,
            "pauses_total": sum(sum(p["pauses"]) for p in ports.values()),
        }

    # ------------------------------------------------------------ internals

    def _tx_ns(self, state: _PortState, length: int) -> int:
        if state.bits_per_s is not None:
            # whole ns per frame, carrying the remainder to the next frame of the port so
            # that the long-run rate is exact (884.8 ns frames must not become 885 ns)
            num = wire_bytes(length, self.wire_overhead) * 8 * NS_PER_S + state.tx_rem
            tx, state.tx_rem = divmod(num, state.bits_per_s)
            return tx
        if state.pps is not None:
            return int(round(NS_PER_S / state.pps))
        return 0

    def _eligible_at(self, state: _PortState, prio: int) -> int | None:
        queue = state.queues[prio]
        if not queue:
            return None
        return max(queue[0].enq_timestamp, state.paused_until[prio], state.busy_until)

    def _port_next_start(self, state: _PortState) -> int | None:
        """max(head's enqueue time, its pause timer, busy_until), the earliest over the
        port's non-empty priority queues (what _eligible_at gives, without the scan)."""
        best: int | None = None
        paused = state.paused_until
        for prio, queue in enumerate(state.queues):
            if queue:
                e = queue[0].enq_timestamp
                p = paused[prio]
                if p > e:
                    e = p
                if best is None or e < best:
                    best = e
        if best is None:
            return None
        return best if best > state.busy_until else state.busy_until

    def _touch(self, port: int) -> None:
        """The port's next start may have changed: forget it and the overall earliest."""
        self._start.pop(port, None)
        self._best = _STALE

    def _earliest(self) -> tuple[int, int] | None:
        """(time, port) of the earliest next start over the active ports, lowest port first
        on a tie (the order _advance serves them in); None when nothing is queued."""
        best = self._best
        if best is not _STALE:
            return best  # type: ignore[return-value]
        out: tuple[int, int] | None = None
        start = self._start
        for port in self._active:
            t = start.get(port)
            if t is None:
                t = self._port_next_start(self._ports[port])
                if t is None:  # cannot happen: an active port has a packet
                    continue
                start[port] = t
            if out is None or t < out[0] or (t == out[0] and port < out[1]):
                out = (t, port)
        self._best = out
        return out

    def _pick(self, state: _PortState, t: int) -> int | None:
        """The priority the scheduler serves at time t (packets eligible by then)."""
        if self.scheduler == "strict":  # the first non-empty queue in service order
            queues, paused = state.queues, state.paused_until
            for p in self._order:
                q = queues[p]
                if q and q[0].enq_timestamp <= t and paused[p] <= t and state.busy_until <= t:
                    return p
            return None
        eligible = [
            p for p in self._order if (e := self._eligible_at(state, p)) is not None and e <= t
        ]
        if not eligible:
            return None
        if self.scheduler == "strict":
            return eligible[0]
        # WRR: stay on the current priority while it has credit and packets, else move on
        # in service order to the next eligible priority.
        if state.wrr_current in eligible and state.wrr_sent < self.weights[state.wrr_current]:
            return state.wrr_current
        start = self._order.index(state.wrr_current)
        for step in range(1, NUM_PRIORITIES + 1):
            cand = self._order[(start + step) % NUM_PRIORITIES]
            if cand in eligible:
                state.wrr_current, state.wrr_sent = cand, 0
                return cand
        return None  # unreachable: eligible is not empty

    def _advance(self, now_ns: int) -> None:
        """Let every port send what it can up to `now_ns`, in time order (ports in number
        order on ties), so departures are the same whatever the callers' call pattern."""
        if now_ns > self._now:
            self._now = now_ns
        while True:
            best = self._best  # (as in next_departure)
            if best is _STALE:
                best = self._earliest()
            if best is None or best[0] > now_ns:
                return
            best_t, best_port = best
            state = self._ports[best_port]
            prio = self._pick(state, best_t)
            if prio is None:  # cannot happen: best_t is an eligibility time
                return
            pkt = state.queues[prio].popleft()
            state.wrr_sent += 1
            state.dequeued[prio] += 1
            tx = self._tx_ns(state, pkt.length)
            state.busy_until = best_t + tx
            state.tx_bytes += pkt.length
            pkt.deq_timedelta = best_t - pkt.enq_timestamp
            pkt.deq_qdepth = (
                len(state.queues[prio]) if self.depth_scope == "queue" else state.depth_total()
            )
            pkt.tx_start_ns = best_t  # type: ignore[attr-defined]
            pkt.tx_end_ns = best_t + tx  # type: ignore[attr-defined]
            self._departed.append(pkt)
            self._touch(best_port)
            if not any(state.queues):  # (any: no generator per departure)
                self._active.discard(best_port)


def _check_priority(priority: int) -> None:
    if not 0 <= priority < NUM_PRIORITIES:
        raise ValueError(f"priority {priority} out of range 0..7")


def _div_round(num: int, den: int) -> int:
    """num/den rounded half up, in integers (deterministic, no float drift)."""
    return (2 * num + den) // (2 * den)


# ---------------------------------------------------------------- clocks


class VirtualClock:
    """Simulated time in ns: moves only when told to."""

    virtual = True

    def __init__(self, start_ns: int = 0) -> None:
        self._now = start_ns

    def now(self) -> int:
        return self._now

    def set(self, t_ns: int) -> None:
        if t_ns < self._now:
            raise ValueError(f"virtual time cannot go back ({t_ns} < {self._now})")
        self._now = t_ns

    def advance(self, dt_ns: int) -> int:
        if dt_ns < 0:
            raise ValueError("cannot advance by a negative time")
        self._now += dt_ns
        return self._now


class WallClock:
    """Monotonic wall-clock ns since the clock was made (for real interfaces)."""

    virtual = False

    def __init__(self) -> None:
        self._start = time.monotonic_ns()

    def now(self) -> int:
        return time.monotonic_ns() - self._start
