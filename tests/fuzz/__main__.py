"""`python -m tests.fuzz`: random programs on p4c + BMv2 and on p4sim, outputs compared.

    python -m tests.fuzz [--seed S] [--count N] [--out DIR] [--first K] [--profile reference|fast]

Program i of a batch is `gen.generate(S * 1_000_003 + i)`. Needs root (veth pairs) and
p4c-bm2-ss, simple_switch and simple_switch_CLI on PATH. Each disagreement is written to
DIR/seed-<seed>/ (program.p4, case.txt, diff.txt); the summary goes to stdout. Exit status:
0 all programs p4c accepts agree, 1 a disagreement or an error, 2 bad usage or no toolchain.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .gen import PORTS, Case, generate
from .outcome import differences


@dataclass
class Summary:
    programs: int = 0
    rejected_by_p4c: int = 0
    agreed: int = 0
    packets: int = 0
    disagreements: list[tuple[int, list[str]]] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    reject_reasons: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def report(self) -> str:
        per = self.seconds / self.programs if self.programs else 0.0
        lines = [
            f"fuzz: {self.programs} programs ({self.rejected_by_p4c} rejected by p4c), "
            f"{self.agreed} agree x {self.packets} packets, {len(self.disagreements)} disagree, "
            f"{len(self.errors)} errors; {per:.2f} s per program"
        ]
        for seed, diff in self.disagreements[:20]:
            lines.append(f"  DISAGREE seed {seed}: {diff[0]}")
        for seed, err in self.errors[:20]:
            lines.append(f"  ERROR seed {seed}: {err}")
        for reason, n in self.reject_reasons.most_common(5):
            lines.append(f"  p4c rejects ({n}): {reason}")
        return "\n".join(lines)


def describe(case: Case) -> str:
    lines = [f"seed {case.seed}"]
    lines += [f"mirroring_add {s} {p}" for s, p in case.clone_sessions.items()]
    for e in case.entries:
        keys = " ".join(f"{v:#x}/{m}" if m is not None else f"{v:#x}" for _, v, m in e.keys)
        lines.append(
            f"table_add {e.table} {e.action} {keys} => {' '.join(str(v) for _, v in e.args)}"
        )
    lines += [f"packet {p} {f.hex()}" for p, f in case.packets]
    return "\n".join(lines) + "\n"


def load_case(directory: Path) -> Case:
    """A case saved by `_save` (program.p4 + case.txt), to rerun or minimise it."""
    from .gen import CLONE_SESSION, REG_SIZE, Entry

    lines = (directory / "case.txt").read_text().splitlines()
    case = Case(
        seed=int(lines[0].split()[1]),
        source=(directory / "program.p4").read_text(),
        registers=["I.reg"],
        counters=[("I.ctr", REG_SIZE)],
    )
    for ln in lines[1:]:
        w = ln.split()
        if w[0] == "mirroring_add":
            case.clone_sessions[int(w[1])] = int(w[2])
        elif w[0] == "packet":
            case.packets.append((int(w[1]), bytes.fromhex(w[2])))
        elif w[0] == "table_add":
            arrow = w.index("=>")
            keys = []
            for k in w[3:arrow]:
                v, _, plen = k.partition("/")
                keys.append(("", int(v, 0), int(plen) if plen else None))
            args = [(f"p{i}", int(a)) for i, a in enumerate(w[arrow + 1 :])]
            case.entries.append(Entry(w[1], keys, w[2], args))
    assert CLONE_SESSION in case.clone_sessions or "clone(" not in case.source
    return case


def run_batch(
    seed: int, count: int, out: Path | None, first: int = 0, log=print, profile: str = "reference"
) -> Summary:
    from controller.targets.netns import NetnsSet, name

    from . import bmv2, p4sim_run

    summary = Summary()
    t0 = time.monotonic()
    with NetnsSet() as ns, tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        work = Path(tmp)
        ifaces, peers = [], []
        for i in range(PORTS):
            v = ns.add_veth(name("fzp", i), name("fzs", i))
            peers.append(v.outer)
            ifaces.append(v.inner)
        runner = bmv2.Bmv2Runner(ifaces, peers, work)
        try:
            for i in range(first, first + count):
                s = seed * 1_000_003 + i
                case = generate(s)
                src, js = work / "program.p4", work / "program.json"
                src.write_text(case.source)
                summary.programs += 1
                rejected = bmv2.compile_p4(runner.p4c, src, js)
                if rejected:
                    summary.rejected_by_p4c += 1
                    summary.reject_reasons[rejected.split("error:")[-1].strip()[:80]] += 1
                    continue
                try:
                    ref = runner.run(case, js)
                except Exception as e:  # a BMv2 run that did not finish: an error, not a verdict
                    summary.errors.append(
                        (s, f"BMv2: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                    )
                    _save(out, case, [f"BMv2 error: {e}"])
                    continue
                try:
                    got = p4sim_run.run(case, src, profile)
                except Exception as e:
                    diff = [
                        f"p4sim fails where p4c+BMv2 run: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
                    ]
                else:
                    diff = differences(ref, got)
                if diff:
                    summary.disagreements.append((s, diff))
                    _save(out, case, diff)
                    log(f"DISAGREE seed {s}: {diff[0]}")
                else:
                    summary.agreed += 1
                    summary.packets += len(case.packets)
                if summary.programs % 50 == 0:
                    summary.seconds = time.monotonic() - t0
                    log(summary.report().splitlines()[0])
        finally:
            runner.close()
    summary.seconds = time.monotonic() - t0
    return summary


def _save(out: Path | None, case: Case, diff: list[str]) -> None:
    if out is None:
        return
    d = out / f"seed-{case.seed}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "program.p4").write_text(case.source)
    (d / "case.txt").write_text(describe(case))
    (d / "diff.txt").write_text("\n".join(diff) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument(
        "--first", type=int, default=0, help="index of the first program (to resume a batch)"
    )
    ap.add_argument(
        "--out", type=Path, default=Path("build/fuzz"), help="where disagreements are written"
    )
    ap.add_argument(
        "--profile",
        choices=("reference", "fast"),
        default="reference",
        help="p4sim's profile (default reference: see p4sim_run.DEFAULT_PROFILE)",
    )
    args = ap.parse_args(argv)
    if args.count < 1:
        print("fuzz: --count must be at least 1", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("fuzz: needs root (veth pairs for BMv2's ports)", file=sys.stderr)
        return 2
    from .bmv2 import ToolchainMissing, tools

    try:
        tools()
    except ToolchainMissing as e:
        print(f"fuzz: no BMv2 toolchain: {e}", file=sys.stderr)
        return 2
    summary = run_batch(
        args.seed,
        args.count,
        args.out,
        args.first,
        log=lambda m: print(m, flush=True),
        profile=args.profile,
    )
    print(summary.report())
    return 0 if not summary.disagreements and not summary.errors else 1


if __name__ == "__main__":
    sys.exit(main())
