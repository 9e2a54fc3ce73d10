"""`python -m controller.fil` (make fil): a scenario run twice, with the receiver's NP in
Python and in RTL (roce_parser -> roce_np in Verilator or Icarus), reports for both and
their comparison. Exit 0 when the RTL run had no mismatch, 1 otherwise, 2 on bad usage."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m controller.fil")
    ap.add_argument("--scenario", default="incast-dcqcn")
    ap.add_argument("--host", default="h3", help="the host whose NIC receive path is RTL")
    ap.add_argument("--sim", choices=("verilator", "icarus"), default="verilator")
    ap.add_argument("--width", type=int, choices=(64, 128, 256, 512), default=64)
    ap.add_argument("--duration-us", type=float, default=2000.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default="out/fil")
    args = ap.parse_args(argv)
    if not 0 < args.duration_us <= 1e6:
        ap.error("--duration-us must be in (0, 1e6]")

    from controller.config import ConfigError
    from controller.scenarios.report import summary_text, write_outputs
    from controller.scenarios.scenario import ScenarioResult, judge, load_scenario, run_scenario
    from controller.targets import DEFAULT_PROGRAM
    from controller.targets.p4sim import P4SimTarget

    from .compare import write as write_compare
    from .run import run_fil

    try:
        sc = load_scenario(args.scenario)
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        print(f"fil: {exc}", file=sys.stderr)
        return 2
    hosts = sorted((sc.get("switch") or {}).get("hosts") or {})
    if args.host not in hosts:
        print(
            f"fil: no host {args.host!r} in {sc['name']} (hosts: {', '.join(hosts)})",
            file=sys.stderr,
        )
        return 2
    from .run import run_sim

    reason = run_sim.prepare_env(args.sim)
    if reason:
        print(f"fil: {args.sim}: {reason}", file=sys.stderr)
        return 2
    seed = int(sc.get("seed", 1) if args.seed is None else args.seed)
    out = Path(args.out)
    sw = run_scenario(
        sc, lambda s: P4SimTarget(DEFAULT_PROGRAM, seed=s), seed, args.duration_us, progress=False
    )
    write_outputs(sw, out / "software")
    print(f"software run: {sw.runs[0].wall_s:.1f} s wall")
    res = run_fil(
        args.scenario,
        (out / "rtl").resolve(),
        sim=args.sim,
        width=args.width,
        duration_us=args.duration_us,
        seed=seed,
        host=args.host,
    )
    if res["run"] is None:
        print(f"fil: the RTL run stopped: {res['error']}", file=sys.stderr)
        return 1
    rtl = ScenarioResult(sc, [res["run"]], judge(sc, [res["run"]]))
    write_outputs(rtl, out / "rtl")
    cfg, st = res["cfg"], res["stats"]
    frame = sw.runs[0].queue.get("frame_bytes", 1098)  # the scenario's MTU-sized frame
    files = write_compare(
        out,
        sw.runs[0],
        res["run"],
        st,
        {
            "width": res["width"],
            "clock_ps": res["clock_ps"],
            "frame_bytes": int(frame),
            "interval_ns": sw.runs[0].dcqcn.cnp_interval_ns,
            "interval_cycles": cfg.interval_cycles,
        },
    )
    virt_us = res["run"].duration_ns / 1e3
    print(
        f"RTL run ({args.sim}, DATA_WIDTH {res['width']}, clock {1e6 / res['clock_ps']:.2f} MHz):"
        f" {virt_us:.0f} us virtual in {res['wall_s']:.1f} s wall = "
        f"{virt_us / res['wall_s']:.1f} virtual us/s, {st.frames_in / res['wall_s']:.0f} frames/s "
        f"through the RTL; {st.records_checked} records cross-checked, {st.mismatches} mismatches"
    )
    print("")
    print(summary_text(rtl))
    print("")
    print((out / "compare.md").read_text())
    print(f"outputs in {out}/: software/, rtl/, " + ", ".join(f.name for f in files))
    return 1 if (res["error"] or st.mismatches) else 0


if __name__ == "__main__":
    sys.exit(main())
