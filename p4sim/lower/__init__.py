"""Lowering: P4 source -> checked program (`p4sim.check.check`) -> Python source, compiled once.

    prog = load_program("p4src/roce_switch.p4", include_dirs=["p4src"])
    prog.model          # ProgramModel (control-plane names, as p4c puts them in P4Info)
    prog.python         # the generated Python source (`p4sim compile --emit python`)

Per switch, `prog.instantiate(rt)` runs the compiled code object in a fresh namespace
with fresh tables and externs, so several switches can run one program.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import CodeType

from p4sim.check import check
from p4sim.frontend import ast
from p4sim.frontend.errors import P4SourceError
from p4sim.model import ProgramModel
from p4sim.runtime.tables import Table

from .codegen import Compiler, ExternSpec, Pipeline, TableSpec

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

    def instantiate(self, rt: object) -> dict:
        """Fresh namespace: the generated functions bound to new tables/externs."""
        from p4sim.runtime import externs as X

        ns: dict = {"_RT": rt, "_HF_crc32": X.crc32, "_HF_crc16": X.CRC16, "_HF_csum16": X.csum16,
                    "_HF_xor16": X.xor16, "_HF_identity": X.identity}
        for spec in self.tables:
            t = Table(spec.info, spec.actions)
            name, args = spec.default
            t.set_default(name, args, force=True)
            t.initial_default = t.default
            for e in spec.const_entries:
                t.add(e, const=True)
            t.const_entries = spec.info.const_entries
            ns[spec.py] = t
        for ex in self.externs:
            if ex.kind == "counter":
                ns[ex.py] = X.CounterArray(ex.name, ex.size, ex.unit)
            elif ex.kind == "register":
                ns[ex.py] = X.RegisterArray(ex.name, ex.size, ex.width)
            elif ex.kind == "meter":
                ns[ex.py] = X.MeterArray(ex.name, ex.size, ex.unit)
            else:
                ns[ex.py] = ex  # direct resources: state lives in the table entries
        for py, name, size in self.value_sets:
            ns[py] = ValueSet(name, size)
        exec(self.code, ns)  # our own generated code, never user input
        return ns


class ValueSet:
    """A parser value_set: members (value, mask) the control plane writes."""

    def __init__(self, name: str, size: int):
        self.name, self.size = name, size
        self.members: list[tuple[int, int]] = []

    def match(self, v: int) -> bool:
        return any(v & m == val & m for val, m in self.members)


def compile_program(program: ast.Program, source: str) -> CompiledProgram:
    """Check `program` (every error is found here, by p4sim.check), then lower it."""
    c = Compiler(check(program), source)
    py = c.compile()
    code = compile(py, f"<p4sim:{os.path.basename(source)}>", "exec")
    return CompiledProgram(c.model, py, code, c.tables, c.externs, c.pipeline, c.value_sets,
                           c.errors, program, c.struct_types)


def load_program(path: str, include_dirs=()) -> CompiledProgram:
    """Parse, check and lower the P4 program at `path` (P4SourceError on any problem)."""
    from p4sim.frontend import parse_program

    dirs = list(include_dirs) + [os.path.dirname(os.path.abspath(path)), ARCH_DIR]
    program = parse_program(path, include_dirs=dirs)
    try:
        return compile_program(program, path)
    except RecursionError as e:  # pathological nesting: still a located, readable error
        raise P4SourceError(f"program too deeply nested: {e}") from e
