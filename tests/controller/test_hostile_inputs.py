"""Hostile input files (issue 36): whatever a user names, rocelab answers in one line with
exit 2 (the file cannot be read as an input) or with findings (`rocelab check`: exit 1),
never a traceback, a hang or unbounded memory.

Most cases run in-process through `controller.cli.main`; the ones whose point is the
process (a FIFO that must not block, an alias bomb under a memory limit, an unreadable file
for a user who is not root) run as subprocesses."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import main
from controller.inputs import MAX_BYTES

EXAMPLES = Path(__file__).resolve().parents[2] / "controller" / "examples"
LAB = (EXAMPLES / "lab.yaml").read_text()
BILLION_LAUGHS = (
    "ports: {1: {speed: 10G}}\nroutes:\n  - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(
        f"  - &{b} [{', '.join([f'*{a}'] * 9)}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


def _file_cases(tmp: Path) -> dict[str, str]:
    """Paths that are not a readable rocelab input file, by what is wrong."""
    (tmp / "dir").mkdir()
    os.mkfifo(tmp / "fifo")
    (tmp / "big.yaml").write_text("# " + "x" * MAX_BYTES + "\n")
    (tmp / "binary.yaml").write_bytes(bytes(range(256)) * 8)
    return {
        "missing": str(tmp / "missing.yaml"),
        "directory": str(tmp / "dir"),
        "fifo": str(tmp / "fifo"),
        "too big": str(tmp / "big.yaml"),
        "binary garbage": str(tmp / "binary.yaml"),
        "device": "/dev/zero",
        "a regular file whose read fails": "/proc/self/mem",
    }


COMMANDS = {  # each command that reads a user's YAML file, with the file's place in argv
    "check": lambda f: ["check", f],
    "apply": lambda f: ["apply", f],
    "counters --config": lambda f: ["counters", "--config", f],
    "run": lambda f: ["run", f, "--no-progress"],
}


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_unreadable_paths_are_one_line_exit_2(tmp_path, capsys, cmd):
    for what, path in _file_cases(tmp_path).items():
        assert main(COMMANDS[cmd](path)) == 2, (cmd, what)
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and err.startswith("rocelab: "), (cmd, what, err)
        assert "Traceback" not in out + err and out == "", (cmd, what, out)


# `rocelab check` reports a bad value as a finding naming its key (exit 1), the others refuse it
NUMERIC_KEYS = {  # (text in lab.yaml, key path reported)
    "port speed": (
        "speed: 10G, cable_m: 3, mac: 02:00:00:00:01:01",
        "speed: {v}, cable_m: 3, mac: 02:00:00:00:01:01",
        "ports.1.speed",
    ),
    "cable length": (
        "cable_m: 3, mac: 02:00:00:00:01:02",
        "cable_m: {v}, mac: 02:00:00:00:01:02",
        "ports.2.cable_m",
    ),
    "MTU": ("mtu: 1500\n", "mtu: {v}\n", "mtu"),
    "headroom": ("headroom: 8KB", "headroom: {v}", "pfc.headroom"),
    "XOFF": ("xoff: 40 pkts", "xoff: {v}", "pfc.xoff"),
    "ECN Kmin": ("kmin: 5KB", "kmin: {v}", "ecn.profiles.dcqcn.kmin"),
    "ECN Kmax": ("kmax: 200KB", "kmax: {v}", "ecn.profiles.dcqcn.kmax"),
    "ECN pmax": ("pmax: 0.01", "pmax: {v}", "ecn.profiles.dcqcn.pmax"),
}
HOSTILE_NUMBERS = {
    "inf": ".inf",
    "-inf": "-.inf",
    "nan": ".nan",
    "5000 digits": "9" * 5000,
    "5000-digit float": "1" + "0" * 5000 + ".5",
    "5000-digit size": "9" * 5000 + "KB",
    "1e400": "1e400",
}


@pytest.mark.parametrize("key", list(NUMERIC_KEYS))
def test_hostile_numbers_are_findings_at_their_key(tmp_path, capsys, key):
    old, new, path = NUMERIC_KEYS[key]
    assert LAB.count(old) == 1
    for what, value in HOSTILE_NUMBERS.items():
        f = tmp_path / "c.yaml"
        f.write_text(LAB.replace(old, new.format(v=value)))
        assert main(["check", str(f)]) == 1, (key, what)
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err and err == "", (key, what, err)
        errors = [ln for ln in out.splitlines() if ln.startswith("ERROR")]
        # the key named, or (a 5,000-digit integer refused by the loader) its line
        line = LAB[: LAB.index(old)].count("\n") + 1
        assert any(f"ERROR {path}" in e or f"{f}:{line}:" in e for e in errors), (key, what, out)


def test_alias_bomb_and_deep_nesting_are_refused_at_their_line(tmp_path, capsys):
    for text, words in ((BILLION_LAUGHS, "aliases"), ("ports:\n  1: " + "[" * 100_000, "deeper")):
        f = tmp_path / "c.yaml"
        f.write_text(text)
        assert main(["check", str(f)]) == 1
        out = capsys.readouterr().out
        assert f"ERROR {f}:" in out and words in out, out
        assert main(["run", str(f)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err


def _limited() -> None:
    """A child with 1 GiB of address space: an alias bomb that expands dies here, not the box."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _rocelab(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
        **kw,
    )


def test_fifo_and_alias_bomb_as_processes(tmp_path):
    """The real process: a FIFO with no writer must not block the open (a hang would hit the
    60 s timeout), and the alias bomb is answered under a 1 GiB address-space limit."""
    os.mkfifo(tmp_path / "fifo")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BILLION_LAUGHS)
    r = _rocelab(["check", str(tmp_path / "fifo")], preexec_fn=_limited)
    assert (
        r.returncode == 2
        and r.stderr == f"rocelab: argument config: {tmp_path / 'fifo'}: not a regular file\n"
    ), r
    r = _rocelab(["check", str(bomb)], preexec_fn=_limited)
    assert r.returncode == 1 and "aliases" in r.stdout and r.stderr == "", r


def test_unreadable_file_is_one_line(tmp_path, capsys):
    """Permission denied. chmod does not stop root; a write-only sysctl does (procfs checks
    its mode for root too)."""
    f = tmp_path / "secret.yaml"
    f.write_text(LAB)
    f.chmod(0)
    path = "/proc/sys/vm/drop_caches" if os.geteuid() == 0 else str(f)
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert err == f"rocelab: argument config: {path}: cannot read (permission denied)\n", err
