"""The compiled backend for a lowered program: a typed variant of the generated Python
(`CompiledProgram.python`, the reference) compiled by Cython inside one factory function.

The interpreted path runs the generated module in a fresh namespace per switch (its tables,
externs and `_RT` are globals there). An extension module is loaded once per process, so
the compiled path wraps its text in `def _p4sim_bind(_ns)`: every name the runtime
injects becomes a local read from `_ns`, the generated definitions become closures over
them, and the factory returns the definitions; each switch calls it once and gets its own
classes and functions, like its own namespace.

The typed emission: the program is lowered a second time with every parser a state dispatch
(`Compiler(parser_inline_limit=0)`: no state copied, so no function is huge and every one
is compiled), its run-time names checked equal to the reference's, and rewritten by
`typed.typed_module` (cclass headers/structs with C integer fields, typed parameters and
locals, C arithmetic only where it is provably exact). The classes go at module level (a
cdef class cannot be defined in a function), the functions in the factory.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import textwrap
import threading
import tokenize
from collections import OrderedDict

from p4sim.lower import CompiledProgram

from . import slots
from .build import CompileUnavailable, build_module
from .views import HELPERS, bind_views

BIND = "_p4sim_bind"
_SOURCE_LOCK = threading.Lock()


def _defined(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    raise CompileUnavailable(f"generated code has a top-level {type(node).__name__}: not wrapped")


def _multiline_strings(src: str) -> bool:
    # indenting the text would change a string literal that spans lines
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.STRING and tok.start[0] != tok.end[0]:
            return True
    return False


def typed_python(program: CompiledProgram) -> tuple[str, dict]:
    """The program lowered again for the typed emission (every parser a state dispatch:
    no state copied, no huge function), with its header/struct types; cached on `program`.
    Its run-time names (tables, externs, entry points) must be the reference's."""
    got = program.__dict__.get("_p4sim_typed")
    if got is None:
        from p4sim.check import check
        from p4sim.lower.codegen import Compiler

        c = Compiler(check(program.program), program.model.source, parser_inline_limit=0)
        py = c.compile()
        same = ([t.py for t in c.tables] == [t.py for t in program.tables]
                and [e.py for e in c.externs] == [e.py for e in program.externs]
                and c.pipeline == program.pipeline and c.value_sets == program.value_sets)
        if not same:
            raise CompileUnavailable("the typed emission's run-time names differ from the reference's")
        got = program.__dict__["_p4sim_typed"] = (py, c.struct_types)
    return got


def typed_source(program: CompiledProgram, injected: list[str]) -> str:
    """The extension's source: cclasses at module level (a cdef class cannot live in a
    function), the functions in the `_p4sim_bind` factory."""
    from .typed import typed_module

    py, struct_types = typed_python(program)
    if _multiline_strings(py):
        raise CompileUnavailable("generated code has a multi-line string literal: not wrapped")
    head, funcs = typed_module(py, program, struct_types)
    names: list[str] = []
    for node in ast.parse(head).body + ast.parse(funcs).body:
        names.extend(_defined(node))
    # tables and counter/register arrays read through views bound once (p4sim.compiled.views)
    funcs, prelude = bind_views(funcs, program)
    head += HELPERS
    # the switch's and the entries' attributes read at their offsets (p4sim.compiled.slots)
    funcs = slots.rewrite_recs(slots.rewrite_switch(funcs, "_RT"))
    prelude += slots.prelude(tm="_p4sim_TMT" in funcs)
    head += slots.HELPERS
    out = ["# cython: infer_types=False", "import cython", head, f"def {BIND}(_ns):"]
    out += [f"    {k} = _ns[{k!r}]" for k in injected]
    out += [f"    {line}" for line in prelude]
    out.append(textwrap.indent(funcs, "    "))
    out.append("    return {" + ", ".join(f"{n!r}: {n}" for n in dict.fromkeys(names)) + "}")
    return "\n".join(out) + "\n"


# Made sources by (reference Python, injected names): every Switch of one program binds the
# same source, and making it (ast parse/unparse of the typed module) costs ~0.3 s a switch,
# which a fabric or an experiment building dozens of switches paid each time. Bounded.
_SOURCES: OrderedDict[tuple[str, tuple[str, ...]], str] = OrderedDict()
_SOURCES_MAX = 32


def _cached_source(program: CompiledProgram, injected: list[str]) -> str:
    key = (hashlib.sha256(program.python.encode()).hexdigest(), tuple(injected))
    # one source made at a time: CPython 3.11's ast.parse, run in two threads at once (a
    # sweep's threaded workers building switches), fails with "AST constructor recursion
    # depth mismatch" (tests/fabric/test_sweep.py met it)
    with _SOURCE_LOCK:
        source = _SOURCES.get(key)
        if source is None:
            source = _SOURCES[key] = typed_source(program, injected)
            if len(_SOURCES) > _SOURCES_MAX:
                _SOURCES.popitem(last=False)
        else:
            _SOURCES.move_to_end(key)
    return source


def bind(program: CompiledProgram, ns: dict, wait: bool = True) -> None:
    """Fill `ns` (already holding the runtime's objects) with the compiled definitions;
    `wait=False`: a module not built yet is built in the background (CompileUnavailable now)."""
    injected = sorted(k for k in ns if not k.startswith("__"))
    base = os.path.splitext(os.path.basename(program.model.source))[0]
    stem = "p4_" + "".join(c if c.isalnum() else "_" for c in base)[:40]
    source = _cached_source(program, injected)
    mod = build_module(source, stem, wait=wait)
    ns.update(getattr(mod, BIND)(ns))
