"""`python -m tests.fuzz.minimise SEED|DIR [OUT]`: shrink a disagreeing case to a small reproducer.

Greedy line deletion (statements, table entries, packets) while p4c still compiles the
program and BMv2 and p4sim still disagree; writes the result to build/fuzz/min-SEED/.
"""

from __future__ import annotations

import copy
import sys
import tempfile
from pathlib import Path

from .gen import PORTS, Case, generate
from .outcome import differences


def _removable(line: str) -> bool:
    s = line.strip()
    return s.endswith(";") and not s.startswith(
        (
            "#",
            "key",
            "actions",
            "default_action",
            "header",
            "struct",
            "pkt.extract",
            "transition",
            "register",
            "counter",
            "V1Switch",
            "control",
            "state",
        )
    )


def minimise(case: Case, out: Path) -> Case:
    from controller.targets.netns import NetnsSet, name

    from . import bmv2, p4sim_run

    seed = case.seed
    with NetnsSet() as ns, tempfile.TemporaryDirectory(prefix="fuzzmin-") as tmp:
        work = Path(tmp)
        ifaces, peers = [], []
        for i in range(PORTS):
            v = ns.add_veth(name("fmp", i), name("fms", i))
            peers.append(v.outer)
            ifaces.append(v.inner)
        runner = bmv2.Bmv2Runner(ifaces, peers, work)

        def disagrees(c: Case) -> list[str]:
            src, js = work / "m.p4", work / "m.json"
            src.write_text(c.source)
            if bmv2.compile_p4(runner.p4c, src, js):
                return []
            try:
                ref = runner.run(c, js)
            except Exception:
                return []
            try:
                got = p4sim_run.run(c, src)
            except Exception as e:
                return [f"p4sim: {e}"]
            return differences(ref, got)

        first = disagrees(case)
        if not first:
            raise SystemExit(f"seed {seed}: BMv2 and p4sim agree")
        # packets first: keep the ones that show it
        for i in reversed(range(len(case.packets))):
            c = copy.deepcopy(case)
            del c.packets[i]
            if c.packets and disagrees(c):
                case = c
        for i in reversed(range(len(case.entries))):
            c = copy.deepcopy(case)
            del c.entries[i]
            if disagrees(c):
                case = c
        lines = case.source.splitlines()
        i = len(lines) - 1
        while i >= 0:
            if _removable(lines[i]):
                c = copy.deepcopy(case)
                c.source = "\n".join(lines[:i] + lines[i + 1 :]) + "\n"
                if disagrees(c):
                    case, lines = c, lines[:i] + lines[i + 1 :]
            i -= 1
        diff = disagrees(case)
        runner.close()
    from .__main__ import _save

    _save(out, case, diff)
    return case


if __name__ == "__main__":
    from .__main__ import load_case

    arg = sys.argv[1]
    start = load_case(Path(arg)) if Path(arg).is_dir() else generate(int(arg))
    c = minimise(start, Path(sys.argv[2] if len(sys.argv) > 2 else "build/fuzz/min"))
    print(c.source)
