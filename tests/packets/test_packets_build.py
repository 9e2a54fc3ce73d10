"""Builder API used by the host models and scenarios."""

from __future__ import annotations

import pytest
from scapy.contrib.roce import BTH
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

from controller.packets import Decoded, decode
from controller.packets.build import (
    RoceSpec,
    ack_frame,
    cnp_frame,
    flow_sport,
    nak_seq_frame,
    packet_bytes,
    rnr_nak_frame,
    roce_frame,
    roce_packet,
    spec_frame,
    spec_packet,
    with_spec,
)
from controller.packets.constants import (
    AETH_NAK_PSN_SEQ_ERROR,
    AETH_RNR_NAK,
    CNP_OPCODE,
    RC_OPCODES,
    ROCEV2_UDP_PORT,
)
from controller.packets.fields import FIELD_NAMES, FIELDS, RECORD_BITS


@pytest.mark.parametrize("opcode", sorted(RC_OPCODES))
@pytest.mark.parametrize(
    "version,src,dst,vlan",
    [
        (2, "10.9.0.1", "10.9.0.2", None),
        (2, "10.9.0.1", "10.9.0.2", 100),
        (2, "fd00::9:1", "fd00::9:2", None),
        (2, "fd00::9:1", "fd00::9:2", 4094),
        (1, "fd00::9:1", "fd00::9:2", None),
        (1, "10.9.0.1", "10.9.0.2", 7),
    ],
)
def test_fast_path_equals_scapy_and_decodes(opcode, version, src, dst, vlan) -> None:
    spec = RoceSpec(
        src,
        dst,
        opcode,
        0x800001,
        0xFFFFFF,
        b"\x01\x02\x03",
        version=version,
        vlan=vlan,
        pcp=3,
        dscp=46,
        ecn=3,
        se=1,
        m=1,
        ackreq=1,
        pkey=0x7FFF,
        va=1 << 63,
        rkey=0xFFFFFFFF,
        dlen=1 << 31,
        imm=1,
        syndrome=0x7F,
        msn=1,
    )
    fast = spec_frame(spec)
    assert fast == packet_bytes(spec_packet(spec))
    rec = decode(fast)
    assert rec.verdict == "ok"
    assert (rec.bth_opcode, rec.bth_dqpn, rec.bth_psn, rec.bth_pad, rec.roce_version) == (
        opcode,
        0x800001,
        0xFFFFFF,
        1,
        version,
    )
    assert (rec.dscp, rec.ecn, rec.ecn_ce, rec.vlan_valid) == (46, 3, 1, int(vlan is not None))
    assert len(fast) >= 60


def test_sport_entropy_and_never_53() -> None:
    sp = flow_sport("10.0.0.1", "10.0.0.2", 17)
    assert 0xC000 <= sp <= 0xFFFF
    assert sp == flow_sport("10.0.0.1", "10.0.0.2", 17)
    assert len({flow_sport("10.0.0.1", "10.0.0.2", q) for q in range(64)}) > 32
    frame = roce_frame("10.0.0.1", "10.0.0.2", "SEND_ONLY", 17, 0, b"x")
    assert decode(frame).udp_sport == sp
    assert decode(frame).udp_dport == ROCEV2_UDP_PORT
    for bad in (53, 4791, 0xBFFF):
        with pytest.raises(ValueError, match="source port"):
            roce_frame("10.0.0.1", "10.0.0.2", 4, 1, 0, sport=bad)
    pkt = Ether(bytes(roce_packet("10.0.0.1", "10.0.0.2", 4, 1, 0, b"abcd")))
    assert pkt[UDP].dport == ROCEV2_UDP_PORT and BTH in pkt


def test_field_range_checks() -> None:
    with pytest.raises(ValueError, match="psn"):
        roce_frame("10.0.0.1", "10.0.0.2", 4, 1, 1 << 24)
    with pytest.raises(ValueError, match="dqpn"):
        roce_frame("10.0.0.1", "10.0.0.2", 4, -1, 0)
    with pytest.raises(ValueError, match="VLAN"):
        roce_frame("10.0.0.1", "10.0.0.2", 4, 1, 0, vlan=4096)


def test_ack_nak_cnp_helpers() -> None:
    a = decode(ack_frame("10.0.0.2", "10.0.0.1", 5, 100, msn=3))
    assert (a.bth_opcode, a.aeth_syndrome >> 5, a.aeth_msn, a.bth_psn) == (0x11, 0, 3, 100)
    n = decode(nak_seq_frame("10.0.0.2", "10.0.0.1", 5, 42, msn=3))
    assert n.aeth_syndrome == AETH_NAK_PSN_SEQ_ERROR and n.bth_psn == 42
    r = decode(rnr_nak_frame("10.0.0.2", "10.0.0.1", 5, 42, msn=3, timer=14))
    assert r.aeth_syndrome == AETH_RNR_NAK | 14
    c = decode(cnp_frame("10.0.0.2", "10.0.0.1", 0x123))
    assert (c.is_cnp, c.bth_opcode, c.bth_becn, c.bth_dqpn, c.dscp) == (1, CNP_OPCODE, 1, 0x123, 48)
    assert c.verdict == "ok"


def test_with_spec_and_payload_padding() -> None:
    s = RoceSpec("10.0.0.1", "10.0.0.2", "WRITE_MIDDLE", 9, 10, b"12345", sport=0xC000)
    s2 = with_spec(s, psn=11)
    assert decode(spec_frame(s2)).bth_psn == 11
    assert s.pad_count == 3 and s.body == b"12345\x00\x00\x00"
    assert RoceSpec("10.0.0.1", "10.0.0.2", 7, 9, 10, b"1234", sport=0xC000).pad_count == 0


def test_record_packing() -> None:
    assert RECORD_BITS == sum(b for _, b in FIELDS)
    assert FIELD_NAMES[0] == "eth_dst" and FIELD_NAMES[-1] == "err_unsupported"
    assert [n for n in FIELD_NAMES if n.startswith("pfc_quanta")] == [
        f"pfc_quanta{i}" for i in range(8)
    ]
    rec = decode(
        roce_frame("fd00::1", "fd00::2", "WRITE_ONLY_IMM", 0xABCDEF, 77, b"zz", va=5, imm=6)
    )
    packed = rec.to_int()
    assert packed < (1 << RECORD_BITS)
    assert Decoded.from_int(packed) == rec
    assert packed & 1 == rec.err_unsupported
    assert packed >> (RECORD_BITS - 48) == rec.eth_dst
    with pytest.raises(TypeError):
        Decoded(no_such_field=1)
    with pytest.raises(ValueError, match="does not fit"):
        Decoded(vlan_pcp=8).to_int()
