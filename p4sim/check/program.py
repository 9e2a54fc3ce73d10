"""The checking pass: `check(program) -> CheckedProgram`.

It walks the whole program once before anything is lowered: every top-level declaration,
the V1Switch package with each parser and control instance it makes (constructor
arguments bound), every local declaration, table, statement and expression, and every
action and function body (used or not, as p4c checks them). Names resolve through
`names.Scope`; every expression gets its type (`checked_type`); constants are folded;
each written type is resolved once (`CheckedProgram.types`). Any error is a
`P4TypeError` / `P4Unsupported` at file:line:column, raised here: lowering
(`p4sim.lower`) only translates what this pass accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4sim.frontend import ast

from . import ctor_args, direct_calls
from .blocks import BlockChecker, body_key
from .calls import CallChecker
from .decls import DeclChecker
from .exprs import ExprChecker
from .externs import ExternChecker
from .names import Scope, Sym
from .stmts import StmtChecker
from .types import VARIES, TStruct, Type, err


@dataclass
class CheckedProgram:  # noqa: F821 (Checker below)
    """What lowering reads: the global scope, the program's types and error codes, the
    package's blocks, and the resolved type of every written type node."""

    program: ast.Program
    g: Scope  # every top-level name (types, constants with their values, externs, blocks, actions)
    errors: dict[str, int]  # error member -> code, in declaration order
    struct_types: dict[str, TStruct]  # header, struct and union types by name
    main: ast.Instantiation
    hdr_type: TStruct
    meta_type: TStruct
    std_meta_type: TStruct
    blocks: list[
        tuple[Sym, str, list[ast.Argument]]
    ]  # V1Switch's six: (declaration, prefix, ctor args)
    types: dict[int, object] = field(default_factory=dict)  # id(ast.Type) -> Type (or VARIES)
    # id() of the statements using a header-stack index known only at run time
    run_time_index_stmts: set[int] = field(default_factory=set)
    returns: set[int] = field(default_factory=set)  # id() of the bodies with a `return`
    bodies: set[int] = field(default_factory=set)  # id() of every body checked
    values: dict[int, object] = field(default_factory=dict)  # id(expr) -> (Type, constant or None)
    # id(Name) -> what it refers to (a block's own names: as in the last instance checked)
    names: dict[int, Sym] = field(default_factory=dict)
    # (instance, id(node)) -> what `values` / `types` would hold, for the VARIES nodes only
    inst_values: dict[tuple[str, int], tuple[Type, object]] = field(default_factory=dict)
    inst_types: dict[tuple[str, int], Type] = field(default_factory=dict)
    # id(instantiation) -> (instances moved out of its constructor arguments, it with them
    # passed by name), as check_ctor_args.move made them (p4c's MoveConstructors)
    moved: dict[int, tuple[list[ast.Instantiation], ast.Instantiation]] = field(
        default_factory=dict
    )
    positional: dict[int, ast.MethodCall] = field(
        default_factory=dict
    )  # id(call with named args) -> positional form

    def value(self, e: ast.Expression, instance: str) -> tuple[Type, object] | None:
        """(type, constant value or None) check gave e; where instances of its block disagree
        (a width from a constructor parameter), the one of `instance` (a block's control-plane
        prefix). None: check never reached e."""
        r = self.values.get(id(e))
        if r is VARIES:
            r = self.inst_values.get((instance, id(e)))
        return r  # type: ignore[return-value]

    def constant(self, e: ast.Expression) -> tuple[Type, object] | None:
        """(type, value) of e when check folded it to a constant the same in every instance."""
        r = self.values.get(id(e))
        if r is None or r is VARIES or r[1] is None:  # type: ignore[index]
            return None
        return r  # type: ignore[return-value]

    def has_return(self, body: ast.BlockStatement) -> bool:
        """Whether a control's apply block or an action/function body contains `return`."""
        assert id(body) in self.bodies, f"{body.span}: a body check never saw"
        return id(body) in self.returns

    def type_of(self, t: ast.Type, instance: str | None = None) -> Type | None:
        """The type check resolved for type node t (in `instance` where instances of its block
        disagree); None if check never reached it (or it varies and no instance is given)."""
        r = self.types.get(id(t))
        if r is VARIES and instance is not None:
            r = self.inst_types.get((instance, id(t)))
        return None if r is None or r is VARIES else r  # type: ignore[return-value]


class Checker(DeclChecker, ExprChecker, StmtChecker, CallChecker, ExternChecker, BlockChecker):
    def __init__(self, program: ast.Program):
        self.program = program
        direct_calls.instantiate_direct_calls(
            program
        )  # `E.apply(...)` (p4c's InstantiateDirectCalls)
        self.ctor_arg_names = ctor_args.constructor_arg_names(program)  # `Outer(Inner()) o;`
        self.moved: dict[int, tuple[list[ast.Instantiation], ast.Instantiation]] = {}
        self.positional: dict[int, ast.MethodCall] = {}
        self.g = Scope(None, "global")
        self.errors: dict[str, int] = {}
        self.struct_types: dict[str, TStruct] = {}
        self.callables: list[Sym] = []
        self.checked_bodies: set[int] = set()
        self.types: dict[int, object] = {}
        self.values: dict[int, object] = {}
        self.instance = ""  # control-plane prefix of the block instance being checked
        self.inst_values: dict[tuple[str, int], tuple[Type, object]] = {}
        self.inst_types: dict[tuple[str, int], Type] = {}
        self.names: dict[int, Sym] = {}
        self.run_time_indexes = 0
        self.index_calls_ok = False
        self.run_time_index_stmts: set[int] = set()
        self.returns: set[int] = set()
        self.bodies: set[int] = set()
        self.hdr_type = self.meta_type = self.std_meta_type = None

    def run(self) -> CheckedProgram:
        for d in self.program.declarations:
            self.declare_top(d)
        main = self.g.lookup("main")
        if main is None or not isinstance(main.decl, ast.Instantiation):
            # point at the end of the user's file, not at the first included declaration
            own = [
                d for d in self.program.declarations if d.span.file == self.program.main_file
            ] or self.program.declarations
            raise err(
                "the program has no `main` package instantiation", own[-1] if own else self.program
            )
        self.check_main(main.decl)
        for sym in self.callables:  # bodies no call reached: p4c checks them too
            if body_key(sym) not in self.checked_bodies and "overloads" not in sym.extra:
                self.check_callable(sym)
        # per-instance results are kept only where instances disagree
        inst_values = {k: v for k, v in self.inst_values.items() if self.values.get(k[1]) is VARIES}
        inst_types = {k: v for k, v in self.inst_types.items() if self.types.get(k[1]) is VARIES}
        return CheckedProgram(
            self.program,
            self.g,
            self.errors,
            self.struct_types,
            main.decl,
            self.hdr_type,
            self.meta_type,
            self.std_meta_type,  # type: ignore[arg-type]
            self.main_blocks,
            self.types,
            self.run_time_index_stmts,
            self.returns,
            self.bodies,
            self.values,
            self.names,
            inst_values,
            inst_types,
            self.moved,
            self.positional,
        )


def check(program: ast.Program) -> CheckedProgram:
    """Resolve and type-check `program` (P4TypeError / P4Unsupported on the first error)."""
    return Checker(program).run()
