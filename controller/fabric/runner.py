"""Fabric scenario files: `rocelab run fabric-storm` runs a YAML file's labelled runs of one
fabric scenario (controller/scenarios/fabric-*.yaml) and judges them with the registered
fabric checks (controller/fabric/checks.py), negative controls (`expect_fail:`) included.

    name: fabric-storm
    fabric:
      scenario: storm                      # spreading | deadlock | spray | storm
      runs:                                # label -> parameters (the sweep's, same bounds)
        calm: {stuck: 0}
        fault: {stuck: 1}
        watchdog: {stuck: 1, watchdog: 1}
    expect: {fabric_storm: true, fabric_watchdog: true}

A run is a pure function of its parameters (virtual time, seeded), so runs are memoised per
process: a control that `extends:` its scenario and changes one run re-runs only that one.
The report gives each run's metrics and the watchdog's counters per queue; `--out` writes
summary.json and, per run, the fabric's telemetry (telemetry_LABEL.json: every switch's
counters per port and class with the watchdog's `pfcwd_*` columns).

The engine (controller/scenarios) knows such a file only through `KIND`, this module's
scenario kind (controller/scenarios/kinds.py): its keys, its checks, how it runs.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from controller.scenarios import schema
from controller.scenarios.checks import judge
from controller.scenarios.kinds import ScenarioKind
from controller.scenarios.results import ScenarioResult
from controller.scenarios.schema import Validator, typed_value
from controller.text_table import table

from .checks import KEY  # the fabric checks, registered with this kind
from .params import PARAMS, bounds

MAX_MEMO = 64  # memoised runs per process (a run's telemetry is some 100 KB)
# the keys of a fabric scenario file: a fabric scenario of controller.fabric and its labelled runs


@dataclass
class FabricRun:
    scenario: str  # the fabric scenario (spreading, deadlock, spray, storm)
    label: str
    params: dict[str, int]
    metrics: dict
    telemetry: dict[str, dict]  # switch -> fabric_telemetry's rows
    wall_s: float
    seed: int


_MEMO: dict[tuple, tuple[dict, dict, float]] = {}


def run_point(name: str, params: dict[str, int]) -> tuple[dict, dict, float]:
    """(metrics, telemetry, wall seconds) of one run, memoised."""
    key = (name, tuple(sorted(params.items())))
    hit = _MEMO.get(key)
    if hit is not None:
        return hit
    from .scenarios import SCENARIOS

    t0 = time.perf_counter()
    report: dict = {}
    metrics = SCENARIOS[name].run(**params, report=report)
    out = (metrics, report.get("telemetry", {}), time.perf_counter() - t0)
    if len(_MEMO) >= MAX_MEMO:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = out
    return out


def run_params(
    sc: dict, seed: int | None = None, duration_us: float | None = None
) -> dict[str, dict[str, int]]:
    """label -> the full parameters of that run: the scenario's defaults, the file's `seed`,
    the run's own values, then the command line's --seed / --duration-us."""
    fab = sc["fabric"]
    base = dict(PARAMS[fab["scenario"]])
    if "seed" in sc:
        base["seed"] = int(sc["seed"])
    out = {}
    for label, over in fab["runs"].items():
        p = {**base, **(over or {})}
        if seed is not None:
            p["seed"] = int(seed)
        if duration_us is not None:
            p["duration_us"] = int(duration_us)
        out[label] = p
    return out


def validate_file(sc: dict, v: Validator, duration_us: float | None) -> None:
    """fabric: {scenario: NAME, runs: {LABEL: {PARAM: int, ...}, ...}}: keys, types and the
    scenario's name are the typed schema's (controller/schemas/files.py, already checked);
    here what needs the scenario: each run's parameters among its own and within their
    bounds (the table a sweep checks against), and at least one check."""
    from controller.schemas.types import Int

    if duration_us is not None:
        typed_value(v, "--duration-us", Int(*bounds("duration_us")), duration_us)
    name = sc["fabric"]["scenario"]
    for label, params in sc["fabric"]["runs"].items():
        for key, value in (params or {}).items():
            p = f"fabric.runs.{label}.{key}"
            if key not in PARAMS[name]:
                v.fail(p, f"unknown key (known: {', '.join(sorted(PARAMS[name]))})")
            lo, hi = bounds(key)
            if not lo <= value <= hi:
                v.fail(p, f"{value} is out of range [{lo}, {hi}]")
    if not sc.get("expect") and not sc.get("expect_fail"):
        v.fail("expect", "a fabric scenario names at least one check (expect: or expect_fail:)")


def run_fabric_scenario(
    sc: dict, seed: int | None = None, duration_us: float | None = None, progress: bool = True
):
    schema.validate(sc, duration_us=duration_us)
    name = sc["fabric"]["scenario"]
    runs = []
    todo = run_params(sc, seed, duration_us)
    show = progress and sys.stderr.isatty()
    for i, (label, params) in enumerate(todo.items()):
        if show:
            sys.stderr.write(f"\r{sc['name']}: run {label} ({i + 1}/{len(todo)})\x1b[K")
            sys.stderr.flush()
        metrics, tel, wall = run_point(name, params)
        runs.append(FabricRun(name, label, params, metrics, tel, wall, params["seed"]))
    if show:
        sys.stderr.write("\n")
    return ScenarioResult(sc, runs, judge(sc, runs))


def _fmt(v: object) -> str:
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def watchdog_rows(run: FabricRun) -> list[list[str]]:
    """The queues the watchdog acted on: switch, port, class and its counters."""
    rows = []
    for sw, js in sorted(run.telemetry.items()):
        for r in js.get("per_port_class", []):
            if any(r.get(f"pfcwd_{k}", 0) for k in ("detected", "restored", "ignored", "dropped")):
                rows.append(
                    [
                        sw,
                        str(r["port"]),
                        str(r["class"]),
                        str(r["pfcwd_detected"]),
                        str(r["pfcwd_restored"]),
                        str(r["pfcwd_ignored"]),
                        str(r["pfcwd_dropped"]),
                    ]
                )
    return rows


def summary_text(res) -> str:
    sc = res.scenario
    fab = sc["fabric"]
    out = [
        f"scenario {sc['name']}: {sc.get('title', '')}".rstrip(": "),
        f"fabric scenario {fab['scenario']}, {len(res.runs)} run(s)",
    ]
    defaults = PARAMS[fab["scenario"]]
    for run in res.runs:
        changed = {k: v for k, v in run.params.items() if defaults.get(k) != v}
        out.append("")
        out.append(
            f"run {run.label}  ({', '.join(f'{k}={v}' for k, v in changed.items()) or 'defaults'}; "
            f"seed {run.seed}; {run.params['duration_us']} us virtual; {run.wall_s:.1f} s wall)"
        )
        out.append("  " + ", ".join(f"{k} {_fmt(v)}" for k, v in run.metrics.items()))
        wd = watchdog_rows(run)
        if wd:
            out.append("  PFC watchdog per queue:")
            out.append(
                table(
                    wd,
                    [
                        "switch",
                        "port",
                        "class",
                        "detected",
                        "restored",
                        "ignored pauses",
                        "dropped",
                    ],
                )
            )
    out.append("")
    out.append(
        table(
            [[v.name, "PASS" if v.ok else "FAIL", v.detail] for v in res.verdicts],
            ["check", "result", "detail"],
        )
    )
    return "\n".join(out)


def write_outputs(res, outdir: str | Path) -> list[Path]:
    d = Path(outdir)
    d.mkdir(parents=True, exist_ok=True)
    summary = {
        "scenario": res.scenario["name"],
        "fabric": res.scenario["fabric"]["scenario"],
        "ok": res.ok,
        "verdicts": [v.__dict__ for v in res.verdicts],
        "runs": [
            {"label": r.label, "params": r.params, "metrics": r.metrics, "wall_s": r.wall_s}
            for r in res.runs
        ],
    }
    files = [d / "summary.json"]
    files[0].write_text(json.dumps(summary, indent=2))
    for r in res.runs:
        f = d / f"telemetry_{r.label}.json"
        f.write_text(json.dumps(r.telemetry, indent=1))
        files.append(f)
    return files


def cmd_run_fabric(args, sc: dict) -> int:
    """`rocelab run` on a fabric scenario file (controller/cli.py hands it over)."""
    import shlex

    if args.program:
        sys.stderr.write(
            "rocelab: --program: a fabric scenario runs roce_switch.p4 on every switch\n"
        )
        return 2
    lo, hi = bounds("seed")
    if args.seed is not None and not lo <= args.seed <= hi:
        sys.stderr.write(f"rocelab: --seed {args.seed}: a fabric run's seed is {lo}..{hi}\n")
        return 2
    from controller.targets.p4sim import profile_line

    sys.stderr.write(f"rocelab: {profile_line()}\n")  # which p4sim every switch runs
    res = run_fabric_scenario(sc, args.seed, args.duration_us, progress=not args.no_progress)
    files = write_outputs(res, args.out) if args.out else []
    if args.json:
        print(
            (Path(args.out) / "summary.json").read_text()
            if args.out
            else json.dumps(
                {"ok": res.ok, "verdicts": [v.__dict__ for v in res.verdicts]}, indent=2
            )
        )
    else:
        print(summary_text(res))
        if files:
            print(f"\noutputs in {args.out}/:")
            for f in files:
                print(f"  {f}")
    if not res.ok:
        cmd = ["rocelab", "run", args.scenario]
        if args.seed is not None:
            cmd += ["--seed", str(args.seed)]
        if args.duration_us is not None:
            cmd += ["--duration-us", f"{args.duration_us:g}"]
        seeds = sorted({r.seed for r in res.runs})
        sys.stderr.write(
            f"rocelab: scenario {sc['name']} FAILED (seeds {seeds}); reproduce "
            f"with: {shlex.join(cmd)}\n"
        )
        return 1
    return 0


# the scenario kind this module plugs into the engine (pyproject.toml: rocelab.scenario_kinds)
KIND = ScenarioKind(KEY, validate_file, run_fabric_scenario, cmd_run_fabric)
