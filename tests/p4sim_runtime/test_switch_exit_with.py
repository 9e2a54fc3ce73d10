"""A p4sim-switch started during a pytest run stops when the run ends, even when the run is
killed (SIGKILL: no fixture teardown runs). Switches run in their own session, so the run's
signals never reach them; the rocelab pytest plugin puts the run's pid in P4SIM_EXIT_WITH
and the switch watches it (p4sim.server_cli.ParentWatch). The negative control runs the
same inner pytest without the plugin: its switch outlives the killed run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4sim.server_cli import ParentWatch, exit_with_me, parent_watch

ROOT = Path(__file__).resolve().parents[2]

INNER = """
import time
from pathlib import Path

from tests.p4sim_runtime.p4rt_helpers import LiveSwitch


def test_holds_a_switch(tmp_path):
    sw = LiveSwitch(tmp_path)  # the real fixture helper: p4sim-switch --no-p4, its own session
    Path({pid_file!r}).write_text(str(sw.proc.proc.pid))
    time.sleep(120)  # killed long before
"""


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody has reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_a_run_holding_a_switch(tmp_path: Path, plugin: bool) -> tuple[int, float]:
    """Start an inner pytest whose test holds a LiveSwitch, SIGKILL the inner pytest once
    the switch serves; (the switch's pid, seconds it outlived the run, capped at 6)."""
    pid_file = tmp_path / "switch.pid"
    test = tmp_path / "test_inner.py"
    test.write_text(INNER.format(pid_file=str(pid_file)))
    env = {k: v for k, v in os.environ.items() if k != "P4SIM_EXIT_WITH"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(test),
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "--rootdir",
        str(tmp_path),
        "--basetemp",
        str(tmp_path / "inner"),
    ]
    if not plugin:
        argv += ["-p", "no:rocelab"]
    run = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    switch = 0
    try:
        deadline = time.monotonic() + 90
        while not pid_file.exists() or not pid_file.read_text():
            assert run.poll() is None, f"the inner pytest ended early (status {run.returncode})"
            assert time.monotonic() < deadline, "the inner test never started its switch"
            time.sleep(0.1)
        switch = int(pid_file.read_text())
        assert _alive(switch)
        run.kill()
        run.wait(10)
        t0 = time.monotonic()
        while _alive(switch) and time.monotonic() - t0 < 6:
            time.sleep(0.05)
        return switch, time.monotonic() - t0
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)
        if switch and _alive(switch):
            os.kill(switch, signal.SIGKILL)


@pytest.mark.slow
def test_a_killed_pytest_run_leaves_no_switch_behind(tmp_path):
    switch, outlived = _kill_a_run_holding_a_switch(tmp_path, plugin=True)
    assert outlived < 3, (
        f"switch {switch} still ran {outlived:.1f} s after its pytest run was killed"
    )
    log = next(tmp_path.glob("**/p4sim-switch-*.log")).read_text()
    assert "(P4SIM_EXIT_WITH) ended: stopping" in log and "p4sim-switch: stopped" in log, log


@pytest.mark.slow
def test_negative_control_without_the_plugin_the_switch_outlives_the_run(tmp_path):
    switch, outlived = _kill_a_run_holding_a_switch(tmp_path, plugin=False)
    assert outlived >= 6, (
        f"switch {switch} stopped {outlived:.1f} s after the kill without being told to"
    )


def test_the_watch_names_the_process_that_ended():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        watch, fallback = (
            ParentWatch([os.getpid(), child.pid]),
            ParentWatch([os.getpid(), child.pid]),
        )
        fallback.close()  # no pidfd (an old kernel): kill(pid, 0)
        assert child.pid in watch.fds and not fallback.fds
        assert watch.gone() is None and fallback.gone() is None
        child.kill()
        child.wait()
        assert watch.gone() == child.pid and fallback.gone() == child.pid
        watch.close()
    finally:
        child.kill()
        child.wait()


def test_the_environment_variable():
    assert parent_watch({}) is None and parent_watch({"P4SIM_EXIT_WITH": " "}) is None
    assert parent_watch({"P4SIM_EXIT_WITH": "12, 34"}).pids == [12, 34]  # type: ignore[union-attr]
    for bad in ("abc", "-5", "0", "1;2", ",".join(["7"] * 9)):
        with pytest.raises(ValueError, match="P4SIM_EXIT_WITH"):
            parent_watch({"P4SIM_EXIT_WITH": bad})
    me = str(os.getpid())
    assert exit_with_me({}) == me
    assert exit_with_me({"P4SIM_EXIT_WITH": "5"}) == f"5,{me}"
    assert exit_with_me({"P4SIM_EXIT_WITH": me}) == me  # not twice
    many = exit_with_me({"P4SIM_EXIT_WITH": ",".join(str(p) for p in range(100, 108))})
    assert many.split(",") == [*map(str, range(101, 108)), me]  # bounded: the oldest goes
    assert me in os.environ["P4SIM_EXIT_WITH"].split(
        ","
    )  # the plugin's pytest_configure, this process


def test_the_cli_refuses_a_bad_value_and_a_process_already_gone():
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    cli = [sys.executable, "-m", "p4sim.server_cli", "--no-p4", "--grpc-server-addr", "127.0.0.1:0"]
    r = subprocess.run(
        cli, env={**os.environ, "P4SIM_EXIT_WITH": "x"}, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and "P4SIM_EXIT_WITH='x'" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(
        cli,
        env={**os.environ, "P4SIM_EXIT_WITH": str(done.pid)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        r.returncode == 1 and f"process {done.pid} (P4SIM_EXIT_WITH) has already ended" in r.stderr
    )
