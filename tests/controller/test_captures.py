"""Pcap records keep a frame's true length: whole frames by default, and with a snap length
the stored bytes are cut while the original length stays the frame's (never the cut)."""

from __future__ import annotations

from scapy.utils import RawPcapReader

from controller.scenarios.report import write_pcap


def test_pcap_keeps_the_true_length(tmp_path):
    frames = [(1_000, bytes(range(256)) * 4, "in"), (2_500, b"\x01" * 60, "out")]
    whole = write_pcap(frames, tmp_path / "whole.pcap")
    recs = list(RawPcapReader(str(whole)))
    assert [data for data, _ in recs] == [f[1] for f in frames]
    assert [(m.caplen, m.wirelen) for _, m in recs] == [(1024, 1024), (60, 60)]
    snap = write_pcap(frames, tmp_path / "snap.pcap", snaplen=128)
    recs = list(RawPcapReader(str(snap)))
    assert [data for data, _ in recs] == [frames[0][1][:128], frames[1][1]]
    assert [(m.caplen, m.wirelen) for _, m in recs] == [(128, 1024), (60, 60)]
    # nanosecond timestamps
    assert [(m.sec, m.usec) for _, m in recs] == [(0, 1_000), (0, 2_500)]
