"""The switches the p4src STF tests run on (one per kind for a whole module): p4sim-switch
over P4Runtime (tests/p4src/test_stf_targets.py, the p4sim run) and BMv2 simple_switch_grpc
with roce_switch.p4 compiled by real p4c (tests/p4src/test_stf_bmv2.py, the BMv2 tier)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.stf import StfSession, stf_ports
from controller.targets.config import TargetConfig, artifacts_program
from controller.targets.registry import from_p4
from controller.targets.toolchain import ensure_artifacts, toolchain

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "roce_switch.p4"
STF_DIR = ROOT / "p4src" / "tests"
# 9: the headline scenarios' mirror port (their replays in test_stf_bmv2.py)
PORTS = sorted(stf_ports(p.read_text() for p in STF_DIR.glob("*.stf")) | {1, 2, 3, 4, 9})


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the switches run on veth pairs made here")


def _bmv2_artifacts(tmp: Path, target_config: TargetConfig) -> Path:
    """P4Info + BMv2 JSON of roce_switch.p4 from real p4c: --p4-artifacts / ROCELAB_P4_ARTIFACTS
    when given, else compiled here (controller/targets/toolchain.py: PATH or
    ROCELAB_BMV2_PREFIX); skipped (one line) without BMv2 or p4c."""
    tc = toolchain()
    given = target_config.options.get("p4_artifacts")
    problem = tc.bmv2_problem() or (None if given else tc.p4c_problem())
    if problem:
        if tc.configured:  # a prefix was given: one that cannot run is a failure, not a skip
            pytest.fail(f"needs BMv2 and p4c: {problem}")
        pytest.skip(f"needs BMv2 and p4c: {problem}")
    if given:
        return Path(given)
    return ensure_artifacts(PROGRAM, tmp / "p4", tc)


@pytest.fixture(scope="module")
def p4sim_grpc(tmp_path_factory):
    _needs_root()
    with StfSession(
        TargetConfig(kind="p4sim-grpc", device_id=0),
        from_p4(PROGRAM),
        PORTS,
        log_dir=tmp_path_factory.mktemp("p4sim-logs"),
    ) as s:
        yield s


@pytest.fixture(scope="module")
def bmv2(tmp_path_factory, target_config):
    _needs_root()
    art = _bmv2_artifacts(tmp_path_factory.mktemp("bmv2"), target_config)
    with StfSession(
        TargetConfig(kind="bmv2", device_id=0),
        artifacts_program(art),
        PORTS,
        log_dir=tmp_path_factory.mktemp("bmv2-logs"),
    ) as s:
        yield s


@pytest.fixture
def rocelab_stf() -> Callable[..., subprocess.CompletedProcess]:
    """`rocelab stf ARGS...` as a user runs it (a process: its stdout, stderr, exit code);
    each run starts its own switch on veth pairs."""
    _needs_root()

    def run(*args: str | Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "controller.cli", "stf", *map(str, args)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )

    return run


@pytest.fixture
def bmv2_toolchain() -> None:
    """Skip (one line) without BMv2 and p4c, fail when a prefix was given that cannot run."""
    tc = toolchain()
    problem = tc.bmv2_problem() or tc.p4c_problem()
    if problem:
        if tc.configured:
            pytest.fail(f"needs BMv2 and p4c: {problem}")
        pytest.skip(f"needs BMv2 and p4c: {problem}")
