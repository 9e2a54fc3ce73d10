"""IPv4 header checksum where the one's-complement sum carries twice (RFC 1071: fold the
carries until none is left; one fold is not enough when the folded sum overflows again).
The checksum is recomputed here with RFC 1071's loop, on purpose, as an independent
oracle for the builder, and the decoder must accept every such header and refuse it
with one bit flipped."""

from __future__ import annotations

import struct

from controller.packets import constants as C
from controller.packets.build import roce_frame
from controller.packets.decode import decode

SRC, DST = "255.255.255.255", "255.255.255.254"  # big words: the sum carries a lot


def rfc1071(hdr: bytes) -> int:
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def needs_second_fold(hdr: bytes) -> bool:
    s = sum(struct.unpack("!10H", hdr[:10] + b"\0\0" + hdr[12:]))
    return (s & 0xFFFF) + (s >> 16) > 0xFFFF


def test_checksum_with_a_double_carry():
    double = 0
    for ttl in range(256):
        frame = roce_frame(SRC, DST, C.RC_SEND_ONLY, 0x11, 0, b"\0" * 965, dscp=63, ecn=3, ttl=ttl)
        hdr = frame[14:34]
        double += needs_second_fold(hdr)
        assert struct.unpack("!H", hdr[10:12])[0] == rfc1071(hdr[:10] + b"\0\0" + hdr[12:]), ttl
        assert not decode(frame).err_ip_csum, ttl
        bad = bytearray(frame)
        bad[22] ^= 0x01  # TTL bit: the header no longer sums to 0xFFFF
        assert decode(bytes(bad)).err_ip_csum, ttl
    assert double >= 1  # the sweep really contains a header that needs the second fold
