"""What the compiled-backend tests share: the skip mark when no extension can be built, one
module cache per test session (xdist worker), and a program's outputs on one backend."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from p4sim.compiled import build
from p4sim.compiled import program as program_mod
from p4sim.lower import load_program
from p4sim.runtime.switch import Switch

PROFILE_OF = {"python": "reference", "compiled": "fast"}  # the profile that runs each backend
_why = build.unavailable_reason()
needs_compiler = pytest.mark.skipif(bool(_why), reason=f"compiled backend unavailable: {_why}")


@pytest.fixture(autouse=True)
def compiled_cache(tmp_path_factory, monkeypatch):
    """One cache per test run, shared by its xdist workers: each program is built once,
    then loaded (the cache's builds are renamed into place, so workers may share it)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # basetemp is <run>/popen-gwN: share <run>
        root = root.parent
    monkeypatch.setenv(
        "P4SIM_CACHE_DIR", os.environ.get("P4SIM_CACHE_DIR") or str(root / "p4sim-compiled")
    )


def quick_build(monkeypatch) -> None:
    """Build at -O0 and make every source anew for the rest of this test: for negative
    controls, whose planted module is built once and thrown away (gcc -O0 takes about a
    fifth of -O2's time on these files). The flags are part of the cache key, so no -O2 build is ever replaced."""
    monkeypatch.setattr(build, "CFLAGS", tuple("-O0" if f == "-O2" else f for f in build.CFLAGS))
    # and the made source is made anew (a planted maker is called, not a cached source)
    monkeypatch.setattr(program_mod, "_SOURCES", type(program_mod._SOURCES)())
    monkeypatch.setattr(program_mod, "_SOURCES_MAX", 0)
    # and not found through the warm-start index (keyed by p4sim's code on disk, which an
    # in-memory plant leaves unchanged)
    monkeypatch.setattr(program_mod, "INDEX", False)


def outputs(
    prog: Path, frames: Iterable[bytes], backend: str, monkeypatch
) -> list[tuple[int, bytes]]:
    """(port, bytes) of everything `prog` sends for `frames` on port 0, on `backend`."""
    monkeypatch.setenv("P4SIM_PROFILE", PROFILE_OF[backend])
    sw = Switch(load_program(str(prog)))
    assert sw._ns["__p4sim_backend__"] == backend
    got = []
    for f in frames:
        sw.send(0, f)
        got += [(o.port, o.data) for o in sw.receive()]
    return got
