"""The discrete-event loop that runs hosts against a switch target in virtual nanoseconds.

Hosts hang off switch ports by links (speed, one-way propagation delay). A frame a host
sends reaches the switch `prop` after its last bit left the NIC (store and forward); a frame
the switch emits on a host's port reaches the host `prop` after its last bit left the switch.
The switch is driven only through the Target interface: `send` at the arrival instant,
`advance` to move its clock, `receive` for what it emitted.

Causality: a frame the switch emits at t reaches a host no earlier than t + prop, and
nothing a host does reaches the switch sooner than that; so the switch may safely run
ahead to min(next host event, switch now + min prop) before the host events are processed
(conservative lookahead, as in parallel discrete-event simulation).
"""

from __future__ import annotations

import heapq
import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.hosts.host import Host
    from controller.targets.base import Target


@dataclass
class Link:
    port: int
    host: Host
    prop_ns: int
    # An external receive path (controller.fil: the NIC in RTL or on a real port): gets
    # (arrival ns, frame) when the switch emits it, instead of host.receive at arrival.
    rx: Callable[[int, bytes], None] | None = None


@dataclass
class Tap:
    """A wire tap on a switch port: every frame in both directions, whole, as it crossed the
    port: (virtual ns, bytes, "in" = host to switch | "out" = switch to host). "in" frames
    are stamped when they reach the switch, "out" frames when their last bit left it."""

    port: int
    frames: list[tuple[int, bytes, str]] = field(default_factory=list)


@dataclass
class Capture:
    """Frames seen on a (mirror) port: (virtual ns, bytes)."""

    port: int
    frames: list[tuple[int, bytes]] = field(default_factory=list)


class Progress:
    """A one-line progress bar on stderr, shown only when a run takes more than a moment and
    stderr is a terminal (a CI log would keep every carriage-return redraw)."""

    def __init__(self, total_ns: int, label: str, enabled: bool = True, after_s: float = 2.0):
        self.total, self.label, self.after_s = total_ns, label, after_s
        self.enabled = enabled and sys.stderr.isatty()
        self.start = time.perf_counter()
        self.shown = False
        self._last = 0.0

    def update(self, now_ns: int, force: bool = False) -> None:
        if not self.enabled:
            return
        t = time.perf_counter()
        if not force and (t - self.start < self.after_s or t - self._last < 0.25):
            return
        self._last = t
        self.shown = True
        frac = min(1.0, now_ns / self.total) if self.total else 1.0
        bar = "#" * int(frac * 30)
        wall = t - self.start
        eta = f", ~{wall * (1 - frac) / frac:.0f} s left" if 0 < frac < 1 else ""
        sys.stderr.write(
            f"\r{self.label} [{bar:<30}] {frac * 100:5.1f}%  "
            f"{now_ns / 1e3:,.0f}/{self.total / 1e3:,.0f} us virtual, "
            f"{wall:.1f} s wall{eta}\x1b[K"
        )  # erase what a longer line left
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Engine:
    """Owns virtual time for the hosts; the switch target keeps its own clock in step."""

    def __init__(self, target: Target):
        if not target.virtual_time:
            raise ValueError(
                f"{target.name} has no virtual time: scenarios need the in-process p4sim target"
            )
        self.target = target
        self._now = target.now()
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.links: dict[int, Link] = {}
        self.captures: dict[int, Capture] = {}
        self.taps: dict[int, Tap] = {}
        self.cpu_tap: Tap | None = None
        self.unattached: dict[int, int] = {}  # port -> frames emitted with nobody there
        self.switch_rx = 0  # frames handed to the switch
        self.switch_tx = 0  # frames the switch emitted
        # An external simulator in step with us (controller.fil): called each step once the
        # switch reached t, before host events <= t run; it may run to t + link delay and
        # schedule its outputs with `at` (conservative lookahead).
        self.sync: Callable[[int], None] | None = None

    # -- the Scheduler the hosts use
    def now(self) -> int:
        return self._now

    def at(self, t_ns: int, fn: Callable[[], None]) -> None:
        if t_ns < self._now:
            t_ns = self._now
        heapq.heappush(self._heap, (t_ns, next(self._seq), fn))

    # -- topology
    def attach(self, host: Host, port: int, prop_ns: int) -> None:
        link = Link(port, host, prop_ns)
        self.links[port] = link

        def transmit(frame: bytes, t_end: int, _port: int = port, _prop: int = prop_ns) -> None:
            self.at(t_end + _prop, lambda: self._to_switch(_port, frame))

        host.transmit = transmit

    def external_rx(self, port: int, rx: Callable[[int, bytes], None]) -> None:
        """Frames the switch emits on `port` go to `rx(arrival_ns, frame)` at emission."""
        self.links[port].rx = rx

    def capture(self, port: int) -> Capture:
        cap = self.captures.setdefault(port, Capture(port))
        return cap

    def tap(self, port: int) -> Tap:
        """Record both directions of `port` (a link to a host)."""
        return self.taps.setdefault(port, Tap(port))

    def tap_cpu(self, port: int) -> Tap:
        """Record what the switch sends to its CPU port: the target's PacketIns (the frame
        without the packet-in header), direction "cpu". Nothing else in a scenario reads
        PacketIns, so the tap may consume them."""
        self.cpu_tap = self.taps.setdefault(port, Tap(port))
        return self.cpu_tap

    def _to_switch(self, port: int, frame: bytes) -> None:
        self.switch_rx += 1
        tap = self.taps.get(port)
        if tap is not None:
            tap.frames.append((self._now, frame, "in"))
        self.target.send(port, frame)

    def _deliver(self) -> None:
        taps = self.taps
        for out in self.target.receive():
            self.switch_tx += 1
            if taps:
                tap = taps.get(out.port)
                if tap is not None:
                    tap.frames.append((out.time_ns, out.data, "out"))
            link = self.links.get(out.port)
            if link is not None and link.rx is not None:
                link.rx(out.time_ns + link.prop_ns, out.data)
            elif link is not None:
                host = link.host
                data = out.data
                self.at(out.time_ns + link.prop_ns, lambda h=host, d=data: h.receive(d))
            elif out.port in self.captures:
                self.captures[out.port].frames.append((out.time_ns, out.data))
            else:
                self.unattached[out.port] = self.unattached.get(out.port, 0) + 1
        if self.cpu_tap is not None:
            now = self.target.now()
            for p in self.target.packet_in():
                self.cpu_tap.frames.append((now, bytes(p.data), "cpu"))

    # -- the loop
    def run(self, until_ns: int, progress: Progress | None = None) -> None:
        lookahead = min((lk.prop_ns for lk in self.links.values()), default=1000)
        lookahead = max(1, lookahead)
        target = self.target
        heap = self._heap
        steps = 0
        while True:
            sw = target.now()
            t_next = heap[0][0] if heap else until_ns
            step_to = min(t_next, sw + lookahead, until_ns)
            if step_to > sw:
                target.advance(step_to - sw)
            self._now = max(self._now, step_to)
            self._deliver()
            if self.sync is not None:
                self.sync(self._now)
            while heap and heap[0][0] <= self._now:
                _, _, fn = heapq.heappop(heap)
                fn()
            if self._now >= until_ns:
                break
            steps += 1
            if progress is not None and steps % 256 == 0:
                progress.update(self._now)
        if progress is not None and progress.shown:
            progress.update(self._now, force=True)

    def run_until(self, done: Callable[[], bool], limit_ns: int, step_ns: int = 100_000) -> bool:
        """Run in steps of `step_ns` until `done()` or `limit_ns` from now; True if done."""
        end = self._now + limit_ns
        while not done():
            if self._now >= end:
                return False
            self.run(min(self._now + step_ns, end))
        return True


class RealtimeEngine:
    """The same host wiring against a target with no virtual time (a P4Runtime switch with
    AF_PACKET ports, BMv2, hardware): events run on the wall clock (ns since start), frames
    go out with `target.send` when the host's NIC finishes them, and whatever the target
    hands back from `receive` reaches the attached host at once (the cable is real).
    Wall-clock Python cannot pace 10 Gb/s: give the hosts a link speed the machine can keep
    up with (a few Mb/s); the protocol machinery is the same."""

    def __init__(self, target: Target, poll_s: float = 0.001):
        self.target = target
        self.poll_s = poll_s
        self._t0 = time.monotonic_ns()
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.links: dict[int, Link] = {}
        self.unattached: dict[int, int] = {}
        self.switch_rx = 0
        self.switch_tx = 0

    def now(self) -> int:
        return time.monotonic_ns() - self._t0

    def at(self, t_ns: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (t_ns, next(self._seq), fn))

    def attach(self, host: Host, port: int, prop_ns: int = 0) -> None:
        self.links[port] = Link(port, host, prop_ns)

        def transmit(frame: bytes, t_end: int, _port: int = port) -> None:
            self.at(t_end, lambda: self._to_switch(_port, frame))

        host.transmit = transmit

    def _to_switch(self, port: int, frame: bytes) -> None:
        self.switch_rx += 1
        self.target.send(port, frame)

    def run(self, duration_ns: int) -> None:
        end = self.now() + duration_ns
        while True:
            now = self.now()
            while self._heap and self._heap[0][0] <= now:
                _, _, fn = heapq.heappop(self._heap)
                fn()
            for out in self.target.receive():
                self.switch_tx += 1
                link = self.links.get(out.port)
                if link is None:
                    self.unattached[out.port] = self.unattached.get(out.port, 0) + 1
                else:
                    link.host.receive(out.data)
            if now >= end:
                return
            wait = (self._heap[0][0] - now) / 1e9 if self._heap else self.poll_s
            self.target.advance(int(max(0.0, min(wait, self.poll_s)) * 1e9))

    def run_until(self, done: Callable[[], bool], limit_ns: int, step_ns: int = 100_000) -> bool:
        """Run in steps of `step_ns` until `done()` or `limit_ns` from now; True if done."""
        end = self.now() + limit_ns
        while not done():
            if self.now() >= end:
                return False
            self.run(min(step_ns, end - self.now()))
        return True


def engine_for(target: Target) -> Engine | RealtimeEngine:
    """Virtual time when the target has it (in-process p4sim), else the wall clock."""
    return Engine(target) if target.virtual_time else RealtimeEngine(target)
