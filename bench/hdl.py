"""`python -m bench hdl`: the Verilog RoCE parser, per simulator and DATA_WIDTH.

Figures: cycles per frame for a back-to-back run against the ideal ceil(len / bytes per
beat) (target: equal, i.e. no bubble), and simulation speed in frames per wall-second
(cocotb + simulator, the back-to-back test alone). Options (use the `=` form, since
`python -m bench` takes bare words as section names): --frames=N, --sims=verilator,icarus,
--widths=64,512, --seed=S.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it); icarus: its build is quicker than Verilator's
SMOKE = ["--frames=4", "--sims=icarus", "--widths=64"]

TB_DIR = Path(__file__).resolve().parents[1] / "hdl" / "tb"


def _b2b_seconds(xml: Path) -> float:
    for case in ET.parse(xml).getroot().iter("testcase"):
        if case.get("name", "").endswith("test_back_to_back"):
            return float(case.get("time", "nan"))
    return float("nan")


def run(argv: list[str]) -> None:
    if str(TB_DIR) not in sys.path:
        sys.path.insert(0, str(TB_DIR))
    import run_sim

    ap = argparse.ArgumentParser(prog="bench hdl")
    ap.add_argument("--frames", type=int, default=200, help="RoCE frames in the run")
    ap.add_argument("--sims", default=",".join(run_sim.SIMS))
    ap.add_argument("--widths", default=",".join(map(str, run_sim.WIDTHS)))
    ap.add_argument("--seed", type=int, default=4791)
    args, _ = ap.parse_known_args(argv)

    print(
        f"back-to-back: {args.frames} random RoCEv1/v2 frames (payload 0..4096 B) + "
        f"{args.frames // 2} short frames + 1 PFC + 1 PAUSE, tvalid/tready always high"
    )
    print(
        f"{'sim':<10} {'width':>5} {'frames':>6} {'cycles':>8} {'ideal':>8} "
        f"{'cyc/frame':>9} {'ideal/fr':>9} {'frames/s':>9} {'build s':>7}  result"
    )
    bad: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-hdl-") as tmp:
        for sim in args.sims.split(","):
            reason = run_sim.prepare_env(sim)
            if reason:
                print(f"{sim:<10} skipped: {reason}")
                continue
            for width in (int(w) for w in args.widths.split(",")):
                work = Path(tmp) / f"{sim}-{width}"
                res = run_sim.run(
                    sim,
                    width,
                    work,
                    testcase="test_back_to_back",
                    env={"RL_HDL_BENCH_FRAMES": str(args.frames)},
                    seed=args.seed,
                )
                log = (work / f"sim-{sim}-{width}.log").read_text(errors="replace")
                m = re.search(
                    r"THROUGHPUT width=\d+ frames=(\d+) beats=\d+ cycles=(\d+) "
                    r"ideal=(\d+)",
                    log,
                )
                if m is None or res.failed:
                    print(f"{sim:<10} {width:>5} FAILED: {'; '.join(res.failed) or 'no figure'}")
                    bad.append(f"{sim}/{width}")
                    continue
                frames, cycles, ideal = (int(g) for g in m.groups())
                secs = _b2b_seconds(res.xml)
                verdict = "ok (no bubble)" if cycles == ideal else "SLOWER THAN IDEAL"
                if cycles != ideal:
                    bad.append(f"{sim}/{width}")
                print(
                    f"{sim:<10} {width:>5} {frames:>6} {cycles:>8} {ideal:>8} "
                    f"{cycles / frames:>9.2f} {ideal / frames:>9.2f} {frames / secs:>9.0f} "
                    f"{res.build_s:>7.1f}  {verdict}"
                )
    print("target: cycles == ideal at every width (one beat per cycle, no gap between frames)")
    if bad:  # make bench must not exit 0 on a failed or slow run
        raise RuntimeError(f"hdl bench failed or missed its target: {', '.join(bad)}")
