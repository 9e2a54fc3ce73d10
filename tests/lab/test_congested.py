"""The congested lab: lab files, tc shaping, the DCQCN agent, and the 2-switch lab in CI.

The lab test runs `python -m lab.congested` (what `make lab` runs) twice on the same
topology: with the lab policy's ECN marking, and as the control without it. Its checks
count events (marks, CNPs, cuts, pause frames), never time: a slow machine changes the
numbers, not their signs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.hosts.dcqcn import DcqcnParams
from controller.packets import decode
from controller.packets.build import cnp_frame, pfc_frame
from controller.targets import netns
from lab import shape
from lab.agent import Peer
from lab.congested import agent_argvs, congestion_failures
from lab.dcqcn_agent import WIRE_OVERHEAD, DcqcnAgent, parse_params
from lab.labfile import TOPOLOGY_DIR, LabFileError, load_lab, parse_lab

ROOT = Path(__file__).resolve().parents[2]
needs_root = pytest.mark.skipif(
    not netns.is_root(), reason="needs root (netns, veth, tc, AF_PACKET)"
)


def _two_switch() -> dict:
    return yaml.safe_load((TOPOLOGY_DIR / "two_switch.yaml").read_text())


# -------------------------------------------------------------------- lab files


def test_two_switch_lab_file_is_the_fabric_topology():
    spec = load_lab("two_switch")
    t = spec.topology
    assert sorted(t.switches) == ["A", "B"] and sorted(t.hosts) == ["h1", "h2", "h3"]
    # addressing by position, as the fabric does: switch i owns 10.0.i.0/24
    assert t.hosts["h3"].ip == "10.0.1.1" and t.hosts["h1"].ip == "10.0.0.1"
    bottleneck = t.switch_ports("A")[3][2]
    assert bottleneck.bps == 2e6 and t.switch_ports("A")[1][2].bps == 4e6
    assert bottleneck.delay_ns == 1_000_000
    assert [(f.src, f.dst) for f in spec.flows] == [("h1", "h3"), ("h2", "h3")]
    assert spec.dcqcn.rate_timer_ns == 40_000_000 and spec.dcqcn.rate_ai_bps == 200e3
    assert spec.dcqcn.byte_counter == 100_000
    assert spec.dcqcn.cnp_interval_ns == 5_000_000  # the policy's cnp.interval_us
    assert spec.duration_s == 3.0


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda d: d.update(bogus=1), "bogus"),
        (lambda d: d["hosts"]["h1"].update(switch="Z"), "hosts.h1.switch"),
        (lambda d: d["hosts"]["h1"].update(rate="fast"), "hosts.h1.rate"),
        (lambda d: d["hosts"]["h1"].update(delay="soon"), "hosts.h1.delay"),
        (lambda d: d["links"][0].update(a="A3"), "links[0].a"),
        (lambda d: d["links"][0].update(b="B:1"), "already cabled"),
        (lambda d: d["flows"].append({"src": "h3", "dst": "h9"}), "flows[2].dst"),
        (lambda d: d["flows"].append({"src": "h3", "dst": "h1"}), "both sends and receives"),
        (lambda d: d.update(duration="-1s"), "duration"),
        (lambda d: d["dcqcn"].update(g=2), "dcqcn.g"),
        (lambda d: d["dcqcn"].update(warp=1), "dcqcn.warp"),
        (lambda d: d["links"][0].update(rate="10G"), "at most 1G"),
    ],
)
def test_bad_lab_files_name_the_key(edit, key):
    data = _two_switch()
    edit(data)
    with pytest.raises(LabFileError, match=key.replace("[", r"\[").replace("]", r"\]")):
        parse_lab(data, "x.yaml")


def test_unreadable_and_non_yaml_lab_files(tmp_path):
    with pytest.raises(LabFileError, match="cannot read"):
        load_lab(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: [unclosed")
    with pytest.raises(LabFileError, match="not YAML"):
        load_lab(bad)
    bad.write_text("- a list")
    with pytest.raises(LabFileError, match="mapping"):
        load_lab(bad)


def test_agent_command_lines_pair_the_qps_and_route_via_the_switch():
    spec = load_lab("two_switch")
    argvs = agent_argvs(spec, 0.0)
    assert sorted(argvs) == ["h1", "h2", "h3"]
    assert "--send" in argvs["h1"] and "--send" not in argvs["h3"]

    def peers(h):
        a = argvs[h]
        return [a[i + 1] for i, x in enumerate(a) if x == "--peer"]

    a_mac, b_mac = (spec.topology.switches[s].router_mac for s in "AB")
    assert peers("h1") == [f"{a_mac},10.0.1.1,0x100,0x101"]
    assert peers("h2") == [f"{a_mac},10.0.1.1,0x102,0x103"]
    assert peers("h3") == [f"{b_mac},10.0.0.1,0x101,0x100", f"{b_mac},10.0.0.2,0x103,0x102"]
    dcqcn = json.loads(argvs["h1"][argvs["h1"].index("--dcqcn") + 1])
    assert DcqcnParams(**dcqcn) == spec.dcqcn


def test_congestion_checks_fail_on_each_missing_sign():
    ok = {"ecn_marked": 3, "cnps_received": 2, "rate_reductions": 2}
    assert congestion_failures(ok) == []
    for key in ok:
        assert len(congestion_failures({**ok, key: 0})) == 1


# -------------------------------------------------------------------- tc


def test_tc_command_lines():
    assert shape.tc_argv("eth0", 500_000, 4e6) == [
        "tc",
        "qdisc",
        "replace",
        "dev",
        "eth0",
        "root",
        "netem",
        "delay",
        "500us",
        "rate",
        "4000kbit",
        "limit",
        "1000",
    ]
    assert "rate" not in shape.tc_argv("p1", 1_000_000)  # a switch end: delay only
    tbf = shape.tc_argv("eth0", 500_000, 4e6, netem=False)
    assert tbf[6:9] == ["tbf", "rate", "4000kbit"]
    assert shape.tc_argv("p1", 1_000_000, netem=False) == []


@needs_root
def test_shaping_installs_a_rate_on_a_veth():
    with netns.NetnsSet() as nets:
        ns = nets.add_netns(netns.name("t", 1))
        nets.add_veth(netns.name("u", 1), "eth0", ns)
        argv = shape.shape("eth0", 200_000, 3e6, ns)
        shown = shape.qdisc("eth0", ns)
        assert argv and ("netem" in shown or "tbf" in shown), shown
        assert "3Mbit" in shown or "3000Kbit" in shown, shown
        with pytest.raises(shape.ShapeError):
            shape.shape("nosuchif0", 1000, 1e6, ns)


# -------------------------------------------------------------------- the DCQCN agent


class _Wire:
    """Stands in for AfPacketPorts: keeps what the agent transmits."""

    def __init__(self):
        self.frames: list[bytes] = []

    def send(self, port: int, frame: bytes) -> None:
        self.frames.append(frame)


def _sender(params: DcqcnParams | None = None) -> tuple[DcqcnAgent, _Wire]:
    wire = _Wire()
    peer = Peer("02:00:00:00:00:fe", "10.0.1.1", 0x100, 0x101, timeout_ns=10**12)
    agent = DcqcnAgent(
        wire,
        "02:00:00:00:00:01",
        "10.0.0.1",
        [peer],
        line_rate_bps=4e6,
        params=params
        or DcqcnParams(rate_timer_ns=10**12, alpha_timer_ns=10**12, min_rate_bps=100e3),
        send=True,
        message_bytes=4096,
    )
    return agent, wire


def test_sender_paces_at_the_rate_point_rate_and_a_cnp_cuts_it(monkeypatch):
    agent, wire = _sender()
    clock = [0]
    monkeypatch.setattr(agent, "now", lambda: clock[0])
    agent.pump()
    assert len(wire.frames) == 1, "one packet, then the pacing gap"
    first = len(wire.frames[0]) + WIRE_OVERHEAD
    gap = first * 8 * 1e9 / 4e6
    clock[0] = int(gap) - 1000
    agent.pump()
    assert len(wire.frames) == 1, "no packet before the gap at line rate"
    clock[0] = int(gap) + 1000
    agent.pump()
    assert len(wire.frames) == 2
    cnp = cnp_frame(
        "10.0.1.1", "10.0.0.1", 0x100, eth_src="02:00:00:00:00:fe", eth_dst="02:00:00:00:00:01"
    )
    agent.on_frame(cnp)
    rp = agent.rps[0x100]
    assert rp.cuts == 1 and rp.rc == pytest.approx(2e6)  # alpha 1: R_C halves
    t2 = agent.next_tx[0x100]
    clock[0] = t2
    agent.pump()  # the packet due at t2 leaves; the next one waits a gap at 2 Mb/s
    assert len(wire.frames) == 3
    gap2 = (len(wire.frames[2]) + WIRE_OVERHEAD) * 8 * 1e9 / 2e6
    clock[0] = t2 + int(gap2 * 0.75)  # 1.5 line-rate gaps: too early at 2 Mb/s
    agent.pump()
    assert len(wire.frames) == 3
    clock[0] = t2 + int(gap2) + 1000
    agent.pump()
    assert len(wire.frames) == 4
    # a CNP for another QP changes nothing
    agent.on_frame(cnp_frame("10.0.1.1", "10.0.0.1", 0x999))
    assert rp.cuts == 1
    assert agent.summary()["rate_reductions"] == 1 and agent.summary()["rp_cnps"] == 1


def test_sender_stops_for_pfc_on_its_class_until_xon(monkeypatch):
    agent, wire = _sender()
    clock = [0]
    monkeypatch.setattr(agent, "now", lambda: clock[0])
    agent.on_frame(pfc_frame("02:00:00:00:01:01", {3: 1000}))
    assert agent.pfc_xoff_rx == 1
    assert agent.paused_until == 1000 * 512 * 1e9 / 4e6  # quanta at the line rate
    for clock[0] in range(0, 10**8, 10**7):
        agent.pump()
    assert wire.frames == [], "paused: nothing sent"
    agent.on_frame(pfc_frame("02:00:00:00:01:01", {4: 1000}))  # another class: ignored
    assert agent.pfc_xoff_rx == 1
    agent.on_frame(pfc_frame("02:00:00:00:01:01", {3: 0}))  # XON
    agent.pump()
    assert agent.pfc_xon_rx == 1 and len(wire.frames) == 1
    assert decode(wire.frames[0]).dscp == 26  # the data class the lab policies pause


def test_a_minimum_rate_above_the_line_rate_is_refused():
    with pytest.raises(ValueError, match="above the line rate"):
        _sender(DcqcnParams())  # the paper's 10 Mb/s floor on a 4 Mb/s NIC


def test_dcqcn_knobs_from_json_are_checked():
    assert parse_params('{"g": 0.5}').g == 0.5
    import argparse

    for bad in ("[1]", '{"g": 3}', '{"nope": 1}', "g=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_params(bad)


# -------------------------------------------------------------------- the lab in CI


def _run(tmp_path: Path, *args: str) -> tuple[dict, str]:
    out = tmp_path / f"lab{len(list(tmp_path.glob('lab*.json')))}.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lab.congested",
            "two_switch",
            *args,
            "--json",
            str(out),
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    log, _ = proc.communicate(timeout=300)
    assert out.exists(), log
    links = json.loads(netns.ip("-j", "link", "show") or "[]")
    left = [
        n
        for n in [lk["ifname"] for lk in links] + netns.ip("netns", "list").split()
        if n.startswith(f"rl{proc.pid}") and not n[len(f"rl{proc.pid}")].isdigit()
    ]
    assert left == [], "the lab left namespaces or links behind"
    return json.loads(out.read_text()), log


def _congests_and_its_control_does_not(tmp_path: Path, *target: str) -> dict:
    """2 senders -> A -> (2 Mb/s) -> B -> 1 receiver: the queue builds in A's egress toward
    B, A marks ECN there, h3 answers with CNPs that cross B and A back to the senders, and
    their DCQCN reaction points cut their rates. The control: the same load with the ECN
    profile removed from the policy: no marks, no CNPs, no cuts (PFC alone holds the queue)."""
    res, log = _run(tmp_path, *target, "--check")
    assert res["ok"], log
    t = res["totals"]
    a = res["switches"]["A"]["counters"]
    assert a["ecn_marked"]["3"][0] > 0, log  # marked on the bottleneck port
    # The bottleneck carries the marks. B's 2 Mb/s port back toward A queues ACKs and CNPs
    # (the ACKs ride class 3) and may mark one now and then: a real mark, so not "only".
    assert a["ecn_marked"]["3"][0] >= 0.9 * t["ecn_marked"], "the bottleneck marks"
    # marks reach h3 (a frame lost in a busy kernel socket buffer, then resent, may not)
    assert (
        0
        < t["ce_marked_received"]
        <= t["ecn_marked"] + sum(res["agents"][h]["retransmitted"] for h in ("h1", "h2"))
    ), log
    assert t["cnps_sent"] > 0 and t["cnps_received"] > 0, log
    assert t["cnps_received"] <= t["cnps_sent"]
    assert a["cnp_rx"]["3"][0] > 0, "the CNPs crossed A's port 3 from B"
    for h in ("h1", "h2"):
        s = res["agents"][h]
        assert s["rate_reductions"] > 0 and s["rate_min_bps"] < s["line_rate_bps"], (h, s)
    assert "lab: ok" in log and "ECN marks" in log

    ctl, log = _run(tmp_path, *target, "--no-ecn", "--check")
    assert ctl["ok"], log  # every WRITE still completed
    c = ctl["totals"]
    assert c["ecn_marked"] == c["cnps_sent"] == c["cnps_received"] == c["rate_reductions"] == 0, log
    assert "no ECN marks" in log and "lab: FAILED" in log  # --check fails on the control
    assert c["pfc_tx"] > 0 and c["pfc_pauses_received"] > 0, "without DCQCN, PFC pauses"
    return res


@needs_root
@pytest.mark.slow
def test_two_switch_lab_congests_marks_and_dcqcn_reacts(tmp_path):
    """The congested lab on p4sim-switch processes (`make lab`), and its control."""
    res = _congests_and_its_control_does_not(tmp_path)
    assert res["switches"]["A"]["max_qdepth"]["3"] > 0, "the queue built at A's port 3"


@needs_root
@pytest.mark.slow
@pytest.mark.only_target("bmv2")
def test_two_switch_lab_congests_on_bmv2(tmp_path):
    """The same lab on two BMv2 simple_switch_grpc (the program compiled by p4c into
    build/p4 when stale; egress rates by simple_switch_CLI set_queue_rate), and its control.
    BMv2's P4Runtime reads no registers: the queue is not sampled, and says so."""
    res = _congests_and_its_control_does_not(tmp_path, "--target", "bmv2")
    assert res["target"] == "bmv2" and res["totals"]["max_qdepth"] is None


@needs_root
@pytest.mark.slow
def test_the_same_lab_file_congests_on_mininet(tmp_path):
    """The same lab file, hosts and links built by Mininet: the same signs of congestion."""
    from lab.mininet_lab import mininet_unavailable

    why = mininet_unavailable()
    assert why is None, f"{why} (make setup installs Debian's mininet as root)"
    res, log = _run(tmp_path, "--backend", "mininet")
    assert res["ok"] and res["backend"] == "mininet", log
    assert congestion_failures(res["totals"]) == [], log
    assert res["switches"]["A"]["counters"]["ecn_marked"]["3"][0] > 0, log
