"""A PFC watchdog in the port layer of every fabric switch, and a deadlock detector.

Watchdog (the behaviour of switch operating systems, e.g. SONiC's PFC watchdog): every
`poll_ns` it looks at each (port, class) queue of the watched classes; a queue that is
paused, holds packets and has not dequeued one for `detect_ns` enters the *storm* state:
pause frames for that class on that port are ignored from then on (action "forward": the
queue drains to the peer whatever it asks), and the queue is resumed at once. The queue is
restored (pauses honoured again) once no pause frame for it has arrived for `restore_ns`.
Action "drop" also discards, in the port layer, every frame of that class the queue sends
while in the storm state (the peer that keeps pausing gets nothing; SONiC's default).

Why here and not in roce_switch.p4: reacting to received PFC is the traffic manager's job
(the P4 program only counts MAC-control frames, p4src/README.md), and the pause state a
watchdog masks is the TM's; p4sim's TM and BMv2 have no such hook, so the fabric's port
layer (`Fabric.rx_filter`, the MAC in front of each switch port) filters the pause frames.
It reads the queues only through the Target interface (`tm_stats`).

Detector: a queue is *frozen* when it holds packets, is paused and has dequeued nothing
over a window. A frozen queue on switch A's port p waits for the peer B (B's ingress from A
is over XOFF because B's own queues toward its other switch ports are stuck); a cycle in
that wait-for graph is a PFC deadlock, and the detector names its queues.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.packets.build import pfc_frame
from controller.packets.decode import decode

from .engine import Fabric

PAUSE_QUANTUM_BITS = 512
Queue = tuple[str, int, int]  # (switch, port, class)


@dataclass
class WatchdogStats:
    detected: int = 0
    restored: int = 0
    ignored_frames: int = 0
    by_queue: dict[Queue, dict[str, int]] = field(default_factory=dict)

    def bump(self, q: Queue, key: str) -> None:
        self.by_queue.setdefault(q, {"detected": 0, "restored": 0, "ignored": 0, "dropped": 0})[
            key
        ] += 1


class PauseTracker:
    """What each switch port's MAC knows from the pause frames it received."""

    def __init__(self, fab: Fabric):
        self.fab = fab
        self.paused_until: dict[Queue, int] = {}
        self.last_frame: dict[Queue, int] = {}
        self.frames: dict[str, int] = {}  # per switch: pause frames received
        self.ignore: set[Queue] = set()
        self.ignored = 0
        self.on_ignored = None
        fab.rx_filter = self.filter

    def _bps(self, sw: str, port: int) -> float:
        peer = self.fab.topo.peer(sw, port)
        return peer[2].bps if peer else 10e9

    def filter(self, sw: str, port: int, frame: bytes) -> bytes | None:
        if len(frame) < 34 or frame[12:14] != b"\x88\x08" or frame[14:16] != b"\x01\x01":
            return frame
        now = self.fab.now()
        rec = decode(frame)
        cev = rec.pfc_cev
        self.frames[sw] = self.frames.get(sw, 0) + 1
        keep = cev
        for c in range(8):
            if not cev >> c & 1:
                continue
            q = (sw, port, c)
            quanta = getattr(rec, f"pfc_quanta{c}")
            self.last_frame[q] = now
            self.paused_until[q] = now + int(
                quanta * PAUSE_QUANTUM_BITS * 1e9 / self._bps(sw, port)
            )
            if q in self.ignore:
                keep &= ~(1 << c)
                self.ignored += 1
                if self.on_ignored is not None:
                    self.on_ignored(q)
        if keep == cev:
            return frame
        if keep == 0:
            return None
        out = bytearray(frame)
        out[16:18] = keep.to_bytes(2, "big")
        return bytes(out)

    def paused(self, q: Queue) -> bool:
        return self.paused_until.get(q, 0) > self.fab.now()


class PfcWatchdog:
    def __init__(
        self,
        fab: Fabric,
        detect_ns: int = 200_000,
        restore_ns: int = 400_000,
        poll_ns: int = 10_000,
        classes: tuple[int, ...] = (3,),
        tracker: PauseTracker | None = None,
        action: str = "forward",
    ):
        if detect_ns <= 0 or restore_ns <= 0 or poll_ns <= 0:
            raise ValueError("watchdog times must be > 0")
        if action not in ("forward", "drop"):
            raise ValueError(f"watchdog action must be 'forward' or 'drop', not {action!r}")
        self.action = action
        self.dropped = 0
        if action == "drop":
            fab.tx_filter = self._tx
        self.fab = fab
        self.detect_ns, self.restore_ns, self.poll_ns = detect_ns, restore_ns, poll_ns
        self.classes = classes
        self.tracker = tracker or PauseTracker(fab)
        self.tracker.on_ignored = lambda q: self.stats.bump(q, "ignored")
        self.stats = WatchdogStats()
        self.storm: dict[Queue, int] = {}  # queue -> when it entered the storm state
        self.events: list[tuple[int, str, Queue]] = []
        self._last_deq: dict[Queue, int] = {}
        self._stalled_since: dict[Queue, int] = {}
        fab.every(poll_ns, self.poll)

    def poll(self) -> None:
        now = self.fab.now()
        tr = self.tracker
        for sw, tgt in self.fab.targets.items():
            ports = tgt.tm_stats()["ports"]
            for port, st in ports.items():
                for c in self.classes:
                    q = (sw, port, c)
                    deq = st["dequeued"][c]
                    moved = deq != self._last_deq.get(q)
                    self._last_deq[q] = deq
                    if q in self.storm:
                        if now - tr.last_frame.get(q, 0) >= self.restore_ns:
                            del self.storm[q]
                            tr.ignore.discard(q)
                            self.stats.restored += 1
                            self.stats.bump(q, "restored")
                            self.events.append((now, "restored", q))
                        continue
                    if st["depth"][c] > 0 and tr.paused(q) and not moved:
                        since = self._stalled_since.setdefault(q, now)
                        if now - since >= self.detect_ns:
                            self._trip(q, now)
                    else:
                        self._stalled_since.pop(q, None)

    def _tx(self, sw: str, port: int, frame: bytes) -> bool:
        """Drop action: discard a data frame of a storm class leaving a storm queue."""
        if not self.storm:
            return True
        for c in self.classes:
            if (sw, port, c) in self.storm and self._tc(sw, frame) == c:
                self.dropped += 1
                self.stats.bump((sw, port, c), "dropped")
                return False
        return True

    def _tc(self, sw: str, frame: bytes) -> int:
        """The class the switch gave a frame (its DSCP or PCP through the switch's own
        dscp_to_tc / pcp_to_tc config, as classify.p4 does); -1 for MAC control."""
        cfg = self.fab.programs[sw].config
        et = int.from_bytes(frame[12:14], "big")
        off, pcp = 14, None
        if et == 0x8100:
            pcp = frame[14] >> 5
            et = int.from_bytes(frame[16:18], "big")
            off = 18
        if et == 0x8808:
            return -1
        dscp = None
        if et == 0x0800 and len(frame) > off + 1:
            dscp = frame[off + 1] >> 2
        elif et == 0x86DD and len(frame) > off + 1:
            dscp = ((frame[off] & 0x0F) << 4 | frame[off + 1] >> 4) >> 2
        if dscp is not None and dscp in cfg.dscp_to_tc:
            return cfg.dscp_to_tc[dscp]
        if pcp is not None and pcp in cfg.pcp_to_tc:
            return cfg.pcp_to_tc[pcp]
        return 0

    def _trip(self, q: Queue, now: int) -> None:
        sw, port, c = q
        self.storm[q] = now
        self._stalled_since.pop(q, None)
        self.tracker.ignore.add(q)
        self.stats.detected += 1
        self.stats.bump(q, "detected")
        self.events.append((now, "detected", q))
        # resume the queue now: the MAC hands the TM an XON for the class
        peer = self.fab.topo.peer(sw, port)
        src = peer[0] if peer else sw
        mac = (
            self.fab.topo.hosts[src].mac
            if src in self.fab.topo.hosts
            else self.fab.topo.switches[sw].port_mac(port)
        )
        self.fab.send_raw(sw, port, pfc_frame(mac, {c: 0}))

    def counters(self) -> dict[str, int]:
        """Telemetry: totals and the number of queues now in the storm state."""
        return {
            "pfcwd_detected": self.stats.detected,
            "pfcwd_restored": self.stats.restored,
            "pfcwd_ignored_frames": self.tracker.ignored,
            "pfcwd_in_storm": len(self.storm),
            "pfcwd_dropped": self.dropped,
        }


class FrozenQueues:
    """Samples every switch-facing queue; `frozen()` lists those that held packets, were
    paused and dequeued nothing since `mark()`."""

    def __init__(self, fab: Fabric, tracker: PauseTracker, classes: tuple[int, ...] = (3,)):
        self.fab, self.tracker, self.classes = fab, tracker, classes
        self._mark: dict[Queue, int] = {}

    def _deq(self) -> dict[Queue, tuple[int, int]]:
        out = {}
        for sw, tgt in self.fab.targets.items():
            for port, st in tgt.tm_stats()["ports"].items():
                for c in self.classes:
                    out[(sw, port, c)] = (st["dequeued"][c], st["depth"][c])
        return out

    def mark(self) -> None:
        self._mark = {q: d for q, (d, _) in self._deq().items()}

    def frozen(self) -> list[Queue]:
        out = []
        for q, (deq, depth) in sorted(self._deq().items()):
            if depth > 0 and deq == self._mark.get(q, -1) and self.tracker.paused(q):
                out.append(q)
        return out


def deadlock_cycles(fab: Fabric, frozen: list[Queue]) -> list[list[Queue]]:
    """Cycles of the wait-for graph among frozen switch-to-switch queues: (A, p, c) waits on
    every frozen (B, p', c) with B the peer of A's port p and p' another switch port of B."""
    topo = fab.topo
    fz = set(frozen)
    edges: dict[Queue, list[Queue]] = {}
    for q in frozen:
        sw, port, c = q
        peer = topo.peer(sw, port)
        if peer is None or peer[0] not in topo.switches:
            continue
        b, bp = peer[0], peer[1]
        edges[q] = [
            (b, p2, c)
            for p2, (n, _pp, _lk) in topo.switch_ports(b).items()
            if p2 != bp and n in topo.switches and (b, p2, c) in fz
        ]
    # strongly connected components (Tarjan); a component of >1 queue is a cycle
    index: dict[Queue, int] = {}
    low: dict[Queue, int] = {}
    stack: list[Queue] = []
    on: set[Queue] = set()
    comps: list[list[Queue]] = []
    counter = [0]

    def strong(v: Queue) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, []):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in edges:
        if v not in index:
            strong(v)
    return comps
