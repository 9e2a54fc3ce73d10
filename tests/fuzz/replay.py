"""`python -m tests.fuzz.replay PROGRAM.p4 FILE.stf`: its packets on p4c + BMv2 and on p4sim.

Only the STF's `packet PORT HEX` and `mirroring_add` lines are used (tables: const entries);
prints what each target sent per packet and the differences (exit 1 when they differ).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .gen import PORTS, REG_SIZE, Case
from .outcome import differences


def main(argv: list[str]) -> int:
    from controller.targets.netns import NetnsSet, name

    from . import bmv2, p4sim_run

    p4, stf = Path(argv[0]), Path(argv[1])
    case = Case(seed=0, source=p4.read_text())
    for ln in stf.read_text().splitlines():
        w = ln.split()
        if w and w[0] == "packet":
            case.packets.append((int(w[1]), bytes.fromhex("".join(w[2:]))))
        elif w and w[0] == "mirroring_add":
            case.clone_sessions[int(w[1])] = int(w[2])
    if "register<" in case.source and " reg;" in case.source:
        case.registers = ["I.reg"]
    if "counter(" in case.source and " ctr;" in case.source:
        case.counters = [("I.ctr", REG_SIZE)]
    with NetnsSet() as ns, tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        work = Path(tmp)
        ifaces, peers = [], []
        for i in range(PORTS):
            v = ns.add_veth(name("frp", i), name("frs", i))
            peers.append(v.outer)
            ifaces.append(v.inner)
        runner = bmv2.Bmv2Runner(ifaces, peers, work)
        js = work / "p.json"
        err = bmv2.compile_p4(runner.p4c, p4, js)
        if err:
            print(f"p4c rejects: {err}")
            return 2
        ref = runner.run(case, js)
        runner.close()
    got = p4sim_run.run(case, p4)
    for i, (a, b) in enumerate(zip(ref.packets, got.packets, strict=True)):
        print(f"packet {i}: BMv2 { {p: [f.hex() for f in fs] for p, fs in a.items()} }")
        print(f"          p4sim { {p: [f.hex() for f in fs] for p, fs in b.items()} }")
    diff = differences(ref, got, limit=50)
    print("\n".join(diff) if diff else "same")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
