"""Differential runs: the same inputs through two targets (p4sim and BMv2), outputs compared.

What is compared after each run (`compare`): the frames of every port, byte for byte and in
order per port (frames of different ports are not ordered against each other: neither
target promises that), then every counter cell (packets and bytes) and every register cell.
Registers that hold wall-clock timestamps (`CLOCK_REGISTERS`: the time of a port's last PFC
frame, of a flow's last CNP) cannot be equal between two switches started at different
times; for those only which cells are set is compared. p4sim's README lists this and every
other known divergence ("Known divergences").

Inputs come from STF files (`controller.stf`), the shared vectors turned into an STF
(`vectors_stf`), and frames recorded at a switch's ingress during a scenario
(`Recorder`), replayed with `replay_stf`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .stf import Observed

# Registers whose cells are microsecond timestamps of the switch's clock (p4src/include/
# pfc.p4 `pfc_last_sent`, cnp.p4 `cnp_last`): set or not is comparable, the value is not.
CLOCK_REGISTERS = ("pfc_last_sent", "cnp_last")


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def compare(a: Observed, b: Observed, names: tuple[str, str] = ("p4sim", "bmv2"),
            clock_registers: Iterable[str] = CLOCK_REGISTERS) -> list[str]:
    """Every difference between two runs, one line each (empty: the same)."""
    out: list[str] = []
    na, nb = names
    for port in sorted(set(a.frames) | set(b.frames)):
        fa, fb = a.frames.get(port, []), b.frames.get(port, [])
        for i in range(max(len(fa), len(fb))):
            x = fa[i].hex() if i < len(fa) else "(none)"
            y = fb[i].hex() if i < len(fb) else "(none)"
            if x != y:
                out.append(f"port {port} frame #{i + 1}: {na} {x} / {nb} {y}")
    out += _cells("counter", a.counters, b.counters, names)
    clocks = {_short(n) for n in clock_registers}
    ra = {n: ([int(v != 0) for v in c] if _short(n) in clocks else c) for n, c in a.registers.items()}
    rb = {n: ([int(v != 0) for v in c] if _short(n) in clocks else c) for n, c in b.registers.items()}
    out += _cells("register", ra, rb, names)
    return out


def _cells(kind: str, a: Mapping[str, list], b: Mapping[str, list], names: tuple[str, str]) -> list[str]:
    out = []
    for name in sorted(set(a) | set(b)):
        ca, cb = a.get(name), b.get(name)
        if ca is None or cb is None:
            out.append(f"{kind} {name}: only in {names[0] if cb is None else names[1]}")
            continue
        for i, (x, y) in enumerate(zip(ca, cb, strict=False)):
            if x != y:
                out.append(f"{kind} {name}[{i}]: {names[0]} {x} / {names[1]} {y}")
        if len(ca) != len(cb):
            out.append(f"{kind} {name}: {len(ca)} cells / {len(cb)}")
    return out


def vectors_stf(vectors, in_port: int, out_port: int, cnp_config: str) -> str:
    """The shared vectors as an STF: every destination MAC -> `out_port`, then each vector's
    frame into `in_port` (no expectations: the differential compares what came out)."""
    macs = sorted({v.expected.get("eth_dst", 0) for v in vectors} - {0x0180C2000001})
    lines = ["# the shared vectors (tests/vectors/) under a plain L2 config, for the differential",
             f"setdefault cnp_config {cnp_config}"]
    lines += [f"add l2_fwd ethernet.dst:{m:#014x} l2_forward(port:{out_port})" for m in macs]
    for v in vectors:
        lines.append(f"# {v.name}")
        lines.append(f"packet {in_port} {v.frame.hex()}")
    lines.append("wait")
    return "\n".join(lines) + "\n"
