"""p4sim-switch side by side with BMv2 in one run (the p4runtime and veth_forwarding sections).

When the real toolchain is found (controller/targets/toolchain.py: PATH or
ROCELAB_BMV2_PREFIX), those sections start and alternate, trial by trial, p4sim-switch (its
default profile, fast), BMv2's performance build (`perf/bin/simple_switch_grpc`: the
baseline of every ratio) and its default build, all on roce_switch.p4 (BMv2: p4c-bm2-ss's
P4Info and JSON; p4sim-switch: the same .p4, which it compiles itself) configured by
`rocelab apply controller/examples/lab.yaml`, driven by the same client. `table()` prints
each row as a ratio to the perf build measured in the same trial (median over trials).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PERF_LABEL, DEFAULT_LABEL = "BMv2 perf build", "BMv2 default build"


@dataclass(frozen=True)
class Bmv2:
    """BMv2's two builds and the program compiled for them (the apply options)."""

    perf: Path
    default: Path
    apply_args: tuple[str, ...]  # --p4info FILE --bmv2-json FILE for rocelab apply
    describe: str

    def builds(self) -> list[tuple[str, Path]]:
        return [(PERF_LABEL, self.perf), (DEFAULT_LABEL, self.default)]


def find() -> tuple[Bmv2 | None, str]:
    """(BMv2 and roce_switch.p4 compiled for it, "") or (None, why its columns are absent)."""
    from controller.config import ConfigError
    from controller.targets.toolchain import P4C, PREFIX_ENV, ensure_artifacts, toolchain

    tc = toolchain()
    why = tc.bmv2_problem() or tc.p4c_problem()
    if why:
        if not tc.configured:
            why = f"no BMv2 toolchain ({P4C}/simple_switch_grpc not on PATH and {PREFIX_ENV} unset)"
        return None, why
    if tc.perf_simple_switch_grpc is None or tc.simple_switch_grpc is None:
        return None, f"no performance build of simple_switch_grpc under {tc.source} (perf/bin/)"
    try:
        out = ensure_artifacts()  # build/p4: roce_switch.p4 through p4c-bm2-ss, when stale
    except ConfigError as e:
        return None, str(e)
    p4info = next(iter(sorted(out.glob("*.p4info.*"))))
    bmv2_json = next(iter(sorted(out.glob("*.json"))))
    return Bmv2(
        tc.perf_simple_switch_grpc,
        tc.simple_switch_grpc,
        ("--p4info", str(p4info), "--bmv2-json", str(bmv2_json)),
        f"{tc.describe()}; {tc.p4c_version()}",
    ), ""


def add_options(ap: argparse.ArgumentParser, each: str, conflicts: Sequence[str]) -> None:
    """--bmv2 and --bmv2-default on a section's parser. `each`: what is printed as a ratio
    to the perf build; `conflicts`: the section's options that name or start its own switch."""
    ap.add_argument(
        "--bmv2-default",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with BMv2: its default build too, as an extra column (default: yes)",
    )
    ap.add_argument(
        "--bmv2",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"alternate p4sim-switch with BMv2's perf and default builds (started here) and print {each}"
        f" as a ratio to the perf build (default: when the toolchain is found and none of"
        f" {', '.join(conflicts)} is given)",
    )


def choose(ap: argparse.ArgumentParser, want: bool | None, given: dict[str, object]) -> Bmv2 | None:
    """The --bmv2 option (`want`; None: when found) answered: BMv2 to run side by side, or
    None (with one line saying why when it was not refused). `given`: the section's
    conflicting options and their values; --bmv2 with any of them set is a usage error."""
    if want is False:
        return None
    if any(given.values()):
        if want:
            ap.error(f"--bmv2 starts its own switches: not with {', '.join(given)}")
        return None
    bmv2, why = find()
    if bmv2 is None:
        if want:
            raise RuntimeError(f"--bmv2: {why}")
        print(f"BMv2 columns absent: {why}")
        return None
    print(f"side by side with BMv2: {bmv2.describe}")
    return bmv2


def start(
    exe: Path, addr: str, interfaces: Sequence[str] = (), device_id: int = 0
) -> subprocess.Popen:
    """simple_switch_grpc `exe` (no program: rocelab apply pushes it), CPU port 255 as
    lab.yaml's; `interfaces`: `-i PORT@IFACE` pairs' text."""
    from controller.targets.switches import free_port

    # a Thrift port of its own: two BMv2s on the default 9090 (two runs at once) left the
    # second without an answer on gRPC (a CI run saw "did not answer within 60 s")
    argv = [
        str(exe),
        "--device-id",
        str(device_id),
        "--log-level",
        "off",
        "--thrift-port",
        str(free_port()),
    ]
    for spec in interfaces:
        argv += ["-i", spec]
    argv += ["--no-p4", "--", "--cpu-port", "255", "--grpc-server-addr", addr]
    return subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def wait_ready(addr: str, proc: subprocess.Popen | None, label: str, timeout: float = 60.0) -> None:
    """Until the switch's gRPC server answers; RuntimeError if it exits or never does (killed then)."""
    import grpc

    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(addr) as ch:
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{label} exited while starting (status {proc.returncode})")
            try:
                grpc.channel_ready_future(ch).result(timeout=0.5)
                return
            except grpc.FutureTimeoutError:
                pass
    if proc is not None:
        proc.kill()
        proc.wait()
    raise RuntimeError(f"{label} did not answer on {addr} within {timeout:.0f} s")


@dataclass(frozen=True)
class Row:
    """One row of the table: its name, the figure's key, its unit and whether more is better."""

    name: str
    key: str
    unit: str  # "/s", "pps", "ms"
    higher_better: bool = True
    cpu_key: str | None = None  # the switch's CPU per operation (us), shown beside the figure
    extra: str = ""  # a note after the baseline's figure (e.g. offered load)


def _fmt(value: float, unit: str) -> str:
    if unit == "/s":
        return f"{value:,.0f}/s"
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def table(
    rows: Sequence[Row],
    trials: Sequence[dict[str, dict[str, float]]],
    columns: Sequence[str],
    notes: dict[tuple[str, str], str] | None = None,
) -> None:
    """Print the side-by-side table: `trials[i][label][key]` the figures of trial i;
    `columns` the labels, PERF_LABEL among them. The perf build's column holds its
    figures (median), the others the median over trials of their ratio to it within the
    same trial (>1: better than BMv2's perf build, whichever way the unit goes)."""
    notes = notes or {}
    others = [c for c in columns if c != PERF_LABEL]
    head = ["row", f"{PERF_LABEL} (median)", *[f"{c} (x perf build)" for c in others]]
    lines = [head]
    for row in rows:
        base = [t[PERF_LABEL][row.key] for t in trials if row.key in t.get(PERF_LABEL, {})]
        if not base:
            continue
        cell = _fmt(statistics.median(base), row.unit)
        cpus = [
            t[PERF_LABEL][row.cpu_key]
            for t in trials
            if row.cpu_key and row.cpu_key in t.get(PERF_LABEL, {})
        ]
        if cpus:
            cell += f" ({statistics.median(cpus):.1f} us CPU)"
        cell += notes.get((PERF_LABEL, row.key), "")
        out = [row.name, cell]
        for c in others:
            rs, cs = [], []
            for t in trials:
                a, b = t.get(c, {}), t.get(PERF_LABEL, {})
                if row.key in a and b.get(row.key) and a[row.key]:
                    rs.append(
                        a[row.key] / b[row.key] if row.higher_better else b[row.key] / a[row.key]
                    )
                if row.cpu_key and row.cpu_key in a:
                    cs.append(a[row.cpu_key])
            if not rs:
                out.append("-")
                continue
            txt = (
                f"**{statistics.median(rs):.2f}x**"
                if statistics.median(rs) < 1
                else f"{statistics.median(rs):.2f}x"
            )
            if len(rs) > 1:
                txt += f" [{min(rs):.2f}-{max(rs):.2f}]"
            vals = [t[c][row.key] for t in trials if row.key in t.get(c, {})]
            txt += f" ({_fmt(statistics.median(vals), row.unit)}"
            txt += f", {statistics.median(cs):.1f} us CPU)" if cs else ")"
            txt += notes.get((c, row.key), "")
            out.append(txt)
        lines.append(out)
    load = os.getloadavg()
    print(
        f"side by side, same run, {len(trials)} trial(s) alternated (load average {load[0]:.2f} on "
        f"{os.cpu_count()} cores): each figure as a ratio to BMv2's perf build in the same trial, "
        "median [min-max] (>1 = better than it; ** below it)"
    )
    print("| " + " | ".join(lines[0]) + " |")
    print("|" + "---|" * len(lines[0]))
    for line in lines[1:]:
        print("| " + " | ".join(line) + " |")
