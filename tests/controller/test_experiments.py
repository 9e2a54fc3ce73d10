"""`rocelab experiment`: each experiment's physics at CI size, and a variant whose
parameters break the claim, so that its verdict must fail."""

from __future__ import annotations

import json

import pytest

from controller.cli import main
from controller.experiments import REGISTRY


def verdicts(res) -> dict[str, bool]:
    return {v.name: v.ok for v in res.verdicts}


@pytest.fixture(scope="module")
def memory():
    return REGISTRY["memory-vs-channel"].run(total=256 * 1024, message=32 * 1024)


def test_memory_vs_channel_physics(memory):
    assert memory.ok, [v for v in memory.verdicts if not v.ok]
    rows = {r["op"]: r for r in memory.table}
    assert [rows[k]["remote_completions"] for k in ("WRITE", "READ", "SEND")] == [0, 0, 8]
    starved = memory.table[-1]
    assert starved["rnr_naks"] >= 1 and starved["rnr_naks"] == starved["rnr_retries"]
    assert starved["goodput_gbps"] < 0.5 * rows["SEND"]["goodput_gbps"]
    assert rows["WRITE"]["goodput_gbps"] > 8.5  # 10 Gb/s link, 1024 B MTU


def test_memory_vs_channel_negative_control():
    """Enough buffers in the 'starved' case: the RNR claim must fail."""
    res = REGISTRY["memory-vs-channel"].run(total=128 * 1024, message=32 * 1024, starved_depth=4)
    v = verdicts(res)
    assert not res.ok and not v["too few buffers: RNR NAKs"]
    assert not v["posting too few buffers costs throughput"]
    assert v["remote CPU events: WRITE 0, READ 0, SEND one per message"]


LOSS = dict(rates=[0.02, 0.05], duration_us=700.0, warmup_us=100.0)


@pytest.fixture(scope="module")
def loss():
    return REGISTRY["loss"].run(**LOSS)


def test_loss_physics(loss):
    assert loss.ok, [v for v in loss.verdicts if not v.ok]
    rows = loss.table
    gbn = [r for r in rows if r["loss_of"] == "data" and r["transport"] == "gbn"]
    sr = [r for r in rows if r["loss_of"] == "data" and r["transport"] == "sr"]
    # go-back-N resends a window's worth per loss, selective repeat about one packet
    for g, s in zip(gbn, sr, strict=True):
        assert g["retransmitted"] > 10 * g["dropped"] / 2
        assert s["retransmitted"] <= 2 * s["dropped"]
    assert 30 < loss.data["bdp_packets"] < 60  # 4 x 10 us of propagation at 10 Gb/s


def test_loss_negative_control():
    """'selective repeat' that is really go-back-N: SR cannot beat GBN."""
    res = REGISTRY["loss"].run(**LOSS, sr_transport="gbn")
    assert not verdicts(res)["selective repeat beats go-back-N at every loss rate"]
    assert not res.ok


def test_unknown_parameter_is_refused():
    with pytest.raises(ValueError, match="unknown parameter"):
        REGISTRY["loss"].run(nope=1)


def test_cli_list_and_bad_name(capsys):
    assert main(["experiment", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in REGISTRY)
    assert main(["experiment", "no-such-thing"]) == 2
    assert "no experiment" in capsys.readouterr().err


def test_cli_runs_one_and_writes_json_and_plot(tmp_path, capsys, monkeypatch):
    exp = REGISTRY["memory-vs-channel"]
    monkeypatch.setitem(exp.defaults, "total", 128 * 1024)
    monkeypatch.setitem(exp.defaults, "message", 32 * 1024)
    assert main(["experiment", "memory-vs-channel", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "question:" in out and "answer:" in out and "verdict: PASS" in out
    data = json.loads((tmp_path / "memory-vs-channel.json").read_text())
    assert data["ok"] and data["table"][2]["remote_completions"] == 4
    assert (tmp_path / "memory-vs-channel.png").stat().st_size > 1000
    monkeypatch.setitem(exp.defaults, "starved_depth", 4)  # the negative control: exit 1
    assert main(["experiment", "memory-vs-channel"]) == 1


def test_v4_v6_physics():
    res = REGISTRY["v4-v6"].run(total=256 * 1024)
    assert res.ok, [v for v in res.verdicts if not v.ok]
    v4, v6, hole4, hole6 = res.table
    # 20 more header bytes per 1024-byte packet: 1126 vs 1106 wire bytes
    assert v4["goodput_gbps"] / v6["goodput_gbps"] == pytest.approx(1126 / 1106, rel=1e-3)
    # 64 KiB = 64 packets, every one dropped, sent 1 + retry_cnt (2) times, then the error
    assert hole6["mtu_drops"] == 64 * 3 and hole6["status"] == "IBV_WC_RETRY_EXC_ERR"
    assert hole4["status"] == "IBV_WC_SUCCESS"


def test_v4_v6_negative_control():
    """A port MTU that does fit IPv6: the black-hole claim must fail."""
    res = REGISTRY["v4-v6"].run(total=128 * 1024, black_hole_mtu=1104)
    v = verdicts(res)
    assert not res.ok and not v["the data plane drops IPv6 frames over MTU 1104 (DROP_MTU)"]


def test_v1_vs_v2_physics():
    res = REGISTRY["v1-vs-v2"].run(total=4096)
    assert res.ok, [v for v in res.verdicts if not v.ok]
    v1r = res.table[2]
    # 4 packets, each sent 1 + retry_cnt (1) times, all dropped at the router
    assert v1r["rocev1_l3_drops"] == 8 and v1r["bytes_delivered"] == 0


def test_v1_vs_v2_negative_control():
    """No router between the subnets (routing l2 bridges them): RoCEv1 gets through, so
    the claim 'RoCEv1 does not cross the routed hop' must fail."""
    res = REGISTRY["v1-vs-v2"].run(total=4096, routed_mode="l2")
    assert not verdicts(res)["RoCEv1 does not cross the routed hop"] and not res.ok


def test_entropy_physics():
    res = REGISTRY["entropy"].run(flows=16, links=4)
    assert res.ok, [v for v in res.verdicts if not v.ok]
    fixed, per_qp = res.table
    assert fixed["links_used"] == 1 and per_qp["links_used"] == 4
    assert sum(per_qp["per_link"].values()) == 16


def test_entropy_eight_consecutive_qps_polarize():
    """CRC-16 is linear and the host's per-QP ports come from consecutive QPNs: 8 such
    flows land on only 2 of 4 links (what the experiment shows at 8 flows)."""
    res = REGISTRY["entropy"].run(flows=8, links=4)
    assert res.table[1]["links_used"] == 2 and res.table[1]["matches_crc16_oracle"]


def test_entropy_negative_control():
    """No per-QP entropy in the 'varied' case either: the spread claim must fail."""
    res = REGISTRY["entropy"].run(flows=8, links=4, varied=False)
    v = verdicts(res)
    assert not v["per-QP source ports spread the flows over every link"] and not res.ok
    assert v["the switch's choice is CRC-16 of the 5-tuple mod the group size"]


# CI size: 800 us, so the retransmit timeout is 500 us. With nothing, the losing sender's
# whole window is tail-dropped (the two senders are phase-locked at the same line rate) and
# only its RTO resends it: with the default 1 ms RTO an 800 us run saw 256 drops, 0 resent.
LOSSLESS = dict(duration_us=800.0, warmup_us=200.0, rto_us=500.0)


def test_lossless_physics():
    res = REGISTRY["lossless"].run(**LOSSLESS)
    assert res.ok, [v for v in res.verdicts if not v.ok]
    none, pfc, ecn, both = res.table
    assert none["queue_max"] == 128  # the buffer, full
    assert pfc["queue_max"] < 128 and pfc["fairness"] > 0.9


def test_lossless_negative_control():
    """A buffer deep enough for the whole run: 'nothing' no longer drops."""
    res = REGISTRY["lossless"].run(**LOSSLESS, buffer=4000)
    v = verdicts(res)
    assert not v["with nothing, the incast overflows the buffer and drops"] and not res.ok


def test_capture_physics():
    res = REGISTRY["capture"].run(total=16 * 1024, kernel_frames=3)
    assert res.ok, [v for v in res.verdicts if not v.ok]
    by = {r["point"]: r for r in res.table}
    assert by["tcpdump on the server (NIC mirror off)"]["roce"] == 0
    assert by["tcpdump on the server (NIC mirror off)"]["kernel"] == 3
    assert by["switch mirror port"]["roce"] == 16
    # with the mirror flag: 16 data packets in and the responder's ACK(s) out
    assert by["tcpdump on the server (NIC mirror on)"]["roce"] == 16 + 1


def test_capture_negative_control():
    """The server's NIC mirrors offloaded traffic: tcpdump is no longer blind."""
    res = REGISTRY["capture"].run(total=16 * 1024, nic_mirror=True)
    v = verdicts(res)
    assert not v["tcpdump on the server sees none of the RoCE flow, all of the kernel's"]
    assert not res.ok


def test_experiment_all_at_the_default_size(tmp_path, capsys):
    """What a user runs (`rocelab experiment all --out DIR`): every experiment passes at
    its default size, and writes its JSON and plot."""
    assert main(["experiment", "all", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("verdict: PASS") == len(REGISTRY) >= 7
    for name in REGISTRY:
        assert json.loads((tmp_path / f"{name}.json").read_text())["ok"]
        assert (tmp_path / f"{name}.png").is_file()


def test_cli_out_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["experiment", "capture", "--out", str(f)]) == 2
    assert "not a directory" in capsys.readouterr().err
