"""The compiled (Cython) backend, behind the check/lower boundary.

The pure-Python path stays the reference: the compiled backend builds, from the same checked
program, a typed variant of the generated source (`typed.py`: Cython cclass headers and
structs with C integer fields, C arithmetic only where a bound analysis proves it exact) as
an extension module (`program.py`), and the differential tests (tests/p4sim/test_compiled.py
on the corpus, tests/p4sim/test_typed.py on arithmetic edge cases) run programs both ways.

Selection: `P4SIM_BACKEND=python|compiled` (default python), read when a switch is built
(`p4sim.runtime.instance.instantiate`). When the compiled backend cannot be used (no Cython,
no C compiler, a failed build), the switch runs the Python code and one line says why.
"""

from __future__ import annotations

import os
import sys

from .build import CompileUnavailable

BACKENDS = ("python", "compiled")
_warned: set[str] = set()


class SettingError(ValueError):
    """A P4SIM_* environment variable holds a value it does not take (its text is the one
    line the command-line tools print)."""


def selected() -> str:
    b = os.environ.get("P4SIM_BACKEND", "python").strip().lower() or "python"
    if b not in BACKENDS:
        raise SettingError(f"P4SIM_BACKEND={b!r}: expected one of {', '.join(BACKENDS)}")
    return b


def bind_or_fallback(program, ns: dict) -> str:
    """Bind the compiled code into `ns`; on failure say why once and return "python"
    (the caller then runs the interpreted code)."""
    from .program import bind

    try:
        bind(program, ns)
        return "compiled"
    except CompileUnavailable as e:
        msg = str(e)
        if msg not in _warned:
            _warned.add(msg)
            print(f"p4sim: compiled backend unavailable, running Python: {msg}", file=sys.stderr)
        return "python"


__all__ = ["BACKENDS", "CompileUnavailable", "selected", "bind_or_fallback"]
