"""`python -m bench fil`: FPGA-in-the-loop speed. The 2:1 incast with h3's NIC receive path
in RTL (roce_parser -> roce_np, DATA_WIDTH 64), per simulator.

Figures: virtual microseconds simulated per wall second (and per CPU second of the
simulator process: the machines here are shared), frames per wall second through the
RTL. Target: 1 ms of virtual time in under 60 s of wall time with Verilator. Options:
--verilator-us=N (default 1000), --icarus-us=N (default 200), --sims=verilator,icarus.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it); icarus: its build is quicker than Verilator's
SMOKE = ["--sims=icarus", "--icarus-us=10"]

TARGET_S_PER_MS = 60.0


def run(argv: list[str]) -> None:
    from controller.fil.run import run_fil, run_sim

    ap = argparse.ArgumentParser(prog="bench fil")
    ap.add_argument("--verilator-us", type=float, default=1000.0)
    ap.add_argument("--icarus-us", type=float, default=200.0)
    ap.add_argument("--sims", default="verilator,icarus")
    args, _ = ap.parse_known_args(argv)
    for sim in args.sims.split(","):
        reason = run_sim.prepare_env(sim)
        if reason:
            print(f"fil {sim}: skipped: {reason}")
            continue
        us = args.verilator_us if sim == "verilator" else args.icarus_us
        with tempfile.TemporaryDirectory() as tmp:
            out = run_fil("incast-dcqcn", Path(tmp), sim=sim, width=64, duration_us=us)
        if out["error"]:
            raise RuntimeError(f"{sim}: {out['error']}")
        st, wall, cpu = out["stats"], out["wall_s"], out["cpu_s"]
        line = (
            f"fil {sim} DATA_WIDTH 64: {us:g} us virtual in {wall:.1f} s wall "
            f"({cpu:.1f} s CPU): {us / wall:.1f} virtual us/s wall, {us / cpu:.1f} per CPU s; "
            f"{st.frames_in / wall:.0f} frames/s through the RTL; {st.cnps} RTL CNPs, "
            f"{st.mismatches} mismatches"
        )
        if sim == "verilator":
            per_ms = wall * 1000 / us
            line += (
                f"; {per_ms:.1f} s wall per virtual ms (target < {TARGET_S_PER_MS:g} s: "
                f"{'met' if per_ms < TARGET_S_PER_MS else 'NOT met'})"
            )
        print(line, flush=True)
