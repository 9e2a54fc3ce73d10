"""The one setting a p4sim user may change: which configuration runs.

- `fast` (the default): the compiled backend (p4sim.compiled: the program's pipeline built by
  Cython), the compiled write path (runtime/_write.pyx) and, for a P4Runtime server, the
  native (grpc++) front end (p4sim/server/native).
- `reference`: the pure-Python path: the generated Python interpreted, the Python write
  path, grpc-python. It is the semantics the fast pieces are tested against (the
  differentials in tests/p4sim and tests/p4sim_runtime run both).

Chosen by `--profile fast|reference` on `p4sim`, `p4sim-switch` and `rocelab`, else by the
environment variable P4SIM_PROFILE. An environment variable, not a config file: the setting
must reach every process a run starts (p4sim-switch started by rocelab or a test, pytest-xdist
workers, sweep workers) and the environment is inherited with no plumbing; the flags set it
(`choose`) so that their child processes run the same profile.

A fast piece that cannot be built here (no C or C++ compiler, no Python.h or Cython, no
libgrpc++) is said once, in one line, and its reference runs in its place: the same
commands work on a machine without a compiler, slower.
"""

from __future__ import annotations

import os
import sys

PROFILES = ("fast", "reference")
ENV = "P4SIM_PROFILE"
DEFAULT = "fast"

_said: set[str] = set()


class SettingError(ValueError):
    """The profile setting holds a value it does not take (its text is the one line the
    command-line tools print)."""


def choose(name: str) -> None:
    """Select `name` for this process and the processes it starts (a tool's --profile)."""
    if name not in PROFILES:
        raise SettingError(f"--profile {name!r}: expected one of {', '.join(PROFILES)}")
    os.environ[ENV] = name


def selected() -> str:
    """The profile this process runs: the flag's (`choose`), else P4SIM_PROFILE, else fast."""
    p = os.environ.get(ENV, "").strip().lower() or DEFAULT
    if p not in PROFILES:
        raise SettingError(f"{ENV}={p!r}: expected one of {', '.join(PROFILES)}")
    return p


def fast() -> bool:
    return selected() == "fast"


def fall_back(piece: str, reason: str) -> None:
    """A fast piece cannot run here: say so once per process and reason, in one line (no C
    compiler stops the compiled backend and the write path alike: one line, not two)."""
    if reason not in _said:
        _said.add(reason)
        print(
            f"p4sim: {piece} unavailable ({reason}): running the reference (pure Python) in its place",
            file=sys.stderr,
        )


def describe(backend: str, write: str, frontend: str | None = None) -> str:
    """One line naming the profile and the pieces that run, e.g. `profile fast (compiled
    backend, compiled write path, native front end)`."""
    pieces = [f"{backend} backend", f"{write} write path"]
    if frontend is not None:
        pieces.append(f"{'native' if frontend == 'native' else 'grpc-python'} front end")
    return f"profile {selected()} ({', '.join(pieces)})"


def pieces() -> tuple[str, str]:
    """(backend, write path) this process runs, probing what can be built (no build): for
    `--version` lines. A switch's own `__p4sim_backend__` is the truth after a build."""
    if not fast():
        return "python", "python"
    from p4sim.compiled.build import unavailable_reason

    why = unavailable_reason()
    if why:
        return "python", "python"
    tables = sys.modules.get("p4sim.runtime.tables")
    write = "compiled" if tables is None or tables.COMPILED is not None else "python"  # type: ignore[attr-defined]
    return "compiled", write
