"""Helpers for data-plane tests that run on every target (virtual or wall-clock time).

`Exchange` sends a frame and returns exactly what the switch emitted for it: after the
frame it sends a sentinel (a frame the forwarding config sends to known ports, see
`Exchange.config()`) and waits until the sentinel has come out of each of them. With all
traffic in one class, each egress queue is FIFO, so everything a port emitted before its
copy of the sentinel belongs to the frame. This keeps wall-clock
targets (p4sim-switch, BMv2, hardware) fast: no fixed sleep per frame, and a dropped frame
costs one round trip, not a time-out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from controller.targets.base import Exact, MulticastGroup, OutputPacket, TableEntry, Target
from controller.telemetry import port_cells, read_cells  # noqa: F401  (tests import them here)

SENTINEL_MAC = "02:52:4c:00:00:ff"  # locally administered, "RL"
SENTINEL_ETHERTYPE = 0x88B5  # IEEE 802 local experimental EtherType
SENTINEL_GROUP = 0x0E5E  # multicast group when the sentinel must leave several ports
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
    """Send frames into `target` one at a time and collect each one's output.

    `ports`: where the sentinel leaves (every port that may emit something for a frame; the
    ingress port must not be one of them). Install `config()` before sending."""

    target: Target
    ports: int | tuple[int, ...]
    timeout_ns: int = 2_000_000_000  # per frame, wall or virtual
    step_ns: int = 1_000_000
    _seq: int = 0
    stray: list[OutputPacket] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.ports, int):
            self.ports = (self.ports,)

    def config(self) -> list:
        """The entities that send the sentinel to `ports` (l2_fwd; a multicast group for
        more than one port)."""
        key = {"hdr.ethernet.dst": Exact(mac_int(SENTINEL_MAC))}
        if len(self.ports) == 1:
            return [TableEntry("l2_fwd", key, "l2_forward", {"port": self.ports[0]})]
        return [
            MulticastGroup(SENTINEL_GROUP, tuple(self.ports)),
            TableEntry("l2_fwd", key, "l2_flood", {"mcast_grp": SENTINEL_GROUP}),
        ]

    def send(self, port: int, frame: bytes) -> list[OutputPacket]:
        """Everything the switch emitted because `frame` arrived on `port`."""
        self._seq += 1
        seq = self._seq
        self.target.send(port, frame)
        self.target.send(port, sentinel_frame(seq))
        out: list[OutputPacket] = []
        waiting = set(self.ports)
        waited = 0
        while True:
            for pkt in self.target.receive():
                s = sentinel_seq(pkt.data)
                if s == seq and pkt.port in waiting:
                    waiting.discard(pkt.port)
                elif s is not None:
                    self.stray.append(pkt)  # a late sentinel of an earlier, timed-out send
                else:
                    out.append(pkt)
            if not waiting:
                return out
            if waited >= self.timeout_ns:
                raise TimeoutError(
                    f"{self.target.name}: sentinel {seq} did not come out of port(s) "
                    f"{sorted(waiting)} within {self.timeout_ns / 1e9:.1f} s; "
                    f"{len(out)} other frames came out"
                )
            self.target.advance(self.step_ns)
            waited += self.step_ns
