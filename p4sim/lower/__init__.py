"""Lowering: P4 source -> checked program (`p4sim.check.check`) -> Python source, compiled once.

    prog = load_program("p4src/roce_switch.p4", include_dirs=["p4src"])
    prog.model          # ProgramModel (control-plane names, as p4c puts them in P4Info)
    prog.python         # the generated Python source (`p4sim compile --emit python`)

Lowering hands the runtime specs (`p4sim.spec`) and never imports `p4sim.runtime`: per
switch, `p4sim.runtime.instance.instantiate(prog, rt)` runs the compiled code object in a
fresh namespace with fresh tables and extern objects, so several switches can run one program.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import CodeType

from p4sim.check import check
from p4sim.frontend import ast
from p4sim.frontend.errors import P4SourceError
from p4sim.model import ProgramModel
from p4sim.spec import ExternSpec, TableSpec

from .codegen import Compiler, Pipeline

ARCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "arch")

__all__ = ["CompiledProgram", "load_program", "compile_program"]


@dataclass
class CompiledProgram:
    model: ProgramModel
    python: str
    code: CodeType
    tables: list[TableSpec]
    externs: list[ExternSpec]
    pipeline: Pipeline
    value_sets: list[tuple[str, str, int]]
    errors: dict[str, int]
    program: ast.Program
    struct_types: dict


def compile_program(program: ast.Program, source: str) -> CompiledProgram:
    """Check `program` (every error is found here, by p4sim.check), then lower it."""
    c = Compiler(check(program), source)
    py = c.compile()
    code = compile(py, f"<p4sim:{os.path.basename(source)}>", "exec")
    return CompiledProgram(
        c.model,
        py,
        code,
        c.tables,
        c.externs,
        c.pipeline,
        c.value_sets,
        c.errors,
        program,
        c.struct_types,
    )


def load_program(path: str, include_dirs=()) -> CompiledProgram:
    """Parse, check and lower the P4 program at `path` (P4SourceError on any problem)."""
    from p4sim.frontend import parse_program

    dirs = list(include_dirs) + [os.path.dirname(os.path.abspath(path)), ARCH_DIR]
    program = parse_program(path, include_dirs=dirs)
    try:
        return compile_program(program, path)
    except RecursionError as e:  # pathological nesting: still a located, readable error
        raise P4SourceError(f"program too deeply nested: {e}") from e
