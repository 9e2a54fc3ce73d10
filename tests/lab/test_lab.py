"""The lab: topologies, namespaces and their clean-up, the traffic agent, and whole labs.

Root is needed for namespaces, veth pairs and AF_PACKET (CI runs as root); without it those
tests skip with that reason. `make lab` runs the same `python -m lab.run` as these tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.targets import netns
from lab.topo import TOPOLOGIES, incast, pair

ROOT = Path(__file__).resolve().parents[2]
needs_root = pytest.mark.skipif(not netns.is_root(), reason="needs root (netns, veth, AF_PACKET)")


def _names(pid: int | None = None) -> set[str]:
    """Links and namespaces named after `pid` (default: this process)."""
    links = json.loads(netns.ip("-j", "link", "show") or "[]")
    spaces = netns.ip("netns", "list", check=False).split()
    prefix = f"rl{os.getpid() if pid is None else pid}"
    return {
        n
        for n in [link["ifname"] for link in links] + spaces
        if n.startswith(prefix) and not n[len(prefix)].isdigit()
    }


def test_topologies_are_consistent():
    for make in TOPOLOGIES.values():
        topo = make()
        assert len({h.port for h in topo.hosts}) == len(topo.hosts)
        assert (
            len({h.mac for h in topo.hosts}) == len({h.ip for h in topo.hosts}) == len(topo.hosts)
        )
    assert len(pair().hosts) == 2
    assert len(incast().hosts) == 5 and incast().description.startswith("4:1")


def test_names_fit_the_kernel_limit():
    assert len(netns.name("h", 9, pid=4194304)) <= netns.IFNAMSIZ
    with pytest.raises(ValueError):
        netns.name("toolong", 12345, pid=4194304)


@needs_root
def test_netns_set_cleans_up_even_on_failure():
    with pytest.raises(RuntimeError, match="boom"), netns.NetnsSet() as nets:
        ns = nets.add_netns(netns.name("h", 1))
        nets.add_veth(netns.name("p", 1), "eth0", ns, mac="02:00:00:00:00:01", addr="10.0.0.1/24")
        assert netns.name("p", 1) in _names() and ns in _names()
        assert "10.0.0.1/24" in netns.ip("-br", "addr", "show", "eth0", netns=ns)
        raise RuntimeError("boom")
    assert _names() == set()


@needs_root
def test_addresses_only_inside_our_namespaces():
    with netns.NetnsSet() as nets, pytest.raises(ValueError):
        nets.add_veth(netns.name("a", 1), netns.name("b", 1), addr="10.0.0.1/24")


@needs_root
def test_sweep_removes_what_a_dead_process_left():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = netns.name("x", 1, pid=child.pid)
    netns.ip("link", "add", dead, "type", "veth", "peer", "name", netns.name("y", 1, pid=child.pid))
    mine = netns.NetnsSet()
    try:
        mine.add_veth(netns.name("z", 1), netns.name("w", 1))
        removed = netns.sweep_stale()
        assert dead in removed
        assert netns.name("z", 1) in _names(), "a live process's objects are left alone"
    finally:
        mine.close()
        netns.ip("link", "del", dead, check=False)


@needs_root
def test_agents_exchange_rocev2_over_a_veth():
    """Two agents, back to back: WRITEs both ways, ACKed, counted (no switch)."""
    with netns.NetnsSet() as nets:
        a, b = nets.add_netns(netns.name("h", 1)), nets.add_netns(netns.name("h", 2))
        netns.ip(
            "link", "add", "eth0", "netns", a, "type", "veth", "peer", "name", "eth0", "netns", b
        )
        for ns in (a, b):
            netns.ip("link", "set", "eth0", "up", netns=ns)
        start = time.time() + 1.0
        procs = []
        for ns, me, peer, lq, rq in ((a, 1, 2, 0x101, 0x102), (b, 2, 1, 0x102, 0x101)):
            procs.append(
                nets.popen(
                    [
                        sys.executable,
                        "-m",
                        "lab.agent",
                        "--iface",
                        "eth0",
                        "--mac",
                        f"02:00:00:00:00:0{me}",
                        "--ip",
                        f"10.0.0.{me}",
                        "--peer",
                        f"02:00:00:00:00:0{peer},10.0.0.{peer},{lq:#x},{rq:#x}",
                        "--messages",
                        "6",
                        "--size",
                        "3000",
                        "--expect",
                        "6",
                        "--timeout",
                        "15",
                        "--start-at",
                        f"{start:.3f}",
                    ],
                    netns=ns,
                    stdout=subprocess.PIPE,
                    cwd=ROOT,
                )
            )
        results = [json.loads(p.communicate(timeout=30)[0]) for p in procs]
    for r in results:
        assert r["ok"], r
        assert r["messages_completed"] == 6 and r["messages_received"] == 6
        assert r["bytes_acked"] == r["bytes_received"] == 6 * 3000


def _run_lab(tmp_path: Path, *args: str, timeout: float = 120) -> dict:
    out = tmp_path / "lab.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lab.run",
            *args,
            "--json",
            str(out),
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, stdout + stderr
    assert "switch counters" in stdout
    assert _names(proc.pid) == set(), "the lab left namespaces or links behind"
    return json.loads(out.read_text())


@needs_root
@pytest.mark.slow
def test_make_lab_pair_on_mininet(tmp_path):
    """`make lab`: 2 hosts on Mininet, p4sim-switch, traffic both ways, counters over P4Runtime."""
    from lab.mininet_lab import mininet_unavailable

    why = mininet_unavailable()
    assert why is None, f"{why} (make setup installs Debian's mininet as root)"
    res = _run_lab(
        tmp_path, "--target", "p4sim", "--topo", "pair", "--backend", "mininet", "--messages", "4"
    )
    assert res["backend"] == "mininet"
    for name, agent in res["agents"].items():
        assert agent["ok"] and agent["messages_completed"] == 4, (name, agent)
    rx, tx = res["counters"]["roce_rx"], res["counters"]["roce_tx"]
    sent = {h: res["agents"][h]["frames_sent"] for h in ("h1", "h2")}
    # Every frame an agent sent entered the switch on its port as RoCE and left on the other.
    assert rx["1"][0] == sent["h1"] and rx["2"][0] == sent["h2"]
    assert tx["2"][0] == sent["h1"] and tx["1"][0] == sent["h2"]
    # The kernel stays off the lab links (no addresses, no IPv6): nothing unknown is dropped.
    assert res["counters"]["drops"] == {"1": [0, 0], "2": [0, 0]}


@needs_root
@pytest.mark.slow
def test_incast_lab_on_namespaces(tmp_path):
    """4:1 incast, 5 hosts, plain namespaces: every sender's WRITEs complete."""
    res = _run_lab(
        tmp_path,
        "--target",
        "p4sim",
        "--topo",
        "incast",
        "--backend",
        "netns",
        "--messages",
        "3",
        "--size",
        "2048",
    )
    assert res["backend"] == "netns"
    sink = res["agents"]["h5"]
    assert sink["messages_received"] == 4 * 3
    assert all(res["agents"][f"h{i}"]["messages_completed"] == 3 for i in range(1, 5))
    assert res["counters"]["roce_tx"]["5"][0] >= 4 * 3 * 2  # 2 packets per 2 KB WRITE


@needs_root
@pytest.mark.slow
@pytest.mark.only_target("bmv2")
def test_lab_pair_on_bmv2(tmp_path):
    """The same lab with the BMv2 node class; without --p4-artifacts the lab has p4c
    compile the program (into build/p4, only when a .p4 file changed since)."""
    res = _run_lab(tmp_path, "--target", "bmv2", "--messages", "4")
    for name, agent in res["agents"].items():
        assert agent["ok"] and agent["messages_completed"] == 4, (name, agent)
    assert res["counters"]["roce_rx"]["1"][0] == res["agents"]["h1"]["frames_sent"]
