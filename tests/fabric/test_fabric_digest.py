"""A fabric run's virtual-time results pinned by digest: every frame on every wire (the
instant it reaches a switch port or a host, which node, which port, its bytes) and every
counter at the end (switch TM and P4 counters, NIC stats, DCQCN rates, bytes delivered).
A speed-up of the fabric (engine, hosts, packet building, p4sim) must leave them
identical; one that changes behaviour (a frame late by 1 ns, one ECN mark less) fails here.

The digests were taken from main before the fabric speed work of issue 34. A deliberate
change of behaviour (the program, the host model) changes them: check that the change is
meant, then put the new values here (the failure message prints them)."""

from __future__ import annotations

import hashlib
import json

import pytest

from controller.fabric.engine import Fabric
from controller.fabric.scenarios import policy, run_storm
from controller.fabric.telemetry import fabric_telemetry
from controller.fabric.topology import leaf_spine

US = 1000


class _Trace:
    """sha256 over every frame a switch port or a host takes, with the instant it does."""

    def __init__(self, fab: Fabric):
        self.h = hashlib.sha256()
        self.frames = 0
        prev = fab.rx_filter

        def rx(sw: str, port: int, frame: bytes) -> bytes | None:
            self.add(fab.now(), sw, port, frame)
            return frame if prev is None else prev(sw, port, frame)

        fab.rx_filter = rx
        for name, host in fab.hosts.items():
            take = host.receive

            def receive(frame: bytes, _n=name, _take=take) -> None:
                self.add(fab.now(), _n, 0, frame)
                _take(frame)

            host.receive = receive  # type: ignore[method-assign]

    def add(self, t: int, node: str, port: int, frame: bytes) -> None:
        self.frames += 1
        self.h.update(f"{t} {node} {port} {len(frame)} ".encode())
        self.h.update(bytes(frame))


def _counters(fab: Fabric) -> dict:
    out: dict = {"telemetry": fabric_telemetry(fab)}
    out["tm"] = {sw: t.tm_stats() for sw, t in fab.targets.items()}
    out["switch"] = {sw: dict(t.switch.stats) for sw, t in fab.targets.items()}
    out["hosts"] = {
        n: {**vars(h.stats), "rc": {q: rp.rc for q, rp in sorted(h.rps.items())}}
        for n, h in sorted(fab.hosts.items())
    }
    out["delivered"] = [fab.delivered(f) for f in fab.flows]
    out["frames"] = [fab.frames_to_switches, fab.frames_to_hosts, fab.unattached]
    return out


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _incast_run() -> tuple[str, str, dict]:
    """Six senders into one host behind a 2-spine, 2-leaf fabric, ECN at every queue and
    DCQCN at the NICs, plus a cross-leaf flow: ECN marks, CNPs and PFC all happen."""
    fab = Fabric(leaf_spine(2, 2, 4), policy(xoff=4, xon=2, ecn=True), seed=3)
    tr = _Trace(fab)
    for n in ("h0_1", "h0_2", "h1_0", "h1_1", "h1_2", "h1_3"):
        fab.add_flow(n, "h0_0", 1 << 30)
    # short messages: FIRST (RETH), LAST with ACK requests, a new message every 16 packets
    fab.add_flow("h0_3", "h1_0", 1 << 30, start_ns=5 * US, message=16 << 10)
    fab.run(120 * US)
    c = _counters(fab)
    return tr.h.hexdigest()[:16], _digest(c), c


@pytest.fixture(scope="module")
def incast():
    return _incast_run()


def test_incast_run_exercises_marks_cnps_and_pfc(incast):
    """The pinned run is worth pinning: it marks, sends CNPs, pauses and delivers."""
    _trace, _cnt, c = incast
    hosts = c["hosts"]
    assert sum(h["ce_received"] for h in hosts.values()) > 0
    assert sum(h["cnps_received"] for h in hosts.values()) > 0
    assert sum(s["pauses_total"] for s in c["tm"].values()) > 0
    assert sum(h["pfc_received"] for h in hosts.values()) > 0
    assert all(d > 0 for d in c["delivered"])


def test_incast_run_is_unchanged(incast):
    trace, cnt, _c = incast
    assert (trace, cnt) == ("d2f05f3fc2a3d551", "cb7582a26f2c626a"), (trace, cnt)


def test_storm_with_watchdog_is_unchanged():
    """The port layer (the watchdog's rx_filter) and a stuck NIC's pause storm."""
    report: dict = {}
    m = run_storm(stuck=1, watchdog=1, duration_us=300, detect_us=50, report=report)
    assert m["pfcwd_detected"] > 0 and m["pfcwd_ignored_frames"] > 0
    got = _digest({"metrics": m, "report": report})
    assert got == "6952c133e0360739", got
