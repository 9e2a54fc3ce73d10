"""Hardware stand-in: the tests/targets suite over real interfaces, as on a hardware switch.

p4sim-switch runs as a separate process attached to veth pairs; the host ends of the pairs
live in network namespaces, like NICs in other machines. pytest runs the same test files
as `pytest --target p4sim` with `--target p4sim-grpc --port-map 1=NS/eth0,...`: frames
cross the veths in both directions, and the counters come back over P4Runtime.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.targets import netns

ROOT = Path(__file__).resolve().parents[2]
PORTS = (1, 2, 3)


@pytest.mark.skipif(not netns.is_root(), reason="needs root (netns, veth, AF_PACKET)")
@pytest.mark.slow
def test_target_suite_over_veths_in_namespaces(tmp_path):
    with netns.NetnsSet() as nets:
        port_map = []
        for port in PORTS:
            ns = nets.add_netns(netns.name("n", port))
            nets.add_veth(netns.name("q", port), "eth0", ns)
            port_map.append(f"{port}={ns}/eth0")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-o",
                "addopts=",
                "tests/targets",
                "--ignore=tests/targets/test_plugin.py",  # options, not data plane
                "--target",
                "p4sim-grpc",
                "--port-map",
                ",".join(port_map),
                "--basetemp",
                str(tmp_path / "inner"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 5, summary
    assert not re.search(r"\d+ (failed|error)", summary), summary
