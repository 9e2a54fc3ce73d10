"""Build and run roce_rx (roce_parser -> roce_np) cocotb modules with hdl/tb/run_sim.py:
the NP testbench, and the co-simulated scenario (`run_fil`)."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from controller.packets.fields import RECORD_BITS

ROOT = Path(__file__).resolve().parents[2]
TB_DIR = ROOT / "hdl" / "tb"
if str(TB_DIR) not in sys.path:
    sys.path.insert(0, str(TB_DIR))
import run_sim  # noqa: E402  (hdl/tb is not a package: it lives beside the testbenches)

RTL = [ROOT / "hdl" / "rtl" / n for n in ("roce_parser.v", "roce_np.v", "roce_rx.v")]
NP_TB = TB_DIR / "roce_np"
FAULTS = (
    "ROCE_NP_FAULT_INTERVAL",
    "ROCE_NP_FAULT_QP",
    "ROCE_NP_FAULT_REUSE",
    "ROCE_NP_FAULT_NH6",
    "ROCE_NP_FAULT_PCP",
    # roce_parser's test-only builds: a longer record latency, a lost, a doubled record
    "ROCE_PARSER_SLOW_RECORD",
    "ROCE_PARSER_FAULT_LOSE",
    "ROCE_PARSER_FAULT_DOUBLE",
)
LOOP_MODULE = "controller.fil.cocotb_loop"


def run_rx(
    sim: str,
    width: int,
    work: Path,
    test_module: str,
    *,
    fault: str | None = None,
    env: dict[str, str] | None = None,
    testcase: str | None = None,
) -> run_sim.SimRun:
    """One simulation of roce_rx; `fault` builds the deliberately broken NP (own build)."""
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown RTL fault {fault!r} (one of {', '.join(FAULTS)})")
    return run_sim.run(
        sim,
        width,
        work,
        testcase=testcase,
        env=env,
        sources=RTL,
        toplevel="roce_rx",
        test_module=test_module,
        parameters={"RECORD_BITS": RECORD_BITS},
        defines={fault: 1} if fault else None,
        tag="rx" + (f"-{fault.rsplit('_', 1)[-1].lower()}" if fault else ""),
        test_path=NP_TB,
    )


def failure_text(result: run_sim.SimRun, work: Path) -> str:
    log = work / f"sim-{result.sim}-{result.width}.log"
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    msgs = "\n".join(f"{k}: {v.strip()[:1500]}" for k, v in result.failed.items())
    return f"{result.sim} DATA_WIDTH={result.width}:\n{msgs}\n--- log tail\n{tail}"


def run_fil(
    scenario: str,
    work: Path,
    *,
    sim: str = "verilator",
    width: int = 64,
    duration_us: float | None = None,
    seed: int | None = None,
    host: str = "h3",
    fault: str | None = None,
    ready: float = 1.0,
    ipv6: bool = False,
    vlan: int | None = None,
    clock_ps: int | None = None,
) -> dict:
    """The scenario with `host`'s NIC receive path in RTL (`ready` < 1: random tready on
    its outputs; `ipv6`: the hosts' addresses in IPv6; `vlan`: every host tags its
    frames). Returns the loop's result dict
    (run: RunResult or None, stats: FilStats, error: first mismatch or None, wall_s, ...)
    plus `sim_run` (build/run times, cocotb pass/fail)."""
    env = {"RL_FIL_SCENARIO": scenario, "RL_FIL_HOST": host, "RL_FIL_OUT": str(work)}
    if duration_us is not None:
        env["RL_FIL_DURATION_US"] = f"{duration_us:g}"
    if seed is not None:
        env["RL_FIL_SEED"] = str(seed)
    if ready < 1.0:
        env["RL_FIL_READY"] = f"{ready:g}"
    if ipv6:
        env["RL_FIL_IPV6"] = "1"
    if clock_ps is not None:
        env["RL_FIL_CLOCK_PS"] = str(clock_ps)
    if vlan is not None:
        env["RL_FIL_VLAN"] = str(vlan)
    res = run_rx(sim, width, work, LOOP_MODULE, fault=fault, env=env)
    pick = work / "result.pickle"
    if not pick.exists():
        raise RuntimeError(f"the co-simulation wrote no result: {failure_text(res, work)}")
    with open(pick, "rb") as fh:
        out = pickle.load(fh)
    out["sim_run"] = res
    return out
