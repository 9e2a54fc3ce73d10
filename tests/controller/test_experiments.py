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
    res = REGISTRY["memory-vs-channel"].run(total=128 * 1024, message=32 * 1024,
                                            starved_depth=4)
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
