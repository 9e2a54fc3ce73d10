"""ICRC: checked against a computation written out here from annex A16/A17, byte by byte."""

from __future__ import annotations

import struct
import zlib

import pytest

from controller.packets import decode, verify_icrc
from controller.packets.build import RoceSpec, packet_bytes, spec_frame, spec_packet
from controller.packets.vectors import load

OK_ROCE = [v for v in load() if v.verdict == "ok"]


def masked_icrc(frame: bytes) -> tuple[int, int]:
    """(computed, stored) ICRC of a well-formed RoCE frame, computed independently."""
    off = 18 if frame[12:14] == b"\x81\x00" else 14
    et = frame[off - 2 : off]
    b = bytearray(frame[off:])
    if et == b"\x08\x00":  # IPv4: TOS, TTL, header checksum; then UDP checksum
        end = struct.unpack("!H", b[2:4])[0]
        b[1] = 0xFF
        b[8] = 0xFF
        b[10:12] = b"\xff\xff"
        b[26:28] = b"\xff\xff"
        bth = 28
    else:  # IPv6 header or GRH: traffic class, flow label, hop limit
        end = 40 + struct.unpack("!H", b[4:6])[0]
        b[0] |= 0x0F
        b[1:4] = b"\xff\xff\xff"
        b[7] = 0xFF
        bth = 40
        if et == b"\x86\xdd":
            b[46:48] = b"\xff\xff"
            bth = 48
    b[bth + 4] = 0xFF  # FECN, BECN, reserved
    covered = b"\xff" * 8 + bytes(b[: end - 4])
    return zlib.crc32(covered), int.from_bytes(frame[off + end - 4 : off + end], "little")


@pytest.mark.parametrize("vec", OK_ROCE, ids=[v.name for v in OK_ROCE])
def test_vector_icrc_matches_independent_computation(vec) -> None:
    computed, stored = masked_icrc(vec.frame)
    assert computed == stored


@pytest.mark.parametrize(
    "version,src,dst",
    [(2, "10.0.0.1", "10.0.0.2"), (2, "fd00::1", "fd00::2"), (1, "fd00::1", "fd00::2")],
)
@pytest.mark.parametrize("opcode", [0x00, 0x06, 0x0B, 0x0C, 0x10, 0x11, 0x81])
def test_fast_builder_scapy_and_independent_icrc_agree(version, src, dst, opcode) -> None:
    spec = RoceSpec(
        src,
        dst,
        opcode,
        0xABCDE,
        0x123456,
        bytes(range(37)),
        version=version,
        vlan=12 if opcode & 1 else None,
        pcp=5,
        ecn=1,
        fecn=1,
        va=0x1122334455667788,
        rkey=0xCAFE,
        imm=0xFEEDF00D,
        syndrome=0x60,
        msn=77,
        sport=0xD000,
    )
    fast = spec_frame(spec)
    assert fast == packet_bytes(spec_packet(spec))  # scapy computes the RoCEv2 ICRC itself
    computed, stored = masked_icrc(fast)
    assert computed == stored


def test_icrc_masks_only_the_variant_fields() -> None:
    frame = spec_frame(
        RoceSpec("10.0.0.1", "10.0.0.2", 0x0A, 5, 6, b"payload!", sport=0xC000, ecn=2)
    )
    assert decode(frame).err_icrc == 0
    variant = {15, 22, 24, 25, 40, 41, 46}  # TOS, TTL, IP checksum, UDP checksum, BTH byte 4
    n_ip = 14 + 20 + 8 + 12 + 16 + 8 + 4
    for i in range(14, n_ip - 4):
        f = bytearray(frame)
        f[i] ^= 0x01
        rec = decode(bytes(f))
        if i in variant:
            assert rec.err_icrc == 0, f"byte {i} is masked by the ICRC"
        elif 16 <= i < 18:  # IPv4 total length: the packet ends elsewhere
            assert rec.err_truncated or rec.err_icrc or rec.err_ip_csum
        else:
            assert rec.err_icrc == 1 or rec.is_roce == 0 or rec.err_unsupported, (
                f"flipping byte {i} went unnoticed"
            )
    # every ICRC bit matters
    for bit in range(32):
        f = bytearray(frame)
        f[n_ip - 4 + bit // 8] ^= 1 << (bit % 8)
        assert decode(bytes(f)).err_icrc == 1


def test_verify_icrc() -> None:
    good = [v for v in load() if v.verdict == "ok"]
    assert all(verify_icrc(v.frame) for v in good)
    bad = [v for v in load() if v.verdict == "bad_icrc"]
    assert bad and not any(verify_icrc(v.frame) for v in bad)
    for v in load():
        if v.verdict in ("truncated", "not_roce", "pfc", "pause", "unsupported"):
            with pytest.raises(ValueError, match="no ICRC to verify"):
                verify_icrc(v.frame)
