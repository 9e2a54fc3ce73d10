"""The 802.1Qbb PFC / 802.3x PAUSE scapy layer: build, dissect, pad, decode."""

from __future__ import annotations

import pytest
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Padding

from controller.packets import decode
from controller.packets.build import (
    packet_bytes,
    pause_frame,
    pause_packet,
    pfc_frame,
    pfc_packet,
)
from controller.packets.constants import ETH_P_MAC_CONTROL, MAC_CONTROL_PFC, PFC_DST_MAC
from controller.packets.layers import PFC, MACControl, Pause


def test_pfc_layer_builds_the_wire_format() -> None:
    pkt = (
        Ether(src="02:00:00:00:00:01", dst=PFC_DST_MAC)
        / MACControl()
        / PFC(class_enable=0x09, quanta0=0x1111, quanta3=0xFFFF)
    )
    raw = bytes(pkt)
    assert len(raw) == 60  # padded, no FCS
    assert raw[12:14] == b"\x88\x08"
    assert raw[14:16] == b"\x01\x01"
    assert raw[16:18] == b"\x00\x09"
    assert raw[18:20] == b"\x11\x11" and raw[24:26] == b"\xff\xff"
    assert raw[34:] == bytes(26)


def test_pfc_layer_dissects() -> None:
    frame = pfc_frame("02:00:00:00:00:01", [0, 0, 5, 0, 0, 0, 0, 9], vlan=3, pcp=7)
    pkt = Ether(frame)
    assert pkt[Dot1Q].type == ETH_P_MAC_CONTROL
    assert pkt[MACControl].opcode == MAC_CONTROL_PFC
    assert pkt[PFC].class_enable == 0x84
    assert [getattr(pkt[PFC], f"quanta{i}") for i in range(8)] == [0, 0, 5, 0, 0, 0, 0, 9]
    assert Padding in pkt and len(pkt[Padding].load) == 60 - 18 - 20


def test_pause_layer() -> None:
    frame = pause_frame("02:00:00:00:00:02", 0x1234)
    assert frame == packet_bytes(pause_packet("02:00:00:00:00:02", 0x1234))
    assert len(frame) == 60 and frame[14:18] == b"\x00\x01\x12\x34"
    pkt = Ether(frame)
    assert pkt[Pause].pause_time == 0x1234
    rec = decode(frame)
    assert (rec.is_pause, rec.pause_time, rec.is_pfc) == (1, 0x1234, 0)


@pytest.mark.parametrize(
    "quanta,cev,want_cev",
    [
        ({3: 0xFFFF}, None, 0x08),
        ({3: 0}, None, 0x08),  # XON: enabled with time 0
        ([1, 2, 3, 4, 5, 6, 7, 8], None, 0xFF),
        ([0, 0, 0, 0, 0, 0, 0, 0], 0x10, 0x10),
    ],
)
def test_fast_pfc_equals_scapy_and_decodes(quanta, cev, want_cev) -> None:
    fast = pfc_frame("02:00:00:00:00:03", quanta, cev=cev)
    assert fast == packet_bytes(pfc_packet("02:00:00:00:00:03", quanta, cev=cev))
    assert len(fast) == 60
    rec = decode(fast)
    q = [quanta.get(i, 0) for i in range(8)] if isinstance(quanta, dict) else quanta
    assert (rec.is_pfc, rec.pfc_cev) == (1, want_cev)
    assert [getattr(rec, f"pfc_quanta{i}") for i in range(8)] == q
    assert rec.eth_dst == 0x0180C2000001 and rec.ethertype == ETH_P_MAC_CONTROL


def test_pfc_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="8 quanta"):
        pfc_frame("02:00:00:00:00:03", [1, 2, 3])
    with pytest.raises(ValueError, match="out of 0-65535"):
        pfc_frame("02:00:00:00:00:03", {2: 70000})
