"""PsnTemplate (what the host model sends a message's packets with) gives the very bytes
roce_frame does, for every header shape: the PSN and the ICRC are the only bytes that move."""

from __future__ import annotations

import pytest

from controller.packets import decode
from controller.packets.build import psn_template, roce_frame

SHAPES = [
    ("10.0.0.1", "10.0.1.2", 0x06, dict()),  # WRITE_FIRST: RETH
    ("10.0.0.1", "10.0.1.2", 0x07, dict()),  # WRITE_MIDDLE
    ("10.0.0.1", "10.0.1.2", 0x11, dict(syndrome=0x1F, msn=77)),  # ACK: a short frame, padded
    ("10.0.0.1", "10.0.1.2", 0x0B, dict(imm=0xDEADBEEF, vlan=5, pcp=3)),  # WRITE_ONLY_IMM, tagged
    ("fd00::1", "fd00::2", 0x08, dict(ackreq=1)),  # IPv6
    ("10.0.0.1", "10.0.1.2", 0x07, dict(version=1)),  # RoCEv1 (GRH)
]


@pytest.mark.parametrize("src,dst,opcode,kw", SHAPES)
def test_template_equals_roce_frame(src, dst, opcode, kw):
    payload = bytes(range(256)) * 4 if opcode not in (0x11,) else b""
    kw = dict(
        kw,
        eth_src="02:00:00:00:00:01",
        eth_dst="02:00:00:00:00:02",
        va=0x1000,
        rkey=0x42,
        sport=0xC123,
    )
    t = psn_template(src, dst, opcode, 0x123456, payload, **kw)
    for psn in (0, 1, 0x7FFFFF, 0xFFFFFF, 0xABCDEF):
        want = roce_frame(src, dst, opcode, 0x123456, psn, payload, **kw)
        got = t.frame(psn)
        assert got == want, (psn, got.hex(), want.hex())
        rec = decode(got)
        assert rec.bth_psn == psn and not rec.err_icrc
