"""Typed views of the runtime objects the compiled pipeline reads per packet, bound once per
switch in the `_p4sim_bind` factory (p4sim.compiled.program).

From C, `obj.attr` on a Python object is a generic `PyObject_GetAttr` (~90 instructions;
3.11's specialised LOAD_ATTR does it in far fewer), and the generated code reads a table's
`recs`/`default`/lookup callables and a counter's or register's `size`/`pkts`/`bytes`/`cells`
on every apply and every count. The typed emission reads them instead:
- counter and register arrays: `size` as a C integer, `pkts`/`bytes`/`cells` as typed lists,
  read once when the switch is built. Those attributes are never rebound (the lists are
  changed in place): `CounterArray`/`RegisterArray` refuse a rebinding (p4sim/externs), so a
  bound list cannot go stale.
- tables: `recs`/`default`/`exact_get`/`exact1_get`/`lookup` are slots of Table, read at
  their offsets (p4sim.compiled.slots: one load instead of a dict probe, and it follows every
  rebinding, `set_default` included, because assigning the attribute writes that same slot). `lookup1` is read through the table's own instance
  `__dict__` (a typed dict bound once): it lives there only while `_bind_lookup1` binds it;
  otherwise the class's method is called. `check_table` refuses a table for which the two
  reads of `lookup1` could differ (a data descriptor on its class).
"""

from __future__ import annotations

import re

from p4sim.lower import CompiledProgram

# the table attributes read at their slots' offsets (each set by Table.__init__)
TABLE_SLOTS = ("recs", "default", "exact_get", "exact1_get", "lookup")
TABLE_LOOKUP1 = "lookup1"  # in the instance dict or the class's method
ARRAY_ATTRS = {"counter": ("size", "pkts", "bytes"), "register": ("size", "cells")}

HELPERS = """
@cython.cfunc
def _p4sim_lookup1(d: dict, f: object, t: object, v: object) -> object:
    # Table.lookup1 as getattr finds it: the instance's own binding, else the class's method
    g = d.get("lookup1")
    if g is None:
        return f(t, v)
    return g(v)
"""


def check_table(t: object) -> dict:
    """`t.__dict__`, after checking that reading `lookup1` there (else the class's method)
    gives what getattr gives."""
    cls = type(t)
    if hasattr(getattr(cls, TABLE_LOOKUP1, None), "__set__"):
        raise TypeError(
            f"table {cls.__name__}: {TABLE_LOOKUP1} is a data descriptor: not read through __dict__"
        )
    if not callable(getattr(cls, TABLE_LOOKUP1, None)):
        raise TypeError(f"table {cls.__name__}: no lookup1 method to fall back on")
    return t.__dict__


def _sub(pattern: str, repl, text: str) -> tuple[str, int]:
    return re.subn(pattern, repl, text)


def bind_views(funcs: str, program: CompiledProgram) -> tuple[str, list[str]]:
    """`funcs` with the reads above rewritten to bound views, and the factory lines that
    bind them (after the injected names)."""
    prelude: list[str] = []
    for ex in program.externs:
        attrs = ARRAY_ATTRS.get(ex.kind)
        if not attrs:
            continue
        used = []
        for a in attrs:
            pat = rf"(?<![\w.]){re.escape(ex.py)}\.{a}(?!\w)"
            if re.search(pat + r"\s*=(?!=)", funcs):
                raise ValueError(f"generated code rebinds {ex.py}.{a}")
            funcs, n = _sub(pat, f"{ex.py}__{a}", funcs)
            if n:
                used.append(a)
        for a in used:
            typ = "cython.longlong" if a == "size" else "list"
            prelude.append(f"{ex.py}__{a} = cython.declare({typ}, {ex.py}.{a})")
    check = False
    for spec in program.tables:
        t = re.escape(spec.py)
        names = "|".join(TABLE_SLOTS)
        pat = rf"(?<![\w.]){t}\.({names})(?!\w)"
        if re.search(pat + r"\s*=(?!=)", funcs):
            raise ValueError(f"generated code rebinds an attribute of {spec.py}")
        funcs, n = _sub(
            pat,
            lambda m, py=spec.py: (
                f"_p4sim_sget({py}, {py}__t, {py}__o_{m.group(1)}, {m.group(1)!r})"
            ),
            funcs,
        )
        funcs, n1 = _sub(
            rf"(?<![\w.]){t}\.{TABLE_LOOKUP1}\(",
            f"_p4sim_lookup1({spec.py}__d, {spec.py}__l1, {spec.py}, ",
            funcs,
        )
        if n:
            prelude.append(f"{spec.py}__t = cython.declare(type, type({spec.py}))")
            prelude.append(f"{spec.py}__os = _p4sim_slot_offsets({spec.py}, {TABLE_SLOTS!r})")
            prelude += [
                f"{spec.py}__o_{a} = cython.declare(cython.Py_ssize_t, {spec.py}__os[{a!r}])"
                for a in TABLE_SLOTS
            ]
        if n1:
            check = True
            prelude.append(f"{spec.py}__d = cython.declare(dict, _p4sim_check_table({spec.py}))")
            prelude.append(f"{spec.py}__l1 = type({spec.py}).{TABLE_LOOKUP1}")
    if check:
        prelude.insert(0, "from p4sim.compiled.views import check_table as _p4sim_check_table")
    prelude.insert(0, "from p4sim.compiled.slots import slot_offsets as _p4sim_slot_offsets")
    return funcs, prelude
