"""The RTL notification point (hdl/rtl/roce_np.v behind roce_parser, top roce_rx) in both
simulators: CNP bytes, per-flow rate limit, back-to-back CE frames, CNP backpressure
(cocotb TB: hdl/tb/roce_np/tb_roce_np.py); and the broken NPs fail it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import rx_sim

EXPECTED = {
    "test_cnp_frames",
    "test_families",
    "test_rate_limit",
    "test_back_to_back",
    "test_backpressure",
    "test_slot_reuse",
}


def _need(sim: str) -> None:
    reason = rx_sim.run_sim.prepare_env(sim)
    if reason and (sim == "verilator" or os.geteuid() == 0):
        pytest.fail(reason)
    if reason:
        pytest.skip(reason)


@pytest.mark.slow
@pytest.mark.parametrize(("sim", "width"), [("verilator", 64), ("verilator", 512), ("icarus", 64)])
def test_roce_np(sim: str, width: int, tmp_path: Path) -> None:
    _need(sim)
    result = rx_sim.run(sim, width, tmp_path, "tb_roce_np", env={"RL_NP_FRAMES": "32"})
    assert not result.failed, rx_sim.failure_text(result, tmp_path)
    assert {n.rsplit(".", 1)[-1] for n in result.passed} == EXPECTED


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "fails"),
    [
        ("ROCE_NP_FAULT_INTERVAL", "test_rate_limit"),
        ("ROCE_NP_FAULT_QP", "test_cnp_frames"),
        ("ROCE_NP_FAULT_REUSE", "test_slot_reuse"),
        ("ROCE_NP_FAULT_NH6", "test_families"),
        ("ROCE_NP_FAULT_PCP", "test_families"),
    ],
)
def test_broken_np_fails(fault: str, fails: str, tmp_path: Path) -> None:
    """Negative controls: the NP built with a test-only fault (half the interval; CNPs to
    the local QP instead of the sender's; a reused slot keeping the old flow's rate-limit
    state; the IPv6 CNP's next header TCP; the tagged CNP's PCP not the CNP PCP) must
    fail its testbench."""
    _need("icarus")
    result = rx_sim.run(
        "icarus",
        64,
        tmp_path,
        "tb_roce_np",
        fault=fault,
        env={"RL_NP_FRAMES": "32"},
        testcase=fails,
    )
    assert fails in {n.rsplit(".", 1)[-1] for n in result.failed}, (
        f"{fault}: {fails} passed on the broken NP"
    )
