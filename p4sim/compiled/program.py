"""The compiled backend for a lowered program: the generated Python (`CompiledProgram.python`,
the reference) compiled by Cython, unchanged, inside one factory function.

The interpreted path runs the generated module in a fresh namespace per switch (its tables,
externs and `_RT` are globals there). An extension module is loaded once per process, so
the compiled path wraps the same text in `def _p4sim_bind(_ns)`: every name the runtime
injects becomes a local read from `_ns`, the generated definitions become closures over
them, and the factory returns the definitions; each switch calls it once and gets its own
classes and functions, like its own namespace.

Functions longer than `INTERPRET_OVER` lines stay interpreted (exec'd in the namespace as
before): gcc's time on one C function grows faster than linearly, and the parser of
roce_switch.p4 alone (4,300 lines of Python, 68,000 of C) takes gcc over 10 minutes at -O2.

The typed emission (default; `P4SIM_COMPILED_TYPED=0` compiles the generated Python unchanged
as above): the program is lowered a second time with every parser a state dispatch
(`Compiler(parser_inline_limit=0)`: no state copied, so no function is huge and every one
is compiled), its run-time names checked equal to the reference's, and rewritten by
`typed.typed_module` (cclass headers/structs with C integer fields, typed parameters and
locals, C arithmetic only where it is provably exact). The classes go at module level (a
cdef class cannot be defined in a function), the functions in the factory.
"""

from __future__ import annotations

import ast
import io
import os
import textwrap
import tokenize

from p4sim.lower import CompiledProgram

from . import slots
from .build import CompileUnavailable, build_module
from .views import HELPERS, bind_views

INTERPRET_OVER = int(os.environ.get("P4SIM_COMPILED_MAX_LINES", "600"))
BIND = "_p4sim_bind"
# the typed emission (p4sim.compiled.typed); P4SIM_COMPILED_TYPED=0: the generated Python compiled unchanged
TYPED = os.environ.get("P4SIM_COMPILED_TYPED", "1") != "0"
# the typed emission reads tables and counter/register arrays through views bound once
# (p4sim.compiled.views); P4SIM_COMPILED_VIEWS=0: through getattr per packet (A/B)
VIEWS = os.environ.get("P4SIM_COMPILED_VIEWS", "1") != "0"


class Split:
    """The generated module split into the compiled factory and the interpreted rest."""

    def __init__(self, compiled: str, interpreted: str, interpreted_names: list[str]):
        self.compiled, self.interpreted, self.interpreted_names = compiled, interpreted, interpreted_names


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


def split_source(python: str, injected: list[str], max_lines: int = INTERPRET_OVER) -> Split:
    """`python` (the generated module) as the factory source and the interpreted remainder."""
    if _multiline_strings(python):
        raise CompileUnavailable("generated code has a multi-line string literal: not wrapped")
    tree = ast.parse(python)
    lines = python.splitlines(keepends=True)
    comp: list[str] = []
    interp: list[str] = []
    names: list[str] = []
    inames: list[str] = []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        seg = "".join(lines[start - 1:node.end_lineno])
        if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno > max_lines:  # type: ignore[operator]
            interp.append(seg)
            inames.append(node.name)
            continue
        comp.append(seg)
        names.extend(_defined(node))
    out = [f"def {BIND}(_ns):"]
    out += [f"    {k} = _ns[{k!r}]" for k in [*injected, *inames]]
    out.append(textwrap.indent("".join(comp), "    "))
    out.append("    return {" + ", ".join(f"{n!r}: {n}" for n in dict.fromkeys(names)) + "}")
    return Split("\n".join(out) + "\n", "".join(interp), inames)


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
    prelude: list[str] = []
    if VIEWS:
        funcs, prelude = bind_views(funcs, program)
        head += HELPERS
    if slots.enabled():  # the switch's and the entries' attributes read at their offsets
        funcs = slots.rewrite_recs(slots.rewrite_switch(funcs, "_RT"))
        prelude += slots.prelude(tm="_p4sim_TMT" in funcs)
        head += slots.HELPERS
    out = ["# cython: infer_types=False", "import cython", head, f"def {BIND}(_ns):"]
    out += [f"    {k} = _ns[{k!r}]" for k in injected]
    out += [f"    {line}" for line in prelude]
    out.append(textwrap.indent(funcs, "    "))
    out.append("    return {" + ", ".join(f"{n!r}: {n}" for n in dict.fromkeys(names)) + "}")
    return "\n".join(out) + "\n"


def bind(program: CompiledProgram, ns: dict) -> None:
    """Fill `ns` (already holding the runtime's objects) with the compiled definitions."""
    injected = sorted(k for k in ns if not k.startswith("__"))
    base = os.path.splitext(os.path.basename(program.model.source))[0]
    stem = "p4_" + "".join(c if c.isalnum() else "_" for c in base)[:40]
    if TYPED:
        mod = build_module(typed_source(program, injected), stem)
        ns.update(getattr(mod, BIND)(ns))
        return
    sp = split_source(program.python, injected)
    mod = build_module(sp.compiled, stem)
    if sp.interpreted:
        exec(compile(sp.interpreted, "<p4sim interpreted part>", "exec"), ns)  # our generated code
    ns.update(getattr(mod, BIND)(ns))
