"""Statements: declarations in bodies, assignments, if/switch, loops, return/exit."""

from __future__ import annotations

from p4sim.frontend import ast

from .exprs import Ctx, Val
from .names import Scope, Sym
from .types import VOID, TBits, TStack, TStruct, TVarbit, Type, err, unsupported


def plain_path(e: ast.Expression) -> bool:
    """`a.b.c`: a field reached through names and members only (no index, no call)."""
    if not isinstance(e, ast.Member):
        return False
    x: ast.Expression = e
    while isinstance(x, ast.Member):
        if x.member in ("next", "last"):
            return False
        x = x.expr
    return isinstance(x, ast.Name)


def _varbit_place(e: ast.Node) -> bool:
    return isinstance(e, ast.Name) or plain_path(e)  # type: ignore[arg-type]


class StmtChecker:
    """Mixin of `p4sim.check.Checker`: statements.

    Besides errors it records what lowering needs to know of a statement: which ones use a
    header-stack index known only at run time (`run_time_index_stmts`: lowering guards
    them, as p4c's HSIndexSimplifier does) and which bodies contain a `return` (`returns`).
    """

    run_time_indexes: int
    run_time_index_stmts: set[int]
    index_calls_ok: bool
    returns: set[int]

    # ------------------------------------------------------------------ statements

    def block(self, b: ast.BlockStatement, scope: Scope, ctx: Ctx) -> None:
        inner = Scope(scope, "block")
        for s in b.statements:
            self.stmt(s, inner, ctx)

    def body(self, s: ast.Statement, scope: Scope, ctx: Ctx) -> None:
        if isinstance(s, ast.BlockStatement):
            self.block(s, scope, ctx)
        else:
            self.stmt(s, Scope(scope, "stmt"), ctx)

    def stmt(self, s: ast.Node, scope: Scope, ctx: Ctx) -> None:
        if isinstance(s, ast.Unsupported):
            raise unsupported(s.what, s)
        if isinstance(s, ast.EmptyStatement):
            return
        if isinstance(s, ast.BlockStatement):
            self.body(s, scope, ctx)
            return
        n = self.run_time_indexes
        # a call inside a run-time stack index: lowering (codegen.hoist_call_indexes) moves the
        # index into a temporary before the statement, for these statements (and an if's
        # condition, below) only; the flag is per statement, so a body checked from a call
        # inside it does not inherit it
        saved = self.index_calls_ok
        self.index_calls_ok = isinstance(
            s, (ast.Assignment, ast.MethodCallStatement, ast.VariableDecl)
        )
        try:
            self.stmt_inner(s, scope, ctx)
        finally:
            self.index_calls_ok = saved
        if self.run_time_indexes != n and isinstance(
            s, (ast.Assignment, ast.MethodCallStatement, ast.VariableDecl)
        ):
            self.run_time_index_stmts.add(id(s))

    def stmt_inner(self, s: ast.Node, scope: Scope, ctx: Ctx) -> None:
        if isinstance(s, ast.VariableDecl):
            t = self.resolve_type(s.type, scope)
            if s.init is not None:
                self.coerce(self.expr(s.init, scope, ctx, want=t), t, s.init)
            scope.add(Sym("var", s.name, s, t), s)
            return
        if isinstance(s, ast.ConstDecl):
            self.declare_const(s, scope)
            return
        if isinstance(s, ast.Instantiation):
            raise unsupported("instantiation inside a block body", s)
        if isinstance(s, ast.Assignment):
            self.assign(s.lhs, s.rhs, scope, ctx)
            return
        if isinstance(s, ast.IfStatement):
            n = self.run_time_indexes
            self.index_calls_ok = True
            self.cond(s.cond, scope, ctx)
            self.index_calls_ok = False
            if self.run_time_indexes != n:
                self.run_time_index_stmts.add(id(s))
            self.body(s.then, scope, ctx)
            if s.else_ is not None:
                self.body(s.else_, scope, ctx)
            return
        if isinstance(s, ast.MethodCallStatement):
            self.call(s.call, scope, ctx)
            return
        if isinstance(s, ast.SwitchStatement):
            self.switch(s, scope, ctx)
            return
        if isinstance(s, (ast.ForStatement, ast.ForInStatement)):
            self.for_loop(s, scope, ctx)
            return
        if isinstance(s, (ast.BreakStatement, ast.ContinueStatement)):
            if not ctx.loops:
                raise err(
                    f"{'break' if isinstance(s, ast.BreakStatement) else 'continue'} outside a for loop",
                    s,
                )
            return
        if isinstance(s, ast.ReturnStatement):
            self.returns.add(ctx.body)
            if ctx.in_callable:
                if s.value is not None:
                    if ctx.ret is None:
                        raise err("return with a value in an action", s)
                    # typed against the declared return type: `return {a, b};`, casts, ints
                    self.coerce(self.expr(s.value, scope, ctx, want=ctx.ret), ctx.ret, s.value)
            elif s.value is not None:
                raise err("return with a value in a control", s)
            return
        if isinstance(s, ast.ExitStatement):
            if ctx.in_parser:
                raise err("exit is not allowed in a parser", s)
            return
        if isinstance(s, ast.TransitionStatement):
            raise err("transition must be the last statement of a state", s)
        raise unsupported(f"statement {type(s).__name__}", s)

    def for_loop(self, s: ast.ForStatement | ast.ForInStatement, scope: Scope, ctx: Ctx) -> None:
        """P4_16 1.2.4 loops: `for (init; cond; update)` and `for (T x in range / stack)`."""
        if ctx.in_parser:
            raise unsupported("for loops in a parser", s)
        inner = Scope(scope, "for")
        if isinstance(s, ast.ForInStatement):
            t = self.resolve_type(s.type, inner)
            if s.hi is not None:
                if not isinstance(t, TBits):
                    raise err("a range loop variable must be bit<N> or int<N>", s)
                self.coerce(self.expr(s.collection, scope, ctx, want=t), t, s.collection)
                self.coerce(self.expr(s.hi, scope, ctx, want=t), t, s.hi)
            else:
                coll = self.expr(s.collection, scope, ctx)
                if not isinstance(coll.type, TStack):
                    raise unsupported(
                        f"for-in over a {coll.type.show()} (p4sim iterates header stacks and ranges)",
                        s.collection,
                    )
                self.coerce(Val(coll.type.elem), t, s)
            inner.add(Sym("var", s.var, s, t), s)
        else:
            for st in s.init:
                self.stmt(st, inner, ctx)
            for st in s.update:
                self.stmt(st, inner, ctx)
            if s.cond is not None:
                self.cond(s.cond, inner, ctx)
        ctx.loops += 1
        try:
            self.body(s.body, inner, ctx)
        finally:
            ctx.loops -= 1

    # ------------------------------------------------------------------ assignment

    def assign(
        self, lhs: ast.Expression, rhs: ast.Expression | Val, scope: Scope, ctx: Ctx
    ) -> None:
        """`lhs = rhs` (rhs a Val: a value written back to an out/inout argument)."""
        lt = self.lvalue_type(lhs, scope, ctx)
        if isinstance(rhs, Val):
            rv = rhs
            node: ast.Node = lhs
        else:
            node = rhs
            if isinstance(rhs, ast.InvalidExpression):
                if isinstance(lt, TStruct) and lt.kind == "header":
                    return
                raise err("{#} can only be assigned to a header", rhs)
            if isinstance(rhs, (ast.ListExpression, ast.StructExpression)) and isinstance(
                lt, TStruct
            ):
                self.assign_fields(lt, rhs, scope, ctx)
                return
            rv = self.expr(rhs, scope, ctx, want=lt)
        rv = self.coerce(rv, lt, node)
        if isinstance(lt, TVarbit):
            # a varbit value is its bits and their current width: both move together
            # a field or a local variable, both ways (p4c sample issue447-5-bmv2)
            if not (_varbit_place(lhs) and isinstance(rhs, ast.Expression) and _varbit_place(rhs)):
                raise unsupported("assigning a varbit other than a field or variable", node)
            if not (isinstance(rv.type, TVarbit) and rv.type.width == lt.width):
                raise err(f"cannot assign {rv.type.show()} to {lt.show()}", node)

    def assign_fields(self, lt: TStruct, rhs: ast.Expression, scope: Scope, ctx: Ctx) -> None:
        """A list or struct expression given to a struct or header."""
        names = [f for f, _ in lt.fields]
        if isinstance(rhs, ast.ListExpression):
            n = len(rhs.elements)
            if n > len(names) or (n < len(names) and not rhs.dots):
                raise err(
                    f"{lt.name} has {len(lt.fields)} fields, the list has {len(rhs.elements)}", rhs
                )
            pairs = list(zip(names[:n], rhs.elements, strict=True))
        else:
            pairs = [(nf.name, nf.value) for nf in rhs.fields]  # type: ignore[union-attr]
        given = {f for f, _ in pairs}
        if (
            isinstance(rhs, ast.StructExpression)
            and not getattr(rhs, "dots", False)
            and given < set(names)
        ):
            # p4c's type checker wants every field of the type (or `...`)
            missing = ", ".join(f for f in names if f not in given)
            raise err(
                f"{lt.name}: the initializer does not give field(s) {missing} "
                "(end it with `...` to give them their default values)",
                rhs,
            )
        for fname, e in pairs:
            ft = lt.field_type(fname)
            if ft is None:
                raise err(f"{lt.name} has no field '{fname}'", e)
            self.coerce(self.expr(e, scope, ctx, want=ft), ft, e)

    def lvalue_type(self, e: ast.Expression, scope: Scope, ctx: Ctx) -> Type:
        """The type of an assignment target (an error if e cannot be written)."""
        if isinstance(e, ast.Name):
            sym = self.names[id(e)] = scope.resolve(e.name, e, top_level=e.top_level)  # type: ignore[attr-defined]
            if sym.kind != "var":
                raise err(f"cannot assign to '{e.name}'", e)
            if sym.extra.get("dir") == "in":
                raise err(f"cannot assign to 'in' parameter '{e.name}'", e)
            e.checked_type = sym.type
            self.record(e, sym.type or VOID, None)  # type: ignore[attr-defined]
            return sym.type or VOID
        if isinstance(e, (ast.Member, ast.Slice)):
            return self.expr(e, scope, ctx).type
        if isinstance(e, ast.Index):
            t = self.expr(e, scope, ctx).type
            if isinstance(e.expr.checked_type, TStack):
                return t
        raise err("this expression cannot be assigned to", e)
