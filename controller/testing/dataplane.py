"""Helpers for data-plane tests that run on every target (virtual or wall-clock time).

`Exchange` sends a frame and returns exactly what the switch emitted for it: after the
frame it sends a sentinel (a frame the forwarding config sends to a known port) and waits
until that sentinel comes out. With all traffic in one class, the switch's queues are FIFO,
so everything emitted before the sentinel belongs to the frame. This keeps wall-clock
targets (p4sim-switch, BMv2, hardware) fast: no fixed sleep per frame, and a dropped frame
costs one round trip, not a time-out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from controller.targets.base import OutputPacket, Target

SENTINEL_MAC = "02:52:4c:00:00:ff"  # locally administered, "RL"
SENTINEL_ETHERTYPE = 0x88B5  # IEEE 802 local experimental EtherType
_SENTINEL_HDR = bytes.fromhex(SENTINEL_MAC.replace(":", "")) + bytes.fromhex("02524c0000fe")


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def sentinel_frame(seq: int) -> bytes:
    body = b"rocelab-sentinel" + struct.pack("!I", seq)
    frame = _SENTINEL_HDR + struct.pack("!H", SENTINEL_ETHERTYPE) + body
    return frame + bytes(max(0, 60 - len(frame)))


def sentinel_seq(frame: bytes) -> int | None:
    if frame[:12] != _SENTINEL_HDR or frame[12:14] != struct.pack("!H", SENTINEL_ETHERTYPE):
        return None
    if frame[14:30] != b"rocelab-sentinel":
        return None
    return struct.unpack("!I", frame[30:34])[0]


@dataclass
class Exchange:
    """Send frames into `target` one at a time and collect each one's output."""

    target: Target
    sentinel_port: int  # where the forwarding config sends SENTINEL_MAC
    timeout_ns: int = 2_000_000_000  # per frame, wall or virtual
    step_ns: int = 1_000_000
    _seq: int = 0
    stray: list[OutputPacket] = field(default_factory=list)

    def send(self, port: int, frame: bytes) -> list[OutputPacket]:
        """Everything the switch emitted because `frame` arrived on `port`."""
        self._seq += 1
        seq = self._seq
        self.target.send(port, frame)
        self.target.send(port, sentinel_frame(seq))
        out: list[OutputPacket] = []
        waited = 0
        while True:
            for pkt in self.target.receive():
                s = sentinel_seq(pkt.data)
                if s == seq and pkt.port == self.sentinel_port:
                    return out
                if s is not None:
                    self.stray.append(pkt)  # a late sentinel of an earlier, timed-out send
                else:
                    out.append(pkt)
            if waited >= self.timeout_ns:
                raise TimeoutError(
                    f"{self.target.name}: sentinel {seq} did not come out of port "
                    f"{self.sentinel_port} within {self.timeout_ns / 1e9:.1f} s; "
                    f"{len(out)} other frames came out")
            self.target.advance(self.step_ns)
            waited += self.step_ns
