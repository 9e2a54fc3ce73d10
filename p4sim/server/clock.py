"""Packets in and the switch's time: frames from the ports (and PacketOut) sent into the
switch, and with `clock="wall"` the ticker thread that keeps the switch's clock on the wall
clock (with `clock="virtual"` the switch runs until idle after each frame)."""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("p4sim.server")

IDLE_TICK_S = 0.1  # the clock thread's wait while the traffic manager holds nothing


class Clock:
    """Frames in and the clock of P4RuntimeServer (its state lives in the server)."""

    def _wall_ns(self) -> int:
        return time.monotonic_ns() - self._wall_start

    def inject(self, port: int, frame: bytes) -> None:
        """A frame arrives on `port` (from an interface, an in-process port, or PacketOut)."""
        with self._lock:
            p = self.pipeline
            if p is None:
                return  # no program: BMv2 drops too
            sw = p.switch
            if self.clock == "wall":
                self._catch_up(sw)
                sw.send(port, frame)
                sw.advance(0)
                if self._tick_idle:
                    self._wake_ticker(sw)
            else:
                sw.send(port, frame)
                sw.run_until_idle()
            outs = sw.receive()
        self._emit(outs)

    def inject_many(self, port: int, frames: list[bytes]) -> None:
        """Frames that arrived together on `port`, in order: as `inject` of each, with the
        lock taken and (wall clock) the clock caught up once for the batch; the frames
        were all waiting already, so they enter at one instant. A frame the switch refuses
        is logged and the rest of the batch goes on, as with one `inject` per frame."""
        if self.clock != "wall":
            for frame in frames:
                try:
                    self.inject(port, frame)
                except Exception:
                    log.exception("port %d: processing a received frame failed", port)
            return
        with self._lock:
            p = self.pipeline
            if p is None:
                return
            sw = p.switch
            self._catch_up(sw)
            send = sw.send
            for frame in frames:
                try:
                    send(port, frame)
                except Exception:
                    log.exception("port %d: processing a received frame failed", port)
            sw.advance(0)
            if self._tick_idle:
                self._wake_ticker(sw)
            outs = sw.receive()
        self._emit(outs)

    def _catch_up(self, sw: Any) -> None:
        target = self._wall_ns()
        now = sw.now()
        if target > now:
            sw.advance(target - now)

    def _tick_loop(self) -> None:
        """Wall clock: every tick_s, time moves on and what the traffic manager released
        leaves. While the traffic manager holds nothing, nothing can fall due before the
        next packet arrives (and each arrival catches the clock up itself), so the thread
        then waits IDLE_TICK_S, or until an arrival leaves something queued (_wake_ticker):
        1,000 wake-ups a second cost the forwarding path a whole GIL hand-over each."""
        wake, wait = self._tick_wake, self.tick_s
        while not self._stop.is_set():
            if wake.wait(wait):
                wake.clear()
            if self._stop.is_set():
                return
            try:
                with self._lock:
                    idle = True
                    outs: list = []
                    if self.pipeline is not None:
                        sw = self.pipeline.switch
                        self._catch_up(sw)
                        outs = sw.receive()
                        idle = _tm_idle(sw)
                    self._tick_idle = idle
                self._emit(outs)
                wait = IDLE_TICK_S if idle else self.tick_s
            except Exception:
                log.exception("clock tick failed")
                wait = self.tick_s

    def _wake_ticker(self, sw: Any) -> None:
        """Under the lock, after packets went in: the clock thread, if it waits the long
        idle wait, ticks again when the traffic manager now holds something."""
        if not _tm_idle(sw):
            self._tick_idle = False
            self._tick_wake.set()


def _tm_idle(sw: Any) -> bool:
    """Whether the switch's traffic manager holds no packet (so no tick can release one);
    False for a switch without that question (it is ticked every tick_s, as before)."""
    idle = getattr(getattr(sw, "tm", None), "idle", None)
    return bool(idle()) if idle is not None else False
