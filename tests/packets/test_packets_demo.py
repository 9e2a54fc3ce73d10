"""The packet demo writes a readable pcap and a decoded table."""

from __future__ import annotations

from scapy.utils import rdpcap

from controller.packets import decode
from controller.packets.demo import main


def test_demo_writes_pcap_and_table(tmp_path, capsys) -> None:
    assert main(["--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for word in (
        "WRITE_FIRST",
        "WRITE_MIDDLE",
        "WRITE_LAST",
        "ACK",
        "READ_REQUEST",
        "READ_RESPONSE_FIRST",
        "READ_RESPONSE_LAST",
        "CNP",
        "PFC",
        "p3=65535",
    ):
        assert word in out
    pkts = rdpcap(str(tmp_path / "roce_demo.pcap"))
    recs = [decode(bytes(p)) for p in pkts]
    assert [r.bth_opcode for r in recs[:8]] == [0x06, 0x07, 0x08, 0x11, 0x0C, 0x0D, 0x0F, 0x81]
    assert all(r.verdict == "ok" for r in recs[:8])
    assert recs[8].is_pfc == 1 and recs[8].pfc_cev == 0x08
    assert [r.bth_psn for r in recs[:3]] == [100, 101, 102]
    assert recs[2].ecn_ce == 1 and recs[7].bth_becn == 1
