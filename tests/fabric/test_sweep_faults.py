"""`rocelab sweep` under faults (issue 36): a worker process killed inside a point, the sweep
interrupted (SIGINT to its process group as a terminal's Ctrl-C, SIGTERM to its process)
and resumed, and the process killed in the middle of writing its CSV/Parquet. Real Dask
LocalClusters with worker processes, real signals; every wait is on an event (a Dask Event,
a journal line), never a sleep."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cloudpickle
import pytest

from controller.fabric import sweep
from controller.fabric.sweep_store import JOURNAL, Journal, point_key

if TYPE_CHECKING:
    from distributed import Client

ROOT = Path(__file__).resolve().parents[2]
PTS = sweep.points("storm", {"seed": [0, 1, 2, 3], "duration_us": [100]})  # ~0.1 s a point


@pytest.fixture(scope="module", autouse=True)
def reference_profile() -> Iterator[None]:
    """Every process here (Dask workers, `rocelab sweep` and its workers) runs p4sim's
    reference profile: what is under test is the sweep's fault handling, not the backend,
    and the fast profile's first switch in a process costs ~2 s CPU (p4sim.compiled.program
    typed_source, made once per process) against ~0.5 s: with a dozen processes started
    here, most of this file's CPU time."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("P4SIM_PROFILE", "reference")
        yield


@pytest.fixture(scope="module")
def cluster(reference_profile: None) -> Iterator[Client]:
    """One real LocalCluster (two worker processes, each under a nanny that restarts it when
    killed) for the kill tests: starting one and warming its workers is most of a test's
    time. Each test sets the scheduler's allowed-failures itself."""
    cloudpickle.register_pickle_by_value(
        sys.modules[__name__]
    )  # the workers need not import tests/
    with sweep.dask_client(workers=2) as client:
        yield client


def _gated(tag: str, scenario: str, params: dict) -> dict:
    """A point (seed > 0) that says which worker process runs it, then waits for the test's
    Event: the test kills that process while it is inside the point."""
    from distributed import Event, Queue

    if params["seed"] != 0:
        Queue(f"started-{tag}").put(os.getpid())
        Event(f"go-{tag}").wait(120)
    return sweep.run_point(scenario, params)


def _allow_failures(n: int, dask_scheduler: Any = None) -> None:
    dask_scheduler.allowed_failures = n  # what distributed.scheduler.allowed-failures sets


def _sweep_killing_a_worker(
    client: Client, out: Path, allowed_failures: int, tag: str
) -> tuple[list[dict], int, int]:
    from distributed import Event, Queue

    client.run_on_scheduler(_allow_failures, allowed_failures)
    client.wait_for_workers(2, timeout=120)  # a worker killed by the test before is back
    started, go = Queue(f"started-{tag}", client=client), Event(f"go-{tag}", client=client)
    pids = set(client.run(os.getpid).values())
    killed: list[int] = []

    def compute(todo: list[dict]):
        points = sweep.iter_dask(client, "storm", todo, fn=functools.partial(_gated, tag))
        first = next(points)  # seed 0: the gated ones wait until it is done
        victim = started.get(timeout=120)  # a worker inside a gated point
        assert victim in pids
        os.kill(victim, signal.SIGKILL)
        killed.append(victim)
        go.set()
        yield first
        yield from points

    rows, computed = sweep.run_sweep("storm", PTS, out, compute)
    assert killed and killed[0] not in set(client.run(os.getpid).values())
    return rows, computed, killed[0]


@pytest.mark.slow
def test_a_worker_killed_inside_a_point_every_point_once(tmp_path, cluster):
    rows, computed, _ = _sweep_killing_a_worker(cluster, tmp_path, 3, "retry")
    assert computed == 4 and [r["seed"] for r in rows] == [0, 1, 2, 3]
    assert rows == sweep.run_serial("storm", PTS)  # the retried point's row is the real one
    lines = (tmp_path / JOURNAL).read_text().splitlines()
    assert sorted(json.loads(ln)["row"]["seed"] for ln in lines) == [0, 1, 2, 3]


@pytest.mark.slow
def test_negative_control_no_retries_loses_the_killed_point(tmp_path, cluster):
    """With allowed-failures 0 the killed worker's point is not run again: the kill above
    really lands inside a point, and the retry is what saves it."""
    from distributed.scheduler import KilledWorker

    with pytest.raises(KilledWorker):
        _sweep_killing_a_worker(cluster, tmp_path, 0, "no-retry")
    assert len((tmp_path / JOURNAL).read_text().splitlines()) == 1  # seed 0 kept


def test_a_point_delivered_twice_is_kept_once(tmp_path):
    rows = {p["seed"]: {**p, "m": p["seed"]} for p in PTS}

    def twice(todo):
        for i, p in enumerate(todo):
            yield i, rows[p["seed"]]
            yield i, rows[p["seed"]]

    out, computed = sweep.run_sweep("storm", PTS, tmp_path, twice)
    assert computed == 4 and [r["seed"] for r in out] == [0, 1, 2, 3]
    assert len((tmp_path / JOURNAL).read_text().splitlines()) == 4


def test_torn_journal_line_is_dropped_and_cut_before_the_next(tmp_path):
    j = Journal(tmp_path / JOURNAL)
    j.append("a", {"x": 1})
    j.close()
    with (tmp_path / JOURNAL).open("ab") as f:
        f.write(b'{"key": "b", "row": {"x"')  # killed mid-append
    assert Journal(tmp_path / JOURNAL).load() == {"a": {"x": 1}}
    j = Journal(tmp_path / JOURNAL)
    j.append("c", {"x": 3})
    j.close()
    assert Journal(tmp_path / JOURNAL).load() == {"a": {"x": 1}, "c": {"x": 3}}


def _rocelab_sweep(out: Path, *extra: str) -> subprocess.Popen:
    seeds = ",".join(str(s) for s in range(8))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "sweep",
            "storm",
            "--set",
            f"seed={seeds}",
            "--set",
            "duration_us=100",
            "--out",
            str(out),
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # its own process group: a Ctrl-C reaches it and its workers only


def _journal_lines(out: Path) -> int:
    try:
        return (out / JOURNAL).read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@contextlib.contextmanager
def _port_taken(port: int) -> Iterator[None]:
    """`port` held on 127.0.0.1 for the block (if something else holds it, it is taken too)."""
    with socket.socket() as s:
        with contextlib.suppress(OSError):
            s.bind(("127.0.0.1", port))
            s.listen()
        yield


def _interrupt_after_two_points(p: subprocess.Popen, out: Path, how: str) -> None:
    deadline = time.monotonic() + 120
    while _journal_lines(out) < 2:  # two points durably written
        assert p.poll() is None and time.monotonic() < deadline, p.poll()
        time.sleep(0.01)
    if how == "ctrl-c":
        os.killpg(p.pid, signal.SIGINT)  # what a terminal does: the whole foreground group
    else:
        os.kill(p.pid, signal.SIGTERM)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_interrupted_sweep_keeps_its_points_and_resume_computes_only_the_rest(tmp_path, how):
    out = tmp_path / "sw"
    # Ctrl-C on a Dask sweep (the workers get it too); SIGTERM on a serial one (cheaper).
    # Dask's default HTTP port taken, as by another cluster on the machine: still one line
    with _port_taken(8787):
        p = _rocelab_sweep(out, *(["--workers", "1"] if how == "ctrl-c" else ["--serial"]))
        _interrupt_after_two_points(p, out, how)
    _, err = p.communicate(timeout=120)
    sig = signal.SIGINT if how == "ctrl-c" else signal.SIGTERM
    assert p.returncode == 128 + sig, err
    assert err.count("\n") == 1 and "Traceback" not in err and f"interrupted ({sig.name})" in err
    kept = Journal(out / JOURNAL).load()
    assert len(kept) >= 2 and f"{len(kept)} of 8 points kept" in err
    assert not (out / "sweep.csv").exists()
    r = subprocess.run(
        [*p.args, "--serial", "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert f"{len(kept)} of 8 points from the journal, {8 - len(kept)} computed" in r.stderr
    # each point computed once over both runs: a resume that recomputed would add lines
    lines = (out / JOURNAL).read_text().splitlines()
    assert len(lines) == 8
    assert sorted(json.loads(ln)["key"] for ln in lines) == sorted(
        point_key("storm", p)
        for p in sweep.points("storm", {"seed": list(range(8)), "duration_us": [100]})
    )
    csv_seeds = [ln.split(",")[3] for ln in (out / "sweep.csv").read_text().splitlines()[1:]]
    assert csv_seeds == [str(s) for s in range(8)]


# A child writes a large table over a complete earlier file; RLIMIT_FSIZE makes the kernel
# kill it (SIGXFSZ, default action: terminate, like kill -9 no cleanup runs) at a fixed byte in
# the middle of the write.
_CHILD = """
import signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it (EFBIG): here it kills
from pathlib import Path
from controller.fabric import sweep_store
rows = [{"seed": i, "name": f"point-{i}-" + "x" * 40, "v": i / 7} for i in range(20000)]
path = Path(sys.argv[2])
if sys.argv[1] == "csv":
    sweep_store.write_csv(rows, path)
elif sys.argv[1] == "parquet":
    sweep_store.write_parquet(rows, path)
elif sys.argv[1] == "planted-csv":  # not atomic: straight into the file
    import csv
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
elif sys.argv[1] == "planted-parquet":
    import pyarrow as pa, pyarrow.parquet as pq
    pq.write_table(pa.table({k: [r[k] for r in rows] for k in rows[0]}), path)
"""


def _killed_mid_write(kind: str, path: Path, limit: int) -> int:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    r = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(path)],
        cwd=ROOT,
        preexec_fn=cap,
        capture_output=True,
        timeout=120,
    )
    return r.returncode


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_kill_mid_write_leaves_the_earlier_file_whole(tmp_path, kind):
    from controller.fabric.sweep_store import write_csv, write_parquet

    earlier = [{"seed": 1, "name": "earlier", "v": 0.5}]
    path = tmp_path / f"sweep.{kind}"
    (write_csv if kind == "csv" else write_parquet)(earlier, path)
    before = path.read_bytes()
    limit = 64 * 1024  # the full table is ~1.2 MB as CSV, ~250 KB as Parquet
    # killed by a signal (SIGXFSZ at the limit; under load a writer thread may die by SIGABRT
    # first): what matters is that no cleanup ran and the earlier file is whole
    assert _killed_mid_write(kind, path, limit) < 0
    assert path.read_bytes() == before
    # negative control: a writer straight into the file leaves half of one
    assert _killed_mid_write(f"planted-{kind}", path, limit) < 0
    assert 0 < path.stat().st_size <= limit and path.read_bytes() != before
