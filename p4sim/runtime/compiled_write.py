"""The compiled write path: which `Rec` and bulk loops this process uses.

`P4SIM_WRITE=python|compiled`, read once, when p4sim.runtime.tables is first imported
(before any table exists, so every Rec of the process is of one class). Unset: compiled
with the native front end (`P4SIM_FRONTEND=native`, or a tool's own flag told here by
`choose_frontend` before that import, as `p4sim-switch --frontend native` does: the
configuration the table-write figures are measured on), python otherwise. The pure-Python code is the reference and the
fallback: when the module cannot be built (no Cython, no C compiler), one line says why and
the process runs Python.

The extension is built from _write.pyx by p4sim.compiled.build, as the compiled backend's
modules are: into p4sim's compiled-module cache, keyed by a hash of (its source, Cython's
version, the Python ABI, the flags), so an edited source never runs stale compiled code;
built in a temporary directory and renamed into place (two processes building at once never
load a half-written file).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

from p4sim.compiled import SettingError
from p4sim.compiled.build import CompileUnavailable, build_module

SOURCE = Path(__file__).with_name("_write.pyx")
CHOICES = ("python", "compiled")
TABLES = "p4sim.runtime.tables"
_frontend: str | None = None  # the front end a tool's flag chose (choose_frontend), else the environment's


def choose_frontend(frontend: str) -> None:
    """Tell the write path which front end this process serves, for a tool whose flag
    chooses it (`p4sim-switch --frontend`): it then selects as P4SIM_FRONTEND would. Only
    before p4sim.runtime.tables is imported (the Rec class is fixed there): a later call
    that would change the selection is a RuntimeError, never a second Rec class."""
    global _frontend
    before = _frontend
    _frontend = frontend
    tables = sys.modules.get(TABLES)
    if tables is not None and (tables.COMPILED is not None) != (selected() == "compiled"):
        _frontend = before
        raise RuntimeError(f"choose_frontend({frontend!r}): {TABLES} is already imported with another write path")


def selected() -> str:
    """The write path this environment (and `choose_frontend`) asks for."""
    w = os.environ.get("P4SIM_WRITE", "").strip().lower()
    if not w:
        frontend = _frontend if _frontend is not None else os.environ.get("P4SIM_FRONTEND", "")
        return "compiled" if frontend.strip().lower() == "native" else "python"
    if w not in CHOICES:
        raise SettingError(f"P4SIM_WRITE={w!r}: expected one of {', '.join(CHOICES)}")
    return w


def build(source: str, stem: str = "p4sim_write") -> ModuleType:
    """The extension compiled from the Cython text `source` (built once per key, then
    loaded from the cache: p4sim.compiled.build, as the compiled backend's modules)."""
    return build_module(source, stem, kind=".pyx")


def load() -> ModuleType | None:
    """The compiled write module when this environment selects it and it can be built,
    else None (the pure-Python reference). Run when p4sim.runtime.tables is first imported,
    whichever tool imports it: a bad P4SIM_WRITE ends the process there, in one line (exit 2)."""
    try:
        choice = selected()
    except SettingError as e:
        print(f"p4sim: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if choice != "compiled":
        return None
    try:
        return build(SOURCE.read_text(encoding="utf-8"))
    except CompileUnavailable as e:
        print(f"p4sim: compiled write path unavailable, running Python: {e}", file=sys.stderr)
        return None
