"""`python -m tests.p4info_p4c [--samples DIR] [PROGRAM.p4 ...]`: P4Info of p4sim against real
p4c's for p4sim's corpus (tests/p4sim/programs), p4c's samples (DIR/*-bmv2.p4, DIR being p4c's
testdata/p4_16_samples) or the programs named. One line per difference, then a summary.
Exit 0: no unexplained difference and no stale exception; 1: some; 2: no p4c or bad options."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from controller.targets.toolchain import toolchain

from .compare import EXCEPTIONS, compare_program, corpus_programs, sample_programs, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.p4info_p4c", description=__doc__)
    ap.add_argument("programs", nargs="*", type=Path, help="programs (default: p4sim's corpus)")
    ap.add_argument("--samples", type=Path, help="p4c's testdata/p4_16_samples: its *-bmv2.p4")
    ap.add_argument("-q", "--quiet", action="store_true", help="only the summary and failures")
    args = ap.parse_args(argv)
    if args.samples and not args.samples.is_dir():
        ap.exit(2, f"p4info_p4c: --samples {args.samples}: not a directory\n")
    missing = [p for p in args.programs if not p.is_file()]
    if missing:
        ap.exit(2, f"p4info_p4c: {missing[0]}: no such file\n")
    tc = toolchain()
    why = tc.p4c_problem()
    if why:
        ap.exit(2, f"p4info_p4c: needs p4c-bm2-ss: {why}\n")
    programs = list(args.programs)
    if args.samples:
        programs += sample_programs(args.samples)
    programs = programs or corpus_programs()
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="p4info-p4c-") as work:
        for p in programs:
            o = compare_program(p, tc, Path(work), EXCEPTIONS)
            outcomes.append(o)
            if o.failed or not args.quiet:
                for line in o.lines:
                    print(line, flush=True)
    print(summary(outcomes))
    return 1 if any(o.failed for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
