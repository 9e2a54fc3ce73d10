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

import time
from collections.abc import Iterable, Mapping

from .stf import Observed, StfSession, TargetStfRunner
from .targets.base import CloneSession, MulticastGroup

# Registers whose cells are microsecond timestamps of the switch's clock (p4src/include/
# pfc.p4 `pfc_last_sent`, cnp.p4 `cnp_last`): set or not is comparable, the value is not.
CLOCK_REGISTERS = ("pfc_last_sent", "cnp_last")


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def compare(
    a: Observed,
    b: Observed,
    names: tuple[str, str] = ("first", "second"),
    clock_registers: Iterable[str] = CLOCK_REGISTERS,
) -> list[str]:
    """Every difference between two runs, one line each (empty: the same)."""
    out: list[str] = []
    na, nb = names
    for port in sorted(set(a.frames) | set(b.frames)):
        fa, fb = a.frames.get(port, []), b.frames.get(port, [])
        for i in range(max(len(fa), len(fb))):
            x = fa[i] if i < len(fa) else None
            y = fb[i] if i < len(fb) else None
            if x != y:
                out.append(f"port {port} frame #{i + 1}: {_frame_diff(x, y, na, nb)}")
    out += _cells("counter", a.counters, b.counters, names)
    clocks = {_short(n) for n in clock_registers}
    ra = {
        n: ([int(v != 0) for v in c] if _short(n) in clocks else c) for n, c in a.registers.items()
    }
    rb = {
        n: ([int(v != 0) for v in c] if _short(n) in clocks else c) for n, c in b.registers.items()
    }
    out += _cells("register", ra, rb, names)
    return out


def extent(a: Observed, b: Observed) -> tuple[int, int]:
    """(frames, cells) a comparison of `a` and `b` looked at: frames per port (the longer
    side), counter and register cells (the union of the names, the longer side)."""
    frames = sum(
        max(len(a.frames.get(p, [])), len(b.frames.get(p, [])))
        for p in set(a.frames) | set(b.frames)
    )
    cells = 0
    for x, y in ((a.counters, b.counters), (a.registers, b.registers)):
        cells += sum(max(len(x.get(n, [])), len(y.get(n, []))) for n in set(x) | set(y))
    return frames, cells


# The user property each differential run leaves on its test report (xdist sends it to the
# controller), added up in one line at the end of the run (controller/testing/plugin.py).
PROPERTY = "differential"


def record(node, a: Observed, b: Observed, diffs: list[str]) -> None:
    """Leave this comparison's size and its differences on the pytest item `node`."""
    frames, cells = extent(a, b)
    node.user_properties.append(
        (PROPERTY, {"frames": frames, "cells": cells, "differences": len(diffs)})
    )


def summary_line(runs: list[dict]) -> str:
    frames = sum(r["frames"] for r in runs)
    cells = sum(r["cells"] for r in runs)
    diffs = sum(r["differences"] for r in runs)
    return (
        f"differential p4sim == BMv2: {len(runs)} runs, {frames} frames and {cells} "
        f"counter/register cells compared, {diffs} unexplained differences"
    )


def _frame_diff(x: bytes | None, y: bytes | None, na: str, nb: str) -> str:
    """Where two frames part, with 16 bytes from there (whole frames can be 4 KB)."""
    if x is None or y is None:
        return f"only {na if y is None else nb} has it: {(x or y or b'')[:32].hex()}..."
    at = next(
        (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y))
    )
    return (
        f"differ from byte {at} ({len(x)} / {len(y)} bytes): {na} ..{x[at : at + 16].hex()}.. "
        f"/ {nb} ..{y[at : at + 16].hex()}.."
    )


def _cells(
    kind: str, a: Mapping[str, list], b: Mapping[str, list], names: tuple[str, str]
) -> list[str]:
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
    lines = [
        "# the shared vectors (tests/vectors/) under a plain L2 config, for the differential",
        f"setdefault cnp_config {cnp_config}",
    ]
    lines += [f"add l2_fwd ethernet.dst:{m:#014x} l2_forward(port:{out_port})" for m in macs]
    for v in vectors:
        lines.append(f"# {v.name}")
        lines.append(f"packet {in_port} {v.frame.hex()}")
    lines.append("wait")
    return "\n".join(lines) + "\n"


class Recorder:
    """A target that keeps what reaches the switch: every write (in order) and every frame
    sent into a port, then passes it on. Around a scenario's in-process p4sim it records
    the frames at the switch's ingress for a replay on other targets."""

    def __init__(self, target):
        self.target = target
        self.writes: list = []  # entities, in order
        self.frames: list[tuple[int, bytes]] = []  # (ingress port, frame), in order

    def __getattr__(self, name: str):
        return getattr(self.target, name)

    def write(self, entities, modify_existing: bool = False) -> None:
        entities = list(entities)
        self.writes.extend(entities)
        self.target.write(entities, modify_existing)

    def send(self, port: int, frame: bytes) -> None:
        self.frames.append((port, bytes(frame)))
        self.target.send(port, frame)


def replay(
    session: StfSession, writes, frames, gap_s: float = 0.002, drop_s: float = 0.3
) -> Observed:
    """The recorded writes, then the recorded frames one at a time (every queue is empty
    when the next arrives: queue-dependent marking stays out of it), on a fresh pipeline of
    `session`'s switch; what came out, and the counters and registers."""
    with session.target() as t:
        runner = TargetStfRunner(
            t,
            session.schema,
            "replay",
            cpu_port=session.cfg.cpu_port,
            cli=session.cli(),
            gap_s=gap_s,
        )
        try:
            for e in writes:
                if isinstance(e, CloneSession | MulticastGroup):
                    runner.write_pre(e)
                else:
                    t.write([e], modify_existing=True)
            for port, frame in frames:
                # lockstep: the next frame only once this one came out (or `drop_s` passed:
                # dropped), so a switch that stalls under load never holds two at once
                t.send(port, frame)
                deadline = time.monotonic() + drop_s
                while not runner.pump(0.002) and time.monotonic() < deadline:
                    pass
                runner.pump(gap_s)  # its clones and replicas
            runner.sync()
            return runner.observed()
        finally:
            runner.clear_pre()
