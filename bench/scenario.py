"""Scenario (a), incast-dcqcn, for 10 ms of virtual time at 10 Gb/s on the in-process p4sim
target: wall-clock seconds (target < 10 s) and the frame rate through the P4 pipeline."""

from __future__ import annotations

import time

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it)
SMOKE = ["--virtual-us=500"]

TARGET_S = 10.0
VIRTUAL_US = 10_000


def _opt(argv: list[str], name: str, default: float) -> float:
    for a in argv:
        if a.startswith(f"--{name}="):
            return float(a.split("=", 1)[1])
    return default


def run(argv: list[str]) -> None:
    virtual_us = _opt(argv, "virtual-us", VIRTUAL_US)  # --virtual-us=T: a shorter run (smoke test)
    from controller.scenarios.scenario import load_scenario, run_once
    from controller.targets import DEFAULT_PROGRAM
    from controller.targets.p4sim import P4SimTarget

    sc = load_scenario("incast-dcqcn")
    t0 = time.perf_counter()
    target = P4SimTarget(DEFAULT_PROGRAM, seed=int(sc.get("seed", 1)))
    t_load = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    res = run_once(sc, target, int(sc.get("seed", 1)), None, virtual_us, progress=False)
    wall, cpu = time.perf_counter() - t1, time.process_time() - c1
    frames = res.counters.get("switch_frames_in", 0) + res.counters.get("switch_frames_out", 0)
    good = sum(f.goodput_bps for f in res.flows)
    print(f"program load (roce_switch.p4 -> p4sim): {t_load:.2f} s")
    print(
        f"incast-dcqcn, {virtual_us / 1000:g} ms virtual at 10 Gb/s: {wall:.2f} s wall "
        f"(target < {TARGET_S:g} s) {'OK' if wall < TARGET_S else 'SLOWER THAN TARGET'}; "
        f"{cpu:.2f} s CPU (wall exceeds CPU when the machine is busy)"
    )
    print(
        f"  {frames} frames through the switch ({res.counters.get('switch_frames_in', 0)} in, "
        f"{res.counters.get('switch_frames_out', 0)} out): {frames / wall:,.0f} frames/s wall"
    )
    print(
        f"  virtual/wall ratio: {virtual_us / 1e6 / wall:.4f}  (goodput simulated "
        f"{good / 1e9:.2f} Gb/s over the measured window)"
    )
