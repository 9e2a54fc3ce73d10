"""`rocelab sweep`: the cartesian product of parameter values of a fabric scenario, run on
Dask (a LocalCluster by default, or an existing scheduler), one row of metrics per point.

Each point is a pure function of its parameters (the scenario is deterministic by seed), so
the rows do not depend on which worker ran a point or in what order: they are sorted back
into the product's order before they are written.
"""

from __future__ import annotations

import csv
import itertools
import sys
import time
from pathlib import Path

from .params import PARAMS

MAX_POINTS = 10_000
# the names of .scenarios.SCENARIOS (from .params, so `rocelab --help` need not import them)
SCENARIO_NAMES = tuple(PARAMS)


class SweepError(ValueError):
    pass


def _value(text: str, key: str, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise SweepError(f"--set {key}: {text!r} is not a number (an integer)") from None
    if not lo <= v <= hi:
        raise SweepError(f"--set {key}: {v} is out of range {lo}..{hi}")
    return v


def parse_sets(scenario: str, sets: list[str]) -> dict[str, list[int]]:
    """['key=v1,v2', ...] -> {key: [v1, v2]}, checked against the scenario's parameters."""
    from .scenarios import SCENARIOS

    sc = SCENARIOS.get(scenario)
    if sc is None:
        raise SweepError(f"no fabric scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    out: dict[str, list[int]] = {}
    for s in sets:
        key, eq, vals = s.partition("=")
        key = key.strip()
        if not eq or not key or not vals.strip():
            raise SweepError(f"--set {s!r}: expected KEY=V1,V2,...")
        if key not in sc.params:
            raise SweepError(f"--set {key}: {scenario} has no parameter {key!r} "
                             f"(it has {', '.join(sc.params)})")
        if key in out:
            raise SweepError(f"--set {key} given twice")
        lo, hi = sc.bounds(key)
        out[key] = [_value(v.strip(), key, lo, hi) for v in vals.split(",")]
    return out


def points(scenario: str, grid: dict[str, list[int]]) -> list[dict]:
    from .scenarios import SCENARIOS

    sc = SCENARIOS[scenario]
    keys = list(grid)
    n = 1
    for v in grid.values():
        n *= len(v)
    if n > MAX_POINTS:
        raise SweepError(f"{n} points: at most {MAX_POINTS} per sweep")
    return [{**sc.params, **dict(zip(keys, combo, strict=True))}
            for combo in itertools.product(*(grid[k] for k in keys))]


def run_point(scenario: str, params: dict) -> dict:
    """One row: the parameters, then the metrics (what a worker runs)."""
    from .scenarios import SCENARIOS

    metrics = SCENARIOS[scenario].run(**params)
    return {**params, **metrics}


def run_serial(scenario: str, pts: list[dict]) -> list[dict]:
    return [run_point(scenario, p) for p in pts]


class Bar:
    """A progress bar on stderr: points done out of the total."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.done = total, 0
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        frac = self.done / self.total if self.total else 1.0
        sys.stderr.write(f"\rsweep [{'#' * int(frac * 30):<30}] {self.done}/{self.total} "
                         f"{time.perf_counter() - self.t0:.1f} s\x1b[K")
        if self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def run_dask(scenario: str, pts: list[dict], scheduler: str | None = None, workers: int = 2,
             processes: bool = True, progress: bool = True) -> list[dict]:
    """Run the points on a Dask cluster; rows come back in the points' order."""
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler is None:
        import logging

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout="10s")
    try:
        futs = [client.submit(run_point, scenario, p, pure=False) for p in pts]
        index = {f.key: i for i, f in enumerate(futs)}
        rows: list[dict | None] = [None] * len(pts)
        bar = Bar(len(pts), progress and sys.stderr.isatty())
        for fut in as_completed(futs):
            rows[index[fut.key]] = fut.result()
            bar.step()
        return [r for r in rows if r is not None]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _columns(rows: list[dict]) -> list[str]:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    return keys


def normalise(rows: list[dict]) -> list[dict]:
    """One type per column, so the CSV and the Parquet file hold the same values: a column
    of ints and floats (a metric that is -1 when absent, a time otherwise) becomes floats;
    a missing cell is None."""
    keys = _columns(rows)
    floats = {k for k in keys
              if any(isinstance(r.get(k), float) for r in rows)
              and all(isinstance(r.get(k), int | float | None) and not isinstance(r.get(k), bool)
                      for r in rows)}
    return [{k: (float(r[k]) if k in floats and r.get(k) is not None else r.get(k)) for k in keys}
            for r in rows]


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=_columns(rows))
        w.writeheader()
        w.writerows(rows)


def write_parquet(rows: list[dict], path: Path) -> None:
    """The same table as write_csv, typed (int64, float64, string), through pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    keys = _columns(rows)
    table = pa.table({k: [r.get(k) for r in rows] for k in keys})
    pq.write_table(table, path)


def plot(rows: list[dict], x: str, metric: str, path: Path, swept: list[str]) -> None:
    """metric against parameter x, one line per combination of the other swept parameters."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not rows or x not in rows[0] or metric not in rows[0]:
        raise SweepError(f"plot: no column {x if not rows or x not in rows[0] else metric!r}")
    others = [k for k in swept if k != x]
    lines: dict[tuple, list[tuple[float, float]]] = {}
    for r in rows:
        lines.setdefault(tuple(r[k] for k in others), []).append((r[x], r[metric]))
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in lines.items():
        pts.sort()
        name = ", ".join(f"{k}={v}" for k, v in zip(others, label, strict=True)) or metric
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def cmd_sweep(args) -> int:
    """The `rocelab sweep` subcommand (controller/cli.py registers it)."""
    try:
        grid = parse_sets(args.scenario, args.set or [])
        pts = points(args.scenario, grid)
        if args.workers < 1:
            raise SweepError("--workers must be >= 1")
        if args.serial:
            rows = run_serial(args.scenario, pts)
        else:
            rows = run_dask(args.scenario, pts, args.scheduler, args.workers)
        out = Path(args.out)
        rows = normalise(rows)
        write_csv(rows, out / "sweep.csv")
        write_parquet(rows, out / "sweep.parquet")
        files = [out / "sweep.csv", out / "sweep.parquet"]
        if args.metric:
            x = args.x or (next(iter(grid)) if grid else None)
            if x is None:
                raise SweepError("--metric needs a swept parameter (--set) or --x")
            plot(rows, x, args.metric, out / f"{args.metric}_vs_{x}.png", list(grid))
            files.append(out / f"{args.metric}_vs_{x}.png")
    except (SweepError, ValueError, OSError) as exc:
        sys.stderr.write(f"rocelab sweep: {exc}\n")
        return 2
    for f in files:
        print(f)
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("sweep", help="run a fabric scenario over a parameter grid on Dask")
    s.add_argument("scenario", help=f"fabric scenario: {', '.join(SCENARIO_NAMES)}")
    s.add_argument("--set", action="append", metavar="KEY=V1,V2", help="values of a parameter")
    s.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler")
    s.add_argument("--workers", type=int, default=2, help="local cluster workers (default 2)")
    s.add_argument("--serial", action="store_true", help="no Dask: run the points here")
    s.add_argument("--out", default="out/sweep",
                   help="directory for sweep.csv, sweep.parquet and plots")
    s.add_argument("--metric", help="plot this metric ...")
    s.add_argument("--x", help="... against this parameter (default: the first --set)")
