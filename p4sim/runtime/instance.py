"""Build one switch's objects from a compiled program's specs: tables (with their const
entries), extern objects (each through its module in `p4sim.externs`) and value sets, then
run the generated code in that fresh namespace. Lowering only describes these objects
(`p4sim.spec`); the runtime makes them.
"""

from __future__ import annotations

from types import CodeType

from p4sim import compiled
from p4sim import externs as registry
from p4sim.check.types import err
from p4sim.externs import Extern
from p4sim.lower import CompiledProgram
from p4sim.lower import load_program as _lower
from p4sim.model import P4SimError, TableEntry
from p4sim.runtime.action_profile import IndirectTable, Profile
from p4sim.runtime.tables import Table
from p4sim.spec import TableSpec


class ValueSet:
    """A parser value_set: members (value, mask) the control plane writes."""

    def __init__(self, name: str, size: int):
        self.name, self.size = name, size
        self.members: list[tuple[int, int]] = []

    def match(self, v: int) -> bool:
        return any(v & m == val & m for val, m in self.members)


def build_table(spec: TableSpec, profile: Profile | None = None) -> Table:
    """A table with its initial default and const entries; a bad const entry is a
    P4SourceError at that entry. An indirect table is built on its `profile`."""
    t = (
        Table(spec.info, spec.actions)
        if profile is None
        else IndirectTable(spec.info, spec.actions, profile)
    )
    name, args = spec.default
    t.set_default(name, args, force=True)
    t.initial_default = t.default
    nodes = spec.entry_nodes or [None] * len(spec.const_entries)
    for e, node in zip(spec.const_entries, nodes, strict=True):
        try:
            # a copy: installing normalises the entry (action name, priority)
            t.add(
                TableEntry(e.table, dict(e.match), e.action, dict(e.params), e.priority), const=True
            )
        except P4SimError as x:
            if node is None:
                raise
            raise err(f"table {spec.decl_name or spec.info.name}: {x}", node) from None
    t.const_entries = spec.info.const_entries
    return t


def instantiate(
    program: CompiledProgram, rt: object, backend: str | None = None, wait: bool = True
) -> dict:
    """Fresh namespace: the generated functions bound to new tables and extern objects.
    `backend`: "python" (the reference) or "compiled" (`p4sim.compiled`); default: the
    profile's (p4sim.profile). `wait=False`: a compiled module not built yet is built in
    the background and this namespace runs Python (a P4Runtime push does not wait for gcc)."""
    ns: dict = {"_RT": rt}
    for ext in registry.all_externs():
        ns.update(ext.namespace())
    for ex in program.externs:  # first: an indirect table is built on its action profile
        ns[ex.py] = registry.lookup(ex.kind).build(ex)
    for spec in program.tables:
        ns[spec.py] = build_table(spec, ns[spec.implementation] if spec.implementation else None)
    for py, name, size in program.value_sets:
        ns[py] = ValueSet(name, size)
    backend = backend or compiled.selected()
    if backend == "compiled":
        backend = compiled.bind_or_fallback(program, ns, wait)
    if backend == "python":
        exec(program.code, ns)  # our own generated code, never user input
    ns["__p4sim_backend__"] = backend  # which one runs (the bench reports it)
    return ns


def _names(code: CodeType, out: set[str]) -> set[str]:
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, CodeType):
            _names(c, out)
    return out


def used_externs(program: CompiledProgram) -> list[Extern]:
    """The externs this program uses: an instance of it, or generated code that calls one of
    its `_RT` methods (an attribute name the compiled code refers to). The switch runs the
    per-packet hooks of these only; the others cannot have been asked for anything."""
    if not isinstance(program.code, CodeType):  # no Python code to read: assume every extern
        return list(registry.all_externs())
    names = _names(program.code, set())
    kinds = {ex.kind for ex in program.externs}
    return [
        e
        for e in registry.all_externs()
        if (e.name and e.name in kinds) or not names.isdisjoint(e.runtime_methods())
    ]


def check_program(program: CompiledProgram) -> None:
    """What only building the objects shows (a duplicate or ill-formed const entry), as
    a located P4SourceError at load time rather than when a switch starts."""
    for spec in program.tables:
        if not spec.implementation:  # indirect tables have no const entries (check refuses them)
            build_table(spec)


def load_program(path: str, include_dirs=()) -> CompiledProgram:
    """`p4sim.lower.load_program`, then `check_program`: what the runtime will accept."""
    program = _lower(path, include_dirs)
    check_program(program)
    return program
