"""Build and run roce_rx (roce_parser -> roce_np) cocotb test modules with hdl/tb/run_sim.py
(shared by the NP testbench and the FPGA-in-the-loop tests; no test in this file)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TB_DIR = ROOT / "hdl" / "tb"
if str(TB_DIR) not in sys.path:
    sys.path.insert(0, str(TB_DIR))
import run_sim  # noqa: E402

from controller.packets.fields import RECORD_BITS  # noqa: E402

RTL = [ROOT / "hdl" / "rtl" / n for n in ("roce_parser.v", "roce_np.v", "roce_rx.v")]
NP_TB = TB_DIR / "roce_np"
FAULTS = ("ROCE_NP_FAULT_INTERVAL", "ROCE_NP_FAULT_QP")


def run(sim: str, width: int, work: Path, test_module: str, *, fault: str | None = None,
        env: dict[str, str] | None = None, testcase: str | None = None) -> run_sim.SimRun:
    """One simulation of roce_rx; `fault` builds the deliberately broken NP (own build)."""
    return run_sim.run(
        sim, width, work, testcase=testcase, env=env, sources=RTL, toplevel="roce_rx",
        test_module=test_module, parameters={"RECORD_BITS": RECORD_BITS},
        defines={fault: 1} if fault else None,
        tag="rx" + (f"-{fault.rsplit('_', 1)[-1].lower()}" if fault else ""), test_path=NP_TB)


def failure_text(result: run_sim.SimRun, work: Path) -> str:
    log = work / f"sim-{result.sim}-{result.width}.log"
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    msgs = "\n".join(f"{k}: {v.strip()[:1500]}" for k, v in result.failed.items())
    return f"{result.sim} DATA_WIDTH={result.width}:\n{msgs}\n--- log tail\n{tail}"
