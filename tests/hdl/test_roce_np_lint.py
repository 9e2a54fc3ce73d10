"""`verilator --lint-only -Wall` on roce_np and on roce_rx (parser + NP) at every DATA_WIDTH
the parser supports; RECORD_BITS from controller/packets/fields.py, so a field added to
the record must keep the wrapper lint-clean."""

from __future__ import annotations

import subprocess

import pytest
import rx_sim


@pytest.mark.parametrize("width", rx_sim.run_sim.WIDTHS)
@pytest.mark.parametrize("top", ["roce_np", "roce_rx"])
def test_lint_clean(top: str, width: int) -> None:
    reason = rx_sim.run_sim.prepare_env("verilator")
    assert reason is None, reason
    params = [f"-GDATA_WIDTH={width}"]
    if top == "roce_rx":
        params.append(f"-GRECORD_BITS={rx_sim.RECORD_BITS}")
    proc = subprocess.run(
        ["verilator", "--lint-only", "-Wall", *params, *map(str, rx_sim.RTL), "--top-module", top],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "%Warning" not in proc.stderr, proc.stderr
