"""RoCE invariant CRC (ICRC): CRC32 over the packet with its variant fields forced to ones.

RoCEv2 (IBA annex A17): 8 bytes 0xFF in place of the LRH, then IP + UDP + BTH + payload
with IPv4 TOS/TTL/checksum (or IPv6 traffic class/flow label/hop limit), the UDP
checksum and BTH byte 4 (FECN, BECN, reserved) forced to all ones.
RoCEv1 (annex A16): 8 bytes 0xFF for the absent LRH, the GRH masked like IPv6, BTH byte 4
forced to ones. The ICRC goes on the wire little-endian (as scapy writes it).
"""

from __future__ import annotations

import struct
import zlib

from .constants import GRH_LEN

_LRH_ONES = b"\xff" * 8


def _masked_v6_header(hdr: bytes | memoryview) -> bytes:
    # Keep the version nibble; traffic class, flow label and hop limit become ones.
    return bytes((hdr[0] | 0x0F, 0xFF, 0xFF, 0xFF)) + bytes(hdr[4:7]) + b"\xff" + bytes(hdr[8:40])


def icrc_v2(ip_packet: bytes | memoryview) -> int:
    """ICRC of a RoCEv2 packet: `ip_packet` runs from the IP header to just before the ICRC."""
    p = bytes(ip_packet)
    if p[0] >> 4 == 4:
        ihl = (p[0] & 0x0F) * 4
        ip = p[0:1] + b"\xff" + p[2:8] + b"\xff" + p[9:10] + b"\xff\xff" + p[12:ihl]
    else:
        ihl = 40
        ip = _masked_v6_header(p)
    udp = p[ihl : ihl + 6] + b"\xff\xff"
    bth = ihl + 8
    crc = zlib.crc32(_LRH_ONES)
    crc = zlib.crc32(ip, crc)
    crc = zlib.crc32(udp, crc)
    crc = zlib.crc32(p[bth : bth + 4] + b"\xff", crc)
    return zlib.crc32(p[bth + 5 :], crc)


def icrc_v1(grh_packet: bytes | memoryview) -> int:
    """ICRC of a RoCEv1 packet: `grh_packet` runs from the GRH to just before the ICRC."""
    p = bytes(grh_packet)
    crc = zlib.crc32(_LRH_ONES)
    crc = zlib.crc32(_masked_v6_header(p), crc)
    crc = zlib.crc32(p[GRH_LEN : GRH_LEN + 4] + b"\xff", crc)
    return zlib.crc32(p[GRH_LEN + 5 :], crc)


def pack_icrc(icrc: int) -> bytes:
    return struct.pack("<I", icrc & 0xFFFFFFFF)
