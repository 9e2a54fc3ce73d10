"""The cocotb test that runs a scenario with one host's NIC receive path in RTL (top level
roce_rx). Started by controller.fil.run (make fil, bench, tests) through hdl/tb/run_sim.py.

The cocotb test owns the simulator clock; the scenario (p4sim, hosts, engine) runs in a
cocotb bridge thread and blocks in RtlNic.exchange while the RTL runs, so exactly one of
the two runs at any moment (deterministic). Settings come from the environment (the
runner's only channel into the simulator): RL_FIL_SCENARIO, RL_FIL_HOST, RL_FIL_SEED,
RL_FIL_DURATION_US, RL_FIL_OUT (a directory: result.pickle, the run's RunResult + stats);
variants: RL_FIL_READY (probability of tready on the RTL's outputs per cycle, seeded by
the run's seed), RL_FIL_IPV6=1 (the switch's hosts get fd00::N for 10.0.0.N), RL_FIL_VLAN
(every host tags its frames with this VID), RL_FIL_CLOCK_PS (the RTL clock; a stalled
port needs a faster clock than the link's 10 Gb/s to keep up with a saturated link).
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import cocotb
from cocotb.task import bridge

from controller.fil.loop import FilLoop
from controller.fil.rtl import CLOCK_PS, RtlPort
from controller.scenarios.scenario import load_scenario, run_once
from controller.targets import DEFAULT_PROGRAM
from controller.targets.p4sim import P4SimTarget


def _run(nic: RtlPort, env: dict[str, str]) -> dict:
    sc = load_scenario(env["RL_FIL_SCENARIO"])
    if env.get("RL_FIL_IPV6") == "1":
        for h in sc["switch"]["hosts"].values():
            h["ip"] = "fd00::" + h["ip"].rsplit(".", 1)[-1]
    seed = int(env.get("RL_FIL_SEED") or sc.get("seed", 1))
    dur = float(env["RL_FIL_DURATION_US"]) if env.get("RL_FIL_DURATION_US") else None
    target = P4SimTarget(DEFAULT_PROGRAM, seed=seed)
    loop = FilLoop(nic, env.get("RL_FIL_HOST", "h3"), switch=target._sw())
    vlan = int(env["RL_FIL_VLAN"]) if env.get("RL_FIL_VLAN") else None

    def hook(eng, hosts) -> None:
        for h in hosts.values():
            h.spec.vlan = vlan
        loop.hook(eng, hosts)

    wall0, cpu0 = time.perf_counter(), time.process_time()
    error = None
    run = None
    try:
        run = run_once(sc, target, seed, duration_us=dur, progress=False, nic_hook=hook)
        loop.finish()
    except AssertionError as exc:  # FilMismatch: reported, and the cocotb test fails
        error = str(exc)
    finally:
        target.close()
    return {
        "run": run,
        "stats": loop.stats,
        "error": error,
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "cfg": loop.cfg,
        "width": nic.width,
        "clock_ps": nic.clock_ps,
        "frames_rtl": nic.frames_in,
        "seed": seed,
        "scenario": sc,
    }


@cocotb.test()
async def fil_loop(dut) -> None:
    env = dict(os.environ)
    nic = RtlPort(
        dut,
        int(env.get("RL_FIL_CLOCK_PS") or CLOCK_PS),
        ready=float(env.get("RL_FIL_READY") or 1),
        seed=int(env.get("RL_FIL_SEED") or 1),
    )
    await nic.reset()
    out = await bridge(_run)(nic, env)
    dest = Path(env.get("RL_FIL_OUT", "."))
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / "result.pickle", "wb") as fh:
        pickle.dump(out, fh)
    assert out["error"] is None, out["error"]
    assert out["stats"].mismatches == 0
