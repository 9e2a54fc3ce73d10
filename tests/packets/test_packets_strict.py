"""decode_strict(): explicit errors that say what is wrong and where."""

from __future__ import annotations

import pytest

from controller.packets import MalformedFrame, decode, decode_strict
from controller.packets.build import RoceSpec, pfc_frame, spec_frame

SPEC = RoceSpec("10.0.0.1", "10.0.0.2", 0x0A, 7, 9, bytes(32), sport=0xC000)
FRAME = spec_frame(SPEC)


@pytest.mark.parametrize(
    "cut,message",
    [
        (0, "truncated in Ethernet header at byte 0"),
        (13, "truncated in Ethernet header at byte 13"),
        (20, "truncated in IPv4 header at byte 20"),
        (40, "truncated in UDP header at byte 40"),
        (50, "truncated in BTH at byte 50"),
        (60, "truncated in RETH at byte 60"),
        (80, "truncated: frame ends at byte 80, the IP length field says 106"),
        (104, "truncated in ICRC at byte 104"),
    ],
)
def test_truncation_messages(cut: int, message: str) -> None:
    with pytest.raises(MalformedFrame) as exc:
        decode_strict(FRAME[:cut])
    assert str(exc.value) == message
    assert exc.value.decoded.err_truncated == 1


def test_other_messages() -> None:
    f = bytearray(FRAME)
    f[-1] ^= 1
    with pytest.raises(
        MalformedFrame,
        match=r"bad ICRC at byte 102: got 0x[0-9a-f]{8}, "
        r"computed 0x[0-9a-f]{8}",
    ):
        decode_strict(bytes(f))
    f = bytearray(FRAME)
    f[24] ^= 1
    with pytest.raises(MalformedFrame, match="bad IPv4 header checksum at byte 24"):
        decode_strict(bytes(f))
    with pytest.raises(MalformedFrame, match="unsupported: BTH transport version 2 at byte 43"):
        decode_strict(spec_frame(RoceSpec("10.0.0.1", "10.0.0.2", 4, 1, 1, sport=0xC000, tver=2)))
    with pytest.raises(MalformedFrame, match="truncated in PFC body at byte 30"):
        decode_strict(pfc_frame("02:00:00:00:00:01", {1: 5})[:30])
    f = bytearray(FRAME)
    f[14] = 0x55
    with pytest.raises(MalformedFrame, match="IP version 5 under EtherType 0x0800"):
        decode_strict(bytes(f))


def test_truncated_behind_short_ip_length() -> None:
    f = bytearray(FRAME)
    f[16:18] = (20 + 8 + 4).to_bytes(2, "big")  # IP ends inside the BTH, frame goes on
    f[24:26] = bytes(2)
    words = sum(int.from_bytes(f[i : i + 2], "big") for i in range(14, 34, 2))
    words = (words & 0xFFFF) + (words >> 16)
    f[24:26] = (~words & 0xFFFF).to_bytes(2, "big")
    with pytest.raises(MalformedFrame, match=r"truncated in BTH at byte 46 \(the IP length"):
        decode_strict(bytes(f))


def test_decode_is_lenient_where_strict_raises() -> None:
    rec = decode(FRAME[:50])
    assert (rec.err_truncated, rec.is_roce, rec.udp_dport, rec.roce_version) == (1, 0, 4791, 2)
    assert decode_strict(FRAME) == decode(FRAME)
