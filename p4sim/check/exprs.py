"""Expression typing and constant folding.

`ExprChecker.expr(e, scope, ctx, want)` gives an expression its type (stored in
`e.checked_type`) and, when it is a compile-time constant, its value; names resolve
through `names.Scope`. `ctx` is None where only a compile-time constant is allowed (a
width, a `const` value, a table size): a call there is an error.

The rules and messages are p4sim's, written after p4c's TypeInference where the
two are known to agree (frontends/p4/typeChecking/typeChecker.cpp).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4sim.frontend import ast

from .names import Scope, Sym
from .types import (
    BOOL,
    ERROR,
    INT,
    STRING,
    VARIES,
    VOID,
    TBits,
    TBool,
    TDontCare,
    TEnum,
    TError,
    TInt,
    TNamedBlock,
    TStack,
    TStruct,
    TTuple,
    TTypeVar,
    Type,
    err,
    identical,
    mask,
    to_signed,
    unsupported,
)


@dataclass
class Val:
    """A checked expression: its type and, when known at compile time, its value."""

    type: Type
    const: Any = None

    @property
    def is_const(self) -> bool:
        return self.const is not None


@dataclass
class Ctx:
    """Where a statement or expression sits (what lowering knows as the function it fills)."""

    in_parser: bool = False
    ret: Type | None = None  # the return type of the enclosing function (None: none)
    in_callable: bool = False  # inside an action or function body (`return` leaves it)
    loops: int = 0  # enclosing for loops of the current body
    sm: bool = False  # a standard_metadata_t parameter is in scope
    body: int = 0  # id() of the block statement of the body being checked (its `return`s)
    block: str = (
        ""  # 'parser' | 'control' | 'action' | 'function' | 'global' (a top-level callable)
    )
    extra: dict = field(default_factory=dict)


def eval_cmp(op: str, x: int, y: int) -> bool:
    return {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]


class ExprChecker:
    """Mixin of `p4sim.check.Checker`: expressions."""

    errors: dict[str, int]
    values: dict[int, object]
    instance: str
    inst_values: dict[tuple[str, int], tuple[Type, Any]]
    names: dict[int, Sym]
    run_time_indexes: int  # header-stack indexes known only at run time, seen so far
    index_calls_ok: bool  # a call may sit in a run-time stack index here (stmts.StmtChecker.stmt)

    # ------------------------------------------------------------------ entry points

    def expr(
        self, e: ast.Expression, scope: Scope, ctx: Ctx | None, want: Type | None = None
    ) -> Val:
        v = self._expr(e, scope, ctx, want)
        e.checked_type = v.type
        self.record(e, v.type, v.const)
        return v

    def record(self, e: ast.Expression, t: Type, const: Any) -> None:
        """(type, constant value) of node e, for lowering; VARIES where two instances of a
        block disagree (a constructor parameter): lowering then reads this instance's."""
        self.inst_values[(self.instance, id(e))] = (t, const)
        old = self.values.get(id(e))
        if old is None:
            self.values[id(e)] = (t, const)
        elif old is not VARIES and not (
            old[1] == const and type(old[1]) is type(const) and identical(old[0], t)
        ):
            self.values[id(e)] = VARIES

    def const_eval(self, e: ast.Expression, scope: Scope) -> int:
        v = self.expr(e, scope, None)
        if not v.is_const:
            raise err("expected a compile-time constant", e)
        return int(v.const)

    def cond(self, e: ast.Expression, scope: Scope, ctx: Ctx) -> Val:
        v = self.expr(e, scope, ctx)
        if not isinstance(v.type, TBool):
            raise err(f"condition must be bool, not {v.type.show()}", e)
        return v

    # ------------------------------------------------------------------ conversions

    def coerce(self, v: Val, t: Type | None, node: ast.Node) -> Val:
        """Implicit conversion of v to type t (int literals to bit<N>, equal types)."""
        if t is None or isinstance(t, (TDontCare, TTypeVar)):
            return v
        vt = v.type
        if isinstance(t, TBits):
            if isinstance(vt, TInt):
                return Val(t, int(v.const) & mask(t.width) if v.is_const else None)
            if isinstance(vt, TBits):
                if vt.width != t.width or vt.signed != t.signed:
                    raise err(f"cannot assign {vt.show()} to {t.show()} without a cast", node)
                return v
            if isinstance(vt, TEnum) and vt.underlying is not None:
                raise err(f"cannot use {vt.show()} as {t.show()} without a cast", node)
            raise err(f"expected {t.show()}, got {vt.show()}", node)
        if isinstance(t, TBool):
            if not isinstance(vt, TBool):
                raise err(f"expected bool, got {vt.show()}", node)
            return v
        if isinstance(t, TEnum):
            if vt is not t and not (isinstance(vt, TEnum) and vt.name == t.name):
                if isinstance(vt, TInt) and t.underlying is not None and v.is_const:
                    return Val(t, v.const)
                raise err(f"expected {t.show()}, got {vt.show()}", node)
            return v
        if isinstance(t, TStruct):
            if not (isinstance(vt, TStruct) and vt.name == t.name):
                raise err(f"expected {t.show()}, got {vt.show()}", node)
            return v
        if isinstance(t, TError):
            if not isinstance(vt, TError):
                raise err(f"expected error, got {vt.show()}", node)
            return v
        return v

    def unify(self, a: Val, b: Val, node: ast.Node) -> tuple[Val, Val]:
        if isinstance(a.type, TInt) and isinstance(b.type, TBits):
            a = self.coerce(a, b.type, node)
        elif isinstance(b.type, TInt) and isinstance(a.type, TBits):
            b = self.coerce(b, a.type, node)
        return a, b

    # ------------------------------------------------------------------ forms

    def _expr(self, e: ast.Expression, scope: Scope, ctx: Ctx | None, want: Type | None) -> Val:
        if isinstance(e, ast.IntLiteral):
            if e.width is not None:
                return Val(TBits(e.width, e.signed), e.value & mask(e.width))
            return Val(INT, e.value)
        if isinstance(e, ast.BoolLiteral):
            return Val(BOOL, e.value)
        if isinstance(e, ast.StringLiteral):
            return Val(STRING, e.value)
        if isinstance(e, ast.Name):
            sym = self.names[id(e)] = scope.resolve(e.name, e, top_level=e.top_level)
            if sym.kind == "const":
                return Val(sym.type, sym.value)  # type: ignore[arg-type]
            if sym.kind in ("var", "packet", "instance", "value_set"):
                return Val(sym.type if sym.type is not None else VOID)
            if sym.kind == "type":
                return Val(sym.type)  # type: ignore[arg-type]
            if sym.kind == "table":
                return Val(TNamedBlock("table", sym.name))
            raise err(f"'{e.name}' cannot be used as a value here", e)
        if isinstance(e, ast.TypeRef):
            return Val(self.resolve_type(e.type, scope))
        if isinstance(e, ast.Member):
            return self.member(e, scope, ctx)
        if isinstance(e, ast.Index):
            obj = self.expr(e.expr, scope, ctx)
            idx = self.expr(e.index, scope, ctx)
            if isinstance(obj.type, TStack):
                if idx.is_const and not 0 <= idx.const < obj.type.size:
                    raise err(f"index {idx.const} out of bounds of a stack of {obj.type.size}", e)
                if not idx.is_const:
                    # lowering guards the statement with `0 <= i < size` (stmts.StmtChecker.stmt)
                    # a call in it: lowering hoists the index into a temporary first (p4c's
                    # SideEffectOrdering), in the statements stmts.StmtChecker.stmt allows
                    if not self.index_calls_ok and any(
                        isinstance(x, ast.MethodCall) for x in ast.walk(e.index)
                    ):
                        raise unsupported(
                            "a call inside a run-time header-stack index here", e.index
                        )
                    self.run_time_indexes += 1
                return Val(obj.type.elem)
            if isinstance(obj.type, TTuple):
                # a tuple element by a compile-time index (P4_16 spec, "Tuple types")
                n = len(obj.type.elems)
                if not idx.is_const or not 0 <= int(idx.const) < n:
                    raise err(
                        f"a tuple<...> of {n} elements needs a constant index in 0..{n - 1}",
                        e.index,
                    )
                return Val(obj.type.elems[int(idx.const)])
            raise err(f"cannot index a {obj.type.show()}", e)
        if isinstance(e, ast.Slice):
            b = self.expr(e.expr, scope, ctx)
            hi = self.const_eval(e.hi, scope)
            lo = self.const_eval(e.lo, scope)
            if not isinstance(b.type, (TBits, TInt)):
                raise err(f"cannot slice a {b.type.show()}", e)
            if isinstance(b.type, TBits) and not (0 <= lo <= hi < b.type.width):
                raise err(f"slice [{hi}:{lo}] out of range for {b.type.show()}", e)
            w = hi - lo + 1
            return Val(TBits(w), (int(b.const) >> lo) & mask(w) if b.is_const else None)
        if isinstance(e, ast.Unary):
            return self.unary(e, scope, ctx, want)
        if isinstance(e, ast.Binary):
            return self.binary(e, scope, ctx, want)
        if isinstance(e, ast.Ternary):
            c = self.expr(e.cond, scope, ctx)
            if not isinstance(c.type, TBool):
                raise err("condition of ?: must be bool", e.cond)
            a = self.expr(e.then, scope, ctx, want)
            b = self.expr(e.else_, scope, ctx, want)
            a, b = self.unify(a, b, e)
            if c.is_const:
                return a if c.const else b
            return Val(a.type)
        if isinstance(e, ast.Cast):
            return self.cast(self.resolve_type(e.type, scope), self.expr(e.expr, scope, ctx), e)
        if isinstance(e, ast.MethodCall):
            sa = self.static_assert(e, scope)
            if sa is not None:
                return sa
            if ctx is None:
                raise err("expected a compile-time constant", e)
            return self.call(e, scope, ctx, want=want)
        if isinstance(e, ast.DontCare):
            return Val(TDontCare())
        if isinstance(e, (ast.ListExpression, ast.StructExpression)):
            if isinstance(want, TStruct) and ctx is not None:
                self.assign_fields(want, e, scope, ctx)
                return Val(want)
            if isinstance(e, ast.ListExpression):
                vals = [self.expr(x, scope, ctx) for x in e.elements]
                return Val(TTuple([v.type for v in vals]))
            raise unsupported("struct expression without a known struct type", e)
        if isinstance(e, ast.InvalidExpression):
            raise unsupported("{#} outside an assignment", e)
        raise unsupported(f"expression {type(e).__name__}", e)

    def member(self, e: ast.Member, scope: Scope, ctx: Ctx | None) -> Val:
        base = e.expr
        m = e.member
        if (isinstance(base, ast.TypeRef) and isinstance(base.type, ast.ErrorType)) or (
            isinstance(base, ast.Name) and base.name == "error" and scope.lookup("error") is None
        ):
            if m not in self.errors:
                raise err(f"unknown error '{m}'", e)
            base.checked_type = ERROR
            return Val(ERROR, self.errors[m])
        # table.apply().hit / miss
        if (
            isinstance(base, ast.MethodCall)
            and isinstance(base.callee, ast.Member)
            and base.callee.member == "apply"
        ):
            if ctx is None:
                raise err("expected a compile-time constant", e)
            tsym = self.table_of(base.callee.expr, scope)
            base.callee.expr.checked_type = TNamedBlock("table", tsym.name)
            base.checked_type = TNamedBlock("apply_result", tsym.name)
            if m in ("hit", "miss"):
                return Val(BOOL)
            raise err(f"table apply result has no member '{m}' usable here", e)
        b = self.expr(base, scope, ctx)
        t = b.type
        if isinstance(t, TEnum):
            if m not in t.members:
                raise err(f"{t.name} has no member '{m}'", e)
            return Val(t, t.members[m])
        if isinstance(t, TStruct):
            ft = t.field_type(m)
            if ft is None:
                raise err(f"{t.kind} {t.name} has no field '{m}'", e)
            return Val(ft)
        if isinstance(t, TStack):
            if m == "size":
                return Val(TBits(32), t.size)
            if m in ("lastIndex", "nextIndex"):
                return Val(TBits(32))
            if m in ("next", "last") and ctx is not None and not ctx.in_parser:
                # as p4c's type checker (frontends/p4/typeChecking/typeChecker.cpp,
                # TypeInference::postorder(IR::Member)): parser-only, so no parser error can
                # escape from a control
                raise err(f"'{m}' of a header stack can only be used in a parser", e)
            if m in ("next", "last"):
                if ctx is None:
                    raise err("expected a compile-time constant", e)
                return Val(t.elem)
            raise err(f"a header stack has no member '{m}'", e)
        raise err(f"{t.show()} has no member '{m}'", e)

    def unary(self, e: ast.Unary, scope: Scope, ctx: Ctx | None, want: Type | None) -> Val:
        v = self.expr(e.operand, scope, ctx, want)
        t = v.type
        op = e.op
        if op == "!":
            if not isinstance(t, TBool):
                raise err("! needs a bool", e)
            return Val(BOOL, (not v.const) if v.is_const else None)
        if op == "+":
            return v
        if isinstance(t, TInt):
            if not v.is_const:
                raise err("operation on a non-constant int", e)
            return Val(INT, -v.const if op == "-" else ~v.const)
        if not isinstance(t, TBits):
            raise err(f"operator {op} needs bit<N> or int<N>, not {t.show()}", e)
        if op not in ("-", "~"):
            raise err(f"unknown operator {op}", e)
        if v.is_const:
            return Val(t, (-v.const if op == "-" else ~v.const) & mask(t.width))
        return Val(t)

    def binary(self, e: ast.Binary, scope: Scope, ctx: Ctx | None, want: Type | None) -> Val:
        op = e.op
        if op in ("&&", "||"):
            a = self.expr(e.left, scope, ctx)
            b = self.expr(e.right, scope, ctx)
            if not (isinstance(a.type, TBool) and isinstance(b.type, TBool)):
                raise err(f"{op} needs bool operands", e)
            if a.is_const and b.is_const:
                return Val(
                    BOOL, bool((a.const and b.const) if op == "&&" else (a.const or b.const))
                )
            return Val(BOOL)
        a = self.expr(
            e.left, scope, ctx, want if op not in ("==", "!=", "<", ">", "<=", ">=") else None
        )
        b = self.expr(
            e.right,
            scope,
            ctx,
            a.type if isinstance(a.type, TBits) and op not in ("<<", ">>", "++") else None,
        )
        if isinstance(a.type, TInt) and isinstance(b.type, TBits) and op not in ("<<", ">>", "++"):
            a = self.coerce(a, b.type, e)
        if op == "++":
            return self.concat(a, b, e)
        if op in ("<<", ">>"):
            return self.shift(a, b, op, e)
        a, b = self.unify(a, b, e)
        ta, tb = a.type, b.type
        if op in ("==", "!="):
            if isinstance(ta, TBits) and isinstance(tb, TBits) and ta != tb:
                raise err(f"cannot compare {ta.show()} with {tb.show()}", e)
            if isinstance(ta, (TStruct, TStack)) or isinstance(tb, (TStruct, TStack)):
                if type(ta) is not type(tb) or ta.show() != tb.show():
                    raise err(f"cannot compare {ta.show()} with {tb.show()}", e)
                return Val(BOOL)
            if a.is_const and b.is_const:
                return Val(BOOL, (a.const == b.const) if op == "==" else (a.const != b.const))
            return Val(BOOL)
        if isinstance(ta, TInt) and isinstance(tb, TInt):
            if not (a.is_const and b.is_const):
                raise err("operation on non-constant ints", e)
            return self.fold_int(op, a.const, b.const, e)
        if not (isinstance(ta, TBits) and isinstance(tb, TBits)):
            raise err(
                f"operator {op} needs bit<N>/int<N> operands, not {ta.show()} and {tb.show()}", e
            )
        if ta != tb:
            raise err(f"operands of {op} have different types {ta.show()} and {tb.show()}", e)
        w, signed = ta.width, ta.signed
        if op in ("<", ">", "<=", ">="):
            if a.is_const and b.is_const:
                x, y = (
                    (to_signed(a.const, w), to_signed(b.const, w)) if signed else (a.const, b.const)
                )
                return Val(BOOL, eval_cmp(op, x, y))
            return Val(BOOL)
        if a.is_const and b.is_const:
            return Val(ta, self.fold_bits(op, a.const, b.const, w, signed, e))
        if op in ("+", "-", "*", "&", "|", "^", "|+|", "|-|"):
            return Val(ta)
        if op in ("/", "%"):
            if signed:
                raise unsupported(f"{op} on signed values", e)
            return Val(ta)
        raise err(f"unknown operator {op}", e)

    # ------------------------------------------------------------------ folding

    def fold_int(self, op: str, x: int, y: int, e: ast.Node) -> Val:
        if op in ("<", ">", "<=", ">="):
            return Val(BOOL, eval_cmp(op, x, y))
        ops = {
            "+": lambda: x + y,
            "-": lambda: x - y,
            "*": lambda: x * y,
            "/": lambda: x // y,
            "%": lambda: x % y,
            "&": lambda: x & y,
            "|": lambda: x | y,
            "^": lambda: x ^ y,
        }
        if op not in ops:
            raise err(f"operator {op} on int constants", e)
        if op in ("/", "%") and y == 0:
            raise err("division by zero", e)
        return Val(INT, ops[op]())

    @staticmethod
    def fold_bits(op: str, x: int, y: int, w: int, signed: bool, e: ast.Node) -> int:
        mk = mask(w)
        if signed:
            x, y = to_signed(x, w), to_signed(y, w)
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, mk)
        if op in ("/", "%") and y == 0:
            raise err("division by zero", e)
        if op in ("|+|", "|-|"):
            r = max(lo, min(hi, x + y if op == "|+|" else x - y))
        else:
            ops = {
                "+": lambda: x + y,
                "-": lambda: x - y,
                "*": lambda: x * y,
                "&": lambda: x & y,
                "|": lambda: x | y,
                "^": lambda: x ^ y,
                "/": lambda: x // y,
                "%": lambda: x % y,
            }
            if op not in ops:
                raise err(f"unknown operator {op}", e)
            r = ops[op]()
        return r & mk

    def concat(self, a: Val, b: Val, e: ast.Node) -> Val:
        if not (isinstance(a.type, TBits) and isinstance(b.type, TBits)):
            raise err("++ needs bit<N> operands of known width", e)
        wb = b.type.width
        t = TBits(a.type.width + wb, a.type.signed)
        return Val(t, (a.const << wb) | b.const if a.is_const and b.is_const else None)

    def shift(self, a: Val, b: Val, op: str, e: ast.Node) -> Val:
        if isinstance(b.type, TBits) and b.type.signed:
            raise err("shift amount must be unsigned", e)
        if isinstance(a.type, TInt):
            if not (a.is_const and b.is_const):
                raise err("shift of an int needs constant operands", e)
            return Val(INT, a.const << b.const if op == "<<" else a.const >> b.const)
        if not isinstance(a.type, TBits):
            raise err(f"cannot shift a {a.type.show()}", e)
        w = a.type.width
        mk = mask(w)
        if a.is_const and b.is_const:
            if op == "<<":
                return Val(a.type, (a.const << b.const) & mk)
            r = (to_signed(a.const, w) >> b.const) & mk if a.type.signed else a.const >> b.const
            return Val(a.type, r)
        if op == "<<" and b.is_const and b.const >= w:
            return Val(a.type, 0)
        return Val(a.type)

    def cast(self, t: Type, v: Val, e: ast.Node) -> Val:
        vt = v.type
        if isinstance(t, TBits):
            mk = mask(t.width)
            if isinstance(vt, TBool):
                return Val(t, int(v.const) if v.is_const else None)
            if isinstance(vt, TInt):
                return Val(t, int(v.const) & mk if v.is_const else None)
            if isinstance(vt, TEnum) and vt.underlying is not None:
                vt = vt.underlying
            if isinstance(vt, TBits):
                if not v.is_const:
                    return Val(t)
                if vt.signed and t.width > vt.width:
                    return Val(t, to_signed(v.const, vt.width) & mk)
                return Val(t, v.const if t.width >= vt.width else v.const & mk)
            if isinstance(vt, TError):
                return Val(t, v.const)
            raise err(f"cannot cast {vt.show()} to {t.show()}", e)
        if isinstance(t, TBool):
            if isinstance(vt, TBits) and vt.width == 1 or isinstance(vt, TInt):
                return Val(BOOL, bool(v.const) if v.is_const else None)
            if isinstance(vt, TBool):
                return v
            raise err(f"cannot cast {vt.show()} to bool", e)
        if isinstance(t, TInt):
            return Val(INT, v.const)
        if isinstance(t, TEnum):
            if t.underlying is None:
                raise err(f"cannot cast to non-serializable enum {t.name}", e)
            return Val(t, self.cast(t.underlying, v, e).const)
        if isinstance(t, TStruct) and isinstance(vt, TStruct) and vt.name == t.name:
            return v
        raise err(f"cannot cast {vt.show()} to {t.show()}", e)


__all__ = ["Ctx", "ExprChecker", "Val", "eval_cmp"]
