"""The compiled (Cython) backend, behind the check/lower boundary.

The pure-Python path stays the reference: the compiled backend builds, from the same checked
program, a typed variant of the generated source (`typed.py`: Cython cclass headers and
structs with C integer fields, C arithmetic only where a bound analysis proves it exact) as
an extension module (`program.py`), and the differential tests (tests/p4sim/test_compiled.py
on the corpus, tests/p4sim/test_typed.py on arithmetic edge cases) run programs both ways.

Selection: the profile (p4sim.profile: fast runs this backend, reference the Python code),
read when a switch is built (`p4sim.runtime.instance.instantiate`). When the compiled backend
cannot be used (no Cython, no C compiler, a failed build), the switch runs the Python code
and one line says why.
"""

from __future__ import annotations

from p4sim import profile

from .build import CompileUnavailable

BACKENDS = ("python", "compiled")


def selected() -> str:
    """The backend the profile asks for: compiled (fast) or python (reference)."""
    return "compiled" if profile.fast() else "python"


def bind_or_fallback(program, ns: dict, wait: bool = True) -> str:
    """Bind the compiled code into `ns`; on failure say why once and return "python"
    (the caller then runs the interpreted code). `wait=False`: a first build runs in the
    background and this switch runs Python (program.bind)."""
    from .program import bind

    try:
        bind(program, ns, wait)
        return "compiled"
    except CompileUnavailable as e:
        profile.fall_back("compiled backend", str(e))
        return "python"


__all__ = ["BACKENDS", "CompileUnavailable", "selected", "bind_or_fallback"]
