"""The image itself, when a Docker engine is already running (make test never starts one):
build docker/Dockerfile (cached layers make a rebuild quick) and run one BMv2 test inside it
as root in a network namespace of its own, so the Dockerfile cannot rot unnoticed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("ROCELAB_TEST_IMAGE", "rocelab:test")


def _engine() -> str | None:
    """Why the test cannot run, or None."""
    if shutil.which("docker") is None:
        return "no docker CLI"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0:
        return "no Docker engine running (make docker-test starts one as root)"
    return None


def _caps() -> list[str]:
    """The Makefile's DOCKER_LAB_CAPS: one list for the test and for make docker-test."""
    mk = (ROOT / "Makefile").read_text()
    block = re.search(r"^DOCKER_LAB_CAPS := (.*?)(?<!\\)\n", mk, re.M | re.S).group(1)
    return block.replace("\\\n", " ").split()


@pytest.mark.slow
@pytest.mark.root
def test_image_builds_and_runs_a_bmv2_test():
    why = _engine()
    if why:
        pytest.skip(why)
    build = subprocess.run(
        ["docker/build.sh", IMAGE, "rocelab-base:bookworm"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    run = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            *_caps(),
            "--network",
            "none",
            "--user",
            "root",
            IMAGE,
            "bash",
            "-c",
            "python -m controller.targets.toolchain p4c --out build/p4 >/dev/null && python -m pytest -q -n 0 -p no:cacheprovider "
            "--target bmv2 --p4-artifacts build/p4 tests/targets/test_forwarding.py::test_write_and_ack_both_ways",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
