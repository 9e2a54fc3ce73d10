"""`rocelab sweep`: the cartesian product of parameter values of a fabric scenario, run on
Dask (a LocalCluster by default, or an existing scheduler), one row of metrics per point.

Each point is a pure function of its parameters (the scenario is deterministic by seed), so
the rows do not depend on which worker ran a point or in what order: they are sorted back
into the product's order before they are written.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from p4sim import cliargs

from .params import METRICS, PARAMS, is_column
from .sweep_store import (
    JOURNAL,
    Journal,
    normalise,
    point_key,
    remove_stale_temporaries,
    write_csv,
    write_parquet,
)

if TYPE_CHECKING:
    from distributed import Client

MAX_POINTS = 10_000
# the names of .scenarios.SCENARIOS (from .params, so `rocelab --help` need not import them)
SCENARIO_NAMES = tuple(PARAMS)


class SweepError(ValueError):
    pass


def _value(text: str, key: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise SweepError(f"--set {key}: {text!r} is not a number (an integer)") from None


def _checked(spec: dict, source: str = "", lines: dict[str, int] | None = None):
    """The typed grid (controller.schemas.files.SweepGridFile), or its first error as one
    SweepError line naming the key (and file:line)."""
    from controller.schemas import validate
    from controller.schemas.files import SweepGridFile

    model, errors = validate(SweepGridFile, spec, source, lines)
    if errors or model is None:
        raise SweepError(str(errors[0]) if errors else f"{source or 'grid'}: not a sweep grid")
    return model


def parse_sets(scenario: str, sets: list[str], grid: dict | None = None) -> dict[str, list[int]]:
    """['key=v1,v2', ...] -> {key: [v1, v2]} over `grid` (a grid file's), checked by the
    sweep grid schema against the scenario's parameters."""
    if scenario not in SCENARIO_NAMES:
        raise SweepError(f"no fabric scenario {scenario!r} (known: {', '.join(SCENARIO_NAMES)})")
    out: dict[str, list[int]] = dict(grid or {})
    given: set[str] = set()
    for s in sets:
        key, eq, vals = s.partition("=")
        key = key.strip()
        if not eq or not key or not vals.strip():
            raise SweepError(f"--set {s!r}: expected KEY=V1,V2,...")
        if key in given:
            raise SweepError(f"--set {key} given twice")
        given.add(key)
        out[key] = [_value(v.strip(), key) for v in vals.split(",")]
    try:
        return dict(_checked({"scenario": scenario, "grid": out}).grid)
    except SweepError as exc:
        raise SweepError(f"--set {exc}") from None


def load_grid(path: str) -> tuple[str, dict[str, list[int]], str | None, str | None]:
    """A sweep grid file: (scenario, grid, metric, x), bounded and typed like every input."""
    import yaml

    from controller.inputs import parse_yaml, read_text, yaml_error_where
    from controller.schemas import key_lines

    text = read_text(path)
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        where, what = yaml_error_where(exc, path)
        raise SweepError(f"{where}: {what}") from None
    model = _checked(data, path, key_lines(text))
    return model.scenario, dict(model.grid), model.metric, model.x


def points(scenario: str, grid: dict[str, list[int]]) -> list[dict]:
    from .scenarios import SCENARIOS

    sc = SCENARIOS[scenario]
    keys = list(grid)
    n = 1
    for v in grid.values():
        n *= len(v)
    if n > MAX_POINTS:
        raise SweepError(f"{n} points: at most {MAX_POINTS} per sweep")
    return [
        {**sc.params, **dict(zip(keys, combo, strict=True))}
        for combo in itertools.product(*(grid[k] for k in keys))
    ]


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
        sys.stderr.write(
            f"\rsweep [{'#' * int(frac * 30):<30}] {self.done}/{self.total} "
            f"{time.perf_counter() - self.t0:.1f} s\x1b[K"
        )
        if self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


# Dask's scheduler runs a task again on another worker when the worker running it dies
# (killed, out of memory), at most this many times before the sweep fails with KilledWorker
# (`distributed.scheduler.allowed-failures`, Dask's default, set here so the guarantee is ours)
ALLOWED_FAILURES = 3


def scheduler_unreachable(address: str, timeout_s: float = 1.0) -> str | None:
    """Why nothing answers a TCP connection at the scheduler's HOST:PORT within `timeout_s`,
    or None (then Dask's own handshake follows)."""
    import socket

    host, port = cliargs.split_address(address.split("://", 1)[-1])
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except (OSError, UnicodeError) as exc:
        return f"--scheduler {address}: nothing answers ({exc.strerror or exc})"


@contextmanager
def dask_client(
    scheduler: str | None = None,
    workers: int = 2,
    processes: bool = True,
    allowed_failures: int = ALLOWED_FAILURES,
) -> Iterator[Client]:
    """A client of a LocalCluster of single-thread workers, or of an existing scheduler (which
    keeps its own allowed-failures)."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    if scheduler is not None:
        client = Client(scheduler, timeout="10s")
        try:
            yield client
        finally:
            client.close()
        return
    with dask.config.set(
        {
            "distributed.scheduler.allowed-failures": allowed_failures,
            "distributed.worker.preload": ["controller.fabric.sweep_worker"],
        }
    ):
        # no dashboard; the scheduler's HTTP server (health routes) on a free port: on its
        # default, 8787, a second cluster on the machine (another sweep, a parallel test)
        # printed distributed's multi-line "Port 8787 is already in use" warning
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        )
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def iter_dask(
    client: Client, scenario: str, pts: list[dict], fn: Callable[[str, dict], dict] = run_point
) -> Iterator[tuple[int, dict]]:
    """(index in pts, row) as each point completes; the tasks not done are cancelled when
    the caller stops early (an interrupt)."""
    from distributed import as_completed

    futs = [client.submit(fn, scenario, p, pure=False) for p in pts]
    index = {f.key: i for i, f in enumerate(futs)}
    try:
        for fut in as_completed(futs):
            yield index[fut.key], fut.result()
    finally:
        with contextlib.suppress(Exception):
            client.cancel(futs)


def run_dask(
    scenario: str,
    pts: list[dict],
    scheduler: str | None = None,
    workers: int = 2,
    processes: bool = True,
) -> list[dict]:
    """Run the points on a Dask cluster; rows come back in the points' order."""
    rows: list[dict] = [{}] * len(pts)
    with dask_client(scheduler, workers, processes) as client:
        for i, row in iter_dask(client, scenario, pts):
            rows[i] = row
    return rows


def run_sweep(
    scenario: str,
    pts: list[dict],
    out: Path,
    compute: Callable[[list[dict]], Iterable[tuple[int, dict]]],
    resume: bool = False,
    progress: bool = False,
) -> tuple[list[dict], int]:
    """(every point's row in the points' order, how many were computed now). Each row is
    appended to the journal in `out` as it arrives; with `resume` the points already in the
    journal are not computed again. A point is kept once (by point_key) whatever `compute`
    returns."""
    journal = Journal(out / JOURNAL)
    keys = [point_key(scenario, p) for p in pts]
    done = {k: r for k, r in journal.load().items() if k in set(keys)} if resume else {}
    if not resume:
        journal.reset()
    todo = [i for i, k in enumerate(keys) if k not in done]
    bar = Bar(len(pts), progress)
    bar.done = len(pts) - len(todo)
    computed = 0
    try:
        for j, row in compute([pts[i] for i in todo]):
            key = keys[todo[j]]
            if key not in done:
                journal.append(key, row)
                done[key] = row
                computed += 1
            bar.step()
    finally:
        journal.close()
    return [done[k] for k in keys], computed


class Interrupted(BaseException):
    """SIGINT or SIGTERM during a sweep (a BaseException: Dask's `except Exception` must not
    swallow it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise Interrupted; the second and later are ignored while the
    sweep closes its cluster and journal (a second Ctrl-C must not leave workers behind)."""
    sigs = (signal.SIGINT, signal.SIGTERM)

    def stop(signum: int, frame: object) -> None:
        for s in sigs:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    old = {s: signal.signal(s, stop) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


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
    """The `rocelab sweep` subcommand (controller/cli.py registers it). Exit 0 done, 2 bad
    input, 128 + the signal's number when interrupted (the journal keeps the points done)."""
    out = Path(args.out)
    try:
        if args.scheduler and not args.serial and (why := scheduler_unreachable(args.scheduler)):
            raise SweepError(why)  # first: Client() would wait out its 10 s timeout
        metric, x = args.metric, args.x
        if args.grid:
            scenario, grid, metric0, x0 = load_grid(args.grid)
            if args.scenario and args.scenario != scenario:
                raise SweepError(f"{args.grid} sweeps {scenario}, not {args.scenario}")
            args.scenario, metric, x = scenario, metric or metric0, x or x0
        elif not args.scenario:
            raise SweepError("name a fabric scenario or give --grid FILE")
        grid = parse_sets(args.scenario, args.set or [], grid if args.grid else None)
        pts = points(args.scenario, grid)
        for opt, name in (("--metric", metric), ("--x", x)):  # before any point runs
            if name and not is_column(args.scenario, name):
                raise SweepError(
                    f"{opt} {name}: not a parameter or metric of {args.scenario}"
                    f" (metrics: {', '.join(METRICS[args.scenario])})"
                )
        if args.workers < 1:
            raise SweepError("--workers must be >= 1")
        if out.exists() and not out.is_dir():
            raise SweepError(f"--out {out}: not a directory")
        remove_stale_temporaries(out)
        with interruptible():
            if args.serial:

                def compute(todo: list[dict]) -> Iterator[tuple[int, dict]]:
                    return ((i, run_point(args.scenario, p)) for i, p in enumerate(todo))

                rows, computed = run_sweep(args.scenario, pts, out, compute, args.resume)
            else:
                with dask_client(args.scheduler, args.workers) as client:
                    rows, computed = run_sweep(
                        args.scenario,
                        pts,
                        out,
                        lambda todo: iter_dask(client, args.scenario, todo),
                        args.resume,
                        progress=sys.stderr.isatty(),
                    )
            if args.resume:
                sys.stderr.write(
                    f"rocelab sweep: {len(pts) - computed} of {len(pts)} points "
                    f"from the journal, {computed} computed\n"
                )
            rows = normalise(rows)
            write_csv(rows, out / "sweep.csv")
            write_parquet(rows, out / "sweep.parquet")
            files = [out / "sweep.csv", out / "sweep.parquet"]
            if metric:
                x = x or (next(iter(grid)) if grid else None)
                if x is None:
                    raise SweepError("--metric needs a swept parameter (--set) or --x")
                plot(rows, x, metric, out / f"{metric}_vs_{x}.png", list(grid))
                files.append(out / f"{metric}_vs_{x}.png")
    except Interrupted as exc:  # (only raised once the points are known)
        keys = {point_key(args.scenario, p) for p in pts}
        kept = len(keys & set(Journal(out / JOURNAL).load()))
        lead = "\n" if sys.stderr.isatty() else ""  # after the progress bar's line
        sys.stderr.write(
            f"{lead}rocelab sweep: interrupted ({signal.Signals(exc.signum).name}): "
            f"{kept} of {len(keys)} points kept in {out / JOURNAL}; "
            f"run again with --resume to compute the rest\n"
        )
        return 128 + exc.signum
    except (SweepError, ValueError, OSError) as exc:
        sys.stderr.write(f"rocelab sweep: {exc}\n")
        return 2
    for f in files:
        print(f)
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("sweep", help="run a fabric scenario over a parameter grid on Dask")
    s.add_argument(
        "scenario",
        nargs="?",
        type=cliargs.text("scenario", 64),
        help=f"fabric scenario: {', '.join(SCENARIO_NAMES)}",
    )
    s.add_argument(
        "--grid",
        metavar="FILE",
        type=cliargs.input_file(1 << 20, what="--grid"),
        help="a sweep grid file (`rocelab schema sweep`); --set adds or replaces keys",
    )
    s.add_argument(
        "--set",
        action="append",
        type=cliargs.text("--set", 4096),
        metavar="KEY=V1,V2",
        help="values of a parameter",
    )
    s.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        type=cliargs.address(1, 65535, "--scheduler", schemes=("tcp", "tls")),
        help="an existing Dask scheduler",
    )
    s.add_argument(
        "--workers",
        type=cliargs.int_range(1, 256, "--workers"),
        default=2,
        help="local cluster workers (default 2)",
    )
    s.add_argument("--serial", action="store_true", help="no Dask: run the points here")
    s.add_argument(
        "--out",
        default="out/sweep",
        type=cliargs.output_dir("--out"),
        help="directory for sweep.csv, sweep.parquet, plots and the journal",
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="keep the points in --out's journal (an interrupted sweep), compute the rest",
    )
    s.add_argument("--metric", type=cliargs.text("--metric", 128), help="plot this metric ...")
    s.add_argument(
        "--x",
        type=cliargs.text("--x", 128),
        help="... against this parameter (default: the first --set)",
    )
