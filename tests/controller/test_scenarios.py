"""End-to-end scenarios: host models and the real roce_switch.p4 on the in-process p4sim
target, in virtual time. Each asserts the physics the scenario exists to show; runs are
kept to a few ms of virtual time."""

from __future__ import annotations

import copy
import math

import pytest

from controller.packets import decode
from controller.scenarios.scenario import judge, load_scenario, run_once, run_scenario
from controller.targets import DEFAULT_PROGRAM
from controller.targets.p4sim import P4SimTarget

pytestmark = [pytest.mark.slow, pytest.mark.virtual_time]


def target(seed: int = 1) -> P4SimTarget:
    return P4SimTarget(DEFAULT_PROGRAM, seed=seed)


def verdicts(sc, runs) -> dict[str, tuple[bool, str]]:
    return {v.name: (v.ok, v.detail) for v in judge(sc, runs)}


_RUNS: dict[str, object] = {}

# CI sizes: 3 ms of virtual time for the DCQCN incasts (1.5 ms warm-up), 1.5 ms for PFC
SHORT = {
    "incast-dcqcn": (3000, 1500),
    "incast-ecn-no-rp": (3000, 1500),
    "incast-nocc": (3000, 1500),
    "incast-dcqcn-pfc": (3000, 1500),
    "incast-pfc": (1500, 300),
    "incast-pfc-off": (1500, 300),
    "cnp-loop": (2000, 1000),
    "cnp-loop-no-rp": (2000, 1000),
    "incast-dcqcn-paper": (3000, 1500),
    "incast-dcqcn-paper-no-rp": (3000, 1500),
}


def short_run(name: str):
    """One run per scenario per test session (they are deterministic)."""
    if name not in _RUNS:
        sc = load_scenario(name)
        dur, warm = SHORT[name]
        sc.update(duration_us=dur, warmup_us=warm)
        _RUNS[name] = (sc, run_once(sc, target(), 1, progress=False))
    return _RUNS[name]


def test_incast_dcqcn_fair_share_and_queue_band():
    sc, run = short_run("incast-dcqcn")
    g = [f.goodput_bps for f in run.flows]
    mean = sum(g) / 2
    assert all(abs(x - mean) / mean <= 0.10 for x in g), g  # fair share within 10%
    q = run.queue
    assert q["kmin"] == 1 and q["kmax"] == 19  # 1 KB and 20 KB in 1098-byte frames, rounded up
    assert q["kmin"] <= q["p90"] <= q["kmax"] and q["max"] < q["buffer"] == 92
    assert run.capacity_bps == pytest.approx(10e9 * 1024 / 1106)
    assert 0.9 * run.capacity_bps < sum(g) <= run.capacity_bps  # busy, never above the wire
    c = run.counters
    assert c["ecn_marked"] > 0 and c["host_cnps_sent"] > 0 and c["cnp_tx"] == 0
    assert c["tm_drops"] == 0 and c["switch_drops"] == 0
    assert all(f.cnps > 0 and f.mean_rate_bps < 10e9 for f in run.flows)
    v = verdicts(sc, [run])
    assert set(v) == {"fair share", "queue held in Kmin..Kmax", "bottleneck utilized", "zero drops"}
    assert all(ok for ok, _ in v.values()), v
    # the mirror port saw h1's traffic, whole frames, as decodable RoCEv2
    (frames,) = run.captures.values()
    recs = [decode(d) for _, d in frames]
    assert recs and all(r.is_roce and r.ip_src == 0x0A000001 for r in recs)  # only h1's traffic
    # the tap on the bottleneck saw both directions: data out to h3, ACKs and CNPs in from h3
    (tap,) = run.taps.values()
    assert {d for _, _, d in tap} == {"in", "out"}


def test_reaction_point_off_fails_lossless_and_queue_checks():
    """The negative control of incast-dcqcn: marking and CNPs on, RP off. The same checks
    that pass with the RP (previous test) fail here for the stated reason: the queue runs to
    the 92-packet buffer and tail-drops."""
    base, _ = short_run("incast-dcqcn")
    sc, run = short_run("incast-ecn-no-rp")
    assert run.counters["host_cnps_sent"] > 0  # the NP worked: only the RP is missing
    v = verdicts(base, [run])  # incast-dcqcn's own checks on the control's run
    assert v["zero drops"][0] is False and run.counters["tm_drops"] > 0
    assert v["queue held in Kmin..Kmax"][0] is False and run.queue["p90"] > run.queue["kmax"]
    assert run.queue["max"] == 92  # at the buffer
    ctrl = verdicts(sc, [run])
    assert set(ctrl) == {"control: zero drops", "control: queue held in Kmin..Kmax"}
    assert all(ok for ok, _ in ctrl.values()), ctrl


def test_no_congestion_control_drops_and_starves_a_flow():
    """No ECN, no RP, no PFC: tail drops, and go-back-N starves one of the two flows."""
    sc, run = short_run("incast-nocc")
    assert run.counters["tm_drops"] > 0 and run.counters["ecn_marked"] == 0
    assert sum(f.retransmitted for f in run.flows) > 0
    g = sorted(f.goodput_bps for f in run.flows)
    assert g[0] < 0.5 * g[1]  # far from a fair share
    ctrl = verdicts(sc, [run])
    assert all(ok for ok, _ in ctrl.values()), ctrl


def test_dcqcn_with_pfc_is_lossless_and_in_band():
    sc, run = short_run("incast-dcqcn-pfc")
    v = verdicts(sc, [run])
    assert all(ok for ok, _ in v.values()), v
    assert run.counters["tm_drops"] == 0 and run.counters["ecn_marked"] > 0


def test_incast_pfc_pauses_and_zero_drops():
    sc, run = short_run("incast-pfc")
    c = run.counters
    assert c["pfc_tx"] >= 2 and c["host_pfc_rx"] >= 2  # XOFF (and XON) to both senders
    assert c["tm_drops"] == 0 and c["switch_drops"] == 0
    assert c["ecn_marked"] == 0 and c["host_cnps_sent"] == 0  # PFC only
    # with 2:1 over-subscription and no drops, the queue is bounded by XOFF + headroom
    assert run.queue["max"] <= 2 * (16 + 12)
    g = [f.goodput_bps for f in run.flows]
    assert 0.9 * run.capacity_bps < sum(g) <= run.capacity_bps and abs(g[0] - g[1]) / max(g) < 0.1
    assert all(f.retransmitted == 0 and f.timeouts == 0 for f in run.flows)
    v = verdicts(sc, [run])
    assert all(ok for ok, _ in v.values()), v


def test_without_pfc_incast_pfc_drops():
    """incast-pfc's control: the same incast with PFC off overflows the queue."""
    base, _ = short_run("incast-pfc")
    sc, run = short_run("incast-pfc-off")
    assert run.counters["pfc_tx"] == 0 and run.counters["tm_drops"] > 0
    v = verdicts(base, [run])
    assert v["zero drops"][0] is False and v["PFC pauses sent"][0] is False
    ctrl = verdicts(sc, [run])
    assert all(ok for ok, _ in ctrl.values()), ctrl


def test_lossy_goodput_monotone_in_drop_rate():
    sc = load_scenario("lossy")
    sc["sweep"] = {"drop_rate": [0, 0.001, 0.01]}
    res = run_scenario(sc, target, 1, duration_us=3000, progress=False)
    pts = sorted((r.sweep_value, sum(f.goodput_bps for f in r.flows)) for r in res.runs)
    goods = [g for _, g in pts]
    assert goods[0] > 8.5e9  # lossless: near the 9.26 Gb/s payload capacity
    assert goods[0] >= goods[1] >= goods[2]
    assert goods[2] < 0.8 * goods[0]  # the go-back-N collapse at 1%
    lossy = [r for r in res.runs if r.sweep_value][-1]
    assert lossy.flows[0].naks > 0 and lossy.flows[0].retransmitted > 0
    assert lossy.counters["switch_drops"] > 0  # the drops were the switch's fault injection
    assert res.ok, [(v.name, v.detail) for v in res.verdicts]


def test_cnp_loop_switch_np_bound():
    sc, run = short_run("cnp-loop")
    c = run.counters
    assert c["host_cnps_sent"] == 0  # the hosts' NP is off: the switch is the NP
    assert c["cnp_tx"] > 0 and c["host_cnps_rx"] == c["cnp_tx"]
    bound = math.floor(run.duration_ns / 50_000) + 1
    for f in run.flows:
        assert 0 < f.cnps <= bound  # at most one CNP per flow per 50 us
        assert f.final_rate_bps < 10e9  # and the RP reacted
    assert c["tm_drops"] == 0


def test_same_seed_same_run_different_seed_differs():
    sc = load_scenario("incast-dcqcn")
    sc.update(duration_us=600, warmup_us=0)
    a = run_once(copy.deepcopy(sc), target(7), 7, progress=False)
    b = run_once(copy.deepcopy(sc), target(7), 7, progress=False)
    assert a.series["queue"] == b.series["queue"] and a.counters == b.counters
    c = run_once(copy.deepcopy(sc), target(8), 8, progress=False)
    assert c.series["queue"] != a.series["queue"] or c.counters != a.counters


def test_cli_run_writes_outputs_and_failing_run_prints_reproduce(tmp_path, capsys):
    import json

    import yaml

    from controller.cli import main

    sc = load_scenario("incast-pfc")
    sc.pop("_path")
    sc.pop("extends", None)
    sc.update(name="pfc-short", duration_us=400, warmup_us=100)
    sc["expect"] = {"zero_drops": True, "min_pauses": 10**6}  # cannot be met: must fail
    path = tmp_path / "pfc-short.yaml"
    path.write_text(yaml.safe_dump(sc))
    out = tmp_path / "out"
    rc = main(["run", str(path), "--out", str(out), "--seed", "5", "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 1
    assert "FAIL" in cap.out and "PASS" in cap.out and "40 Mb/s" in cap.out  # checks + DCQCN values
    assert "seed 5" in cap.err and f"rocelab run {path} --seed 5" in cap.err
    for name in (
        "pfc-short.png",
        "pfc-short_mirror_port9.pcap",
        "pfc-short_tap_port1_2_3.pcap",
        "summary.json",
        "summary.txt",
    ):
        assert (out / name).stat().st_size > 0
    doc = json.loads((out / "summary.json").read_text())
    assert doc["ok"] is False and doc["runs"][0]["seed"] == 5
    from scapy.utils import rdpcap

    frames = rdpcap(str(out / "pfc-short_mirror_port9.pcap"))
    assert len(frames) > 10 and float(frames[1].time) > float(frames[0].time)


def test_every_scenario_mirrors_and_passes_check():
    from controller.config import check
    from controller.scenarios.scenario import _flows, _switch_config, list_scenarios

    names = list_scenarios()
    assert {
        "incast-dcqcn",
        "incast-pfc",
        "lossy",
        "cnp-loop",
        "incast-nocc",
        "incast-ecn-no-rp",
        "incast-pfc-off",
        "incast-dcqcn-pfc",
    } <= set(names)
    for name in names:
        sc = load_scenario(name)
        if "fabric" in sc:  # multi-switch files: tests/fabric/test_fabric_yaml.py
            continue
        cfg, errors = _switch_config(sc, _flows(sc), 0.01)
        assert [f for f in check(cfg, errors) if f.level == "error"] == [], name
        assert cfg.mirror, f"{name} has no mirror port"


def test_mirror_pcap_decodes_in_tshark(tmp_path):
    """tshark, an independent decoder, sees the NAKs of a lossy run in the mirror pcap."""
    import shutil
    import subprocess

    from controller.scenarios.report import write_pcap

    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed (make test installs it when run as root)")
    sc = load_scenario("lossy")
    run = run_once(sc, target(), 1, sweep_value=0.01, duration_us=1000, progress=False)
    (frames,) = run.captures.values()
    pcap = write_pcap(frames, tmp_path / "m.pcap")
    out = subprocess.run(
        ["tshark", "-r", str(pcap)], capture_output=True, text=True, timeout=60
    ).stdout
    naks = [line for line in out.splitlines() if "PSN Sequence Error" in line]
    assert len(naks) >= run.flows[0].naks > 0  # a NAK may still be on its way to h1
    assert all("10.0.0.2 → 10.0.0.1" in line and "QP=0x000100" in line for line in naks)


def test_read_through_the_switch_recovers_lost_responses():
    """RC READ end to end: READ requests h1 -> h2, READ RESPONSE data h2 -> h1 through
    roce_switch.p4, which drops every 50th response (fault injection); the requester
    re-issues the READ from the first missing response and every byte arrives."""
    sc = load_scenario("lossy")
    sc["link"] = {"speed": "10G", "prop_ns": 1000}
    sc["switch"]["ports"] = {
        1: {"speed": "10G", "cable_m": 200},
        2: {"speed": "10G", "cable_m": 200},
        9: {"speed": "10G"},
    }
    sc["switch"]["faults"] = [{"kind": "every_nth", "host": "h1", "qpn": 0x100, "n": 50}]
    sc["flows"] = [
        {"src": "h1", "dst": "h2", "op": "READ", "bytes": "256 KiB", "message": "64 KiB"}
    ]
    sc.pop("sweep")
    sc.update(warmup_us=0, sample_us=10)
    run = run_once(sc, target(), 1, duration_us=1500, progress=False)
    f = run.flows[0]
    assert run.telemetry.drops[2]["fault"] >= 5  # responses (in on port 2) dropped
    assert f.naks == 0  # a requester cannot NAK responses: it re-reads
    assert f.retransmitted > 0  # re-issued READ requests (go-back-N)
    delivered = sum(run.series["goodput"][f.name]) * 10_000 / 8e9
    assert delivered == pytest.approx(256 * 1024)  # every byte, exactly once, in order


def test_ipv6_hosts_and_switch_cnps_over_ipv6():
    """The same incast with IPv6 hosts: routed by ipv6_lpm, CE-marked in the IPv6 traffic
    class, and the switch's CNPs (built in P4 with their ICRC) accepted by the senders."""
    sc = load_scenario("cnp-loop")
    for i, h in enumerate(["h1", "h2", "h3"]):
        sc["switch"]["hosts"][h]["ip"] = f"2001:db8::{i + 1}"
    run = run_once(sc, target(), 1, duration_us=1000, progress=False)
    c = run.counters
    assert c["ecn_marked"] > 0 and c["cnp_tx"] > 0
    assert c["host_cnps_rx"] == c["cnp_tx"]  # every switch CNP passed the hosts' ICRC check
    assert all(f.goodput_bps > 3e9 and f.cnps > 0 for f in run.flows)
    assert c["switch_drops"] == 0 and c["tm_drops"] == 0


def _tshark_lines(pcap, display_filter: str | None = None) -> list[str]:
    import subprocess

    cmd = ["tshark", "-r", str(pcap)] + (["-Y", display_filter] if display_filter else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def _tshark_count(pcap, display_filter: str) -> int:
    return len(_tshark_lines(pcap, display_filter))


def _malformed(pcap) -> int:
    """Frames tshark calls malformed: its summary lines say so (the `_ws.malformed` filter
    misses what the InfiniBand dissector flags, e.g. "Invalid Packet Length from LRH")."""
    return sum("Malformed" in line or "Invalid" in line for line in _tshark_lines(pcap))


def test_demo_pcap_shows_the_protocol_in_tshark(tmp_path):
    """`rocelab run incast-dcqcn --out` (the demo, shortened) writes a tap pcap of both
    directions of the bottleneck with whole frames: tshark finds no malformed frame and sees
    RoCEv2 data, CE-marked data and CNPs; incast-pfc's tap of the senders' links has PFC."""
    import shutil

    from controller.cli import main

    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed (make test installs it when run as root)")
    out = tmp_path / "demo"
    assert (
        main(["run", "incast-dcqcn", "--out", str(out), "--duration-us", "3000", "--no-progress"])
        == 0
    )
    pcap = out / "incast-dcqcn_tap_port3.pcap"
    assert _malformed(pcap) == 0
    assert _tshark_count(pcap, "_ws.malformed || _ws.expert.severity >= warning") == 0
    data = _tshark_count(pcap, "infiniband.bth.opcode <= 10 && ip.dst == 10.0.0.3")
    ce = _tshark_count(pcap, "ip.dsfield.ecn == 3 && infiniband.bth.opcode <= 10")
    cnps = _tshark_count(pcap, "infiniband.bth.opcode == 129 && ip.src == 10.0.0.3")
    assert data > 1000 and 0 < ce < data and cnps > 0
    mirror = out / "incast-dcqcn_mirror_port9.pcap"
    assert _malformed(mirror) == 0
    out2 = tmp_path / "pfc"
    assert (
        main(["run", "incast-pfc", "--out", str(out2), "--duration-us", "600", "--no-progress"])
        == 0
    )
    pfc_pcap = out2 / "incast-pfc_tap_port1_2_3.pcap"
    assert _malformed(pfc_pcap) == 0
    assert _tshark_count(pfc_pcap, "macc.opcode == 0x0101 && eth.dst == 01:80:c2:00:00:01") > 0


def test_cpu_port_is_tapped():
    """Mirror h2's traffic to the CPU port: the tap records the PacketIns (the frames without
    the packet-in header) as direction "cpu", whole, decodable RoCEv2 from h2."""
    sc = load_scenario("incast-dcqcn")
    sc["switch"]["mirror"] = [{"session": 100, "port": 255, "match": {"src": "h2"}}]
    run = run_once(sc, target(), 1, duration_us=300, progress=False)
    cpu = [(t, d) for t, d, way in run.taps[255] if way == "cpu"]
    recs = [decode(d) for _, d in cpu]
    assert len(cpu) > 50 and all(r.is_roce and r.ip_src == 0x0A000002 for r in recs)
    assert [t for t, _ in cpu] == sorted(t for t, _ in cpu)
    assert set(run.taps) == {3, 255}  # the bottleneck (by default) and the CPU port


@pytest.mark.parametrize(
    "name,control",
    [("cnp-loop", "cnp-loop-no-rp"), ("incast-dcqcn-paper", "incast-dcqcn-paper-no-rp")],
)
def test_scenario_passes_and_its_control_fails(name: str, control: str) -> None:
    """The scenario's verdicts pass; with the reaction point off the same incast tail-drops,
    so the control's lossless check fails on real data (its expect_fail then passes)."""
    sc, run = short_run(name)
    v = verdicts(sc, [run])
    assert v and all(ok for ok, _ in v.values()), v
    assert run.counters["tm_drops"] == 0
    csc, crun = short_run(control)
    assert crun.counters["tm_drops"] > 0  # the physical reason: nothing slows the senders
    assert crun.counters["cnp_tx"] + crun.counters["host_cnps_sent"] > 0  # CNPs still flowed
    cv = verdicts(csc, [crun])
    assert "control: zero drops" in cv and all(ok for ok, _ in cv.values()), cv
