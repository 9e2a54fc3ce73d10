"""The compiled write path: which `Rec` and bulk loops this process uses.

The profile (p4sim.profile) decides, once, when p4sim.runtime.tables is first imported
(before any table exists, so every Rec of the process is of one class): fast runs the
compiled module, reference the pure-Python code. The pure-Python code is the reference and
the fallback: when the module cannot be built (no Cython, no C compiler), one line says why
and the process runs Python.

The extension is built from _write.pyx by p4sim.compiled.build, as the compiled backend's
modules are: into p4sim's compiled-module cache, keyed by a hash of (its source, Cython's
version, the Python ABI, the flags), so an edited source never runs stale compiled code;
built in a temporary directory and renamed into place (two processes building at once never
load a half-written file).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from p4sim import profile
from p4sim.compiled.build import CompileUnavailable, build_module

SOURCE = Path(__file__).with_name("_write.pyx")
CHOICES = ("python", "compiled")


def selected() -> str:
    """The write path the profile asks for."""
    return "compiled" if profile.fast() else "python"


def build(source: str, stem: str = "p4sim_write") -> ModuleType:
    """The extension compiled from the Cython text `source` (built once per key, then
    loaded from the cache: p4sim.compiled.build, as the compiled backend's modules)."""
    return build_module(source, stem, kind=".pyx")


def load() -> ModuleType | None:
    """The compiled write module when the profile selects it and it can be built, else None
    (the pure-Python reference). Run when p4sim.runtime.tables is first imported, whichever
    tool imports it: a bad P4SIM_PROFILE ends the process there, in one line (exit 2)."""
    try:
        choice = selected()
    except profile.SettingError as e:
        print(f"p4sim: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if choice != "compiled":
        return None
    try:
        return build(SOURCE.read_text(encoding="utf-8"))
    except CompileUnavailable as e:
        profile.fall_back("compiled write path", str(e))
        return None
