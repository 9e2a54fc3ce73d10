"""`verilator --lint-only -Wall` on roce_np and on roce_rx (parser + NP) at every DATA_WIDTH
the parser supports, every other parameter at its default: a wrapper whose RECORD_BITS
default drifted from the parser's record is a WIDTHEXPAND/WIDTHTRUNC warning here."""

from __future__ import annotations

import subprocess

import pytest
import rx_sim


@pytest.mark.parametrize("width", [None, *rx_sim.run_sim.WIDTHS])  # None: the defaults
@pytest.mark.parametrize("top", ["roce_np", "roce_rx"])
def test_lint_clean(top: str, width: int | None) -> None:
    reason = rx_sim.run_sim.prepare_env("verilator")
    assert reason is None, reason
    params = [] if width is None else [f"-GDATA_WIDTH={width}"]
    proc = subprocess.run(
        ["verilator", "--lint-only", "-Wall", *params, *map(str, rx_sim.RTL), "--top-module", top],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "%Warning" not in proc.stderr, proc.stderr
