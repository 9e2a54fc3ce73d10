"""Extern calls and instances, typed from their declarations (arch/v1model.p4, core.p4).

An extern function call, an extern method call and an extern instantiation are checked
against the declared signature, generically: the overload with as many parameters as
arguments, each argument against its parameter's type (type parameters bound by the
instance's type arguments, by explicit type arguments, or by the first argument that
fixes them), `out`/`inout` arguments assignable, directionless ones compile-time
constants. What p4sim adds for one extern (a register's cells must be bit<W>, ...) is
that extern's module's `check_*` hook in the registry (p4sim.externs); an extern with
no module, or one p4sim refuses, is refused by name here.
"""

from __future__ import annotations

from p4sim import externs as registry
from p4sim.frontend import ast

from .exprs import Ctx, Val
from .names import Scope, Sym
from .types import VOID, TEnum, TExtern, TTypeVar, Type, err, unsupported


def _refusal(ext: object) -> str | None:
    if isinstance(ext, registry.RefusedExtern):
        return ext.reason
    return None


class ExternChecker:
    """Mixin of `p4sim.check.Checker`: externs."""

    g: Scope

    # ------------------------------------------------------------------ signatures

    def signature(
        self, protos: list[ast.MethodPrototype], nargs: int, what: str, node: ast.Node
    ) -> ast.MethodPrototype:
        """The declared overload taking `nargs` arguments (trailing defaults allowed)."""
        for p in protos:
            required = sum(1 for q in p.params if q.default is None)
            if required <= nargs <= len(p.params):
                return p
        counts = sorted({len(p.params) for p in protos})
        raise err(
            f"{what} takes {' or '.join(map(str, counts))} argument"
            f"{'s' if counts != [1] else ''}, {nargs} given",
            node,
        )

    def extern_args(
        self,
        proto: ast.MethodPrototype,
        tvars: dict[str, Type],
        argv: list[ast.Expression],
        c: ast.Node,
        scope: Scope,
        ctx: Ctx | None,
        type_args: list[ast.Type],
    ) -> Type:
        """Each argument against its declared parameter; the call's (bound) return type."""
        tv = dict(tvars)
        free = [tp.name for tp in proto.type_params]
        for i, name in enumerate(free):
            tv[name] = (
                self.resolve_type(type_args[i], scope) if i < len(type_args) else TTypeVar(name)
            )
        for a, p in zip(argv, proto.params, strict=False):
            pt = self.resolve_type(p.type, self.g, tv)
            if p.direction in ("out", "inout"):
                if ctx is None:
                    raise err("expected a compile-time constant", a)
                if isinstance(a, ast.DontCare):
                    continue
                lt = self.lvalue_type(a, scope, ctx)
                if isinstance(pt, TTypeVar):
                    tv[pt.name] = lt
                else:
                    self.assign(a, Val(pt), scope, ctx)
                continue
            if isinstance(pt, TEnum):
                # p4sim reads an enum argument from its text (`HashAlgorithm.crc16`)
                self.enum_member(a, scope)
            v = self.expr(a, scope, ctx, want=None if isinstance(pt, TTypeVar) else pt)
            if isinstance(pt, TTypeVar):
                tv[pt.name] = v.type
                continue
            v = self.coerce(v, pt, a)
            if not p.direction and not v.is_const and not isinstance(v.type, TEnum):
                raise err("expected a compile-time constant", a)
        rt = proto.return_type
        return VOID if rt is None else self.resolve_type(rt, self.g, tv)

    @staticmethod
    def instance_tvars(t: TExtern) -> dict[str, Type]:
        """The extern's type parameters bound to the instance's type arguments."""
        params = t.decl.type_params if t.decl is not None else []
        return {
            tp.name: t.args[i] if i < len(t.args) else TTypeVar(tp.name)
            for i, tp in enumerate(params)
        }

    # ------------------------------------------------------------------ uses

    def extern_fn(
        self, sym: Sym, argv: list[ast.Expression], c: ast.MethodCall, scope: Scope, ctx: Ctx
    ) -> Val:
        ext = registry.function(sym.name)
        if ext is None:
            raise unsupported(f"extern function {sym.name}", c)
        reason = _refusal(ext)
        if reason is not None:
            raise unsupported(f"extern function {sym.name}" + (f" ({reason})" if reason else ""), c)
        decls = sym.extra.get("overloads", [sym.decl])
        proto = self.signature([d.proto for d in decls], len(argv), sym.name, c)
        rt = self.extern_args(proto, {}, argv, c, scope, ctx, c.type_args)
        if not registry.lowers(ext, "call"):
            raise unsupported(f"extern function {sym.name}", c)
        ext.check_call(self, sym.name, argv, c, scope, ctx)
        return Val(rt)

    def extern_method(
        self,
        t: TExtern,
        m: str,
        argv: list[ast.Expression],
        c: ast.MethodCall,
        scope: Scope,
        ctx: Ctx,
    ) -> Val:
        decl = t.decl
        protos = [
            p
            for p in (decl.methods if decl is not None else [])
            if p.name == m and not p.is_constructor
        ]
        if not protos:
            raise err(f"{t.name} has no method {m}", c)
        proto = self.signature(protos, len(argv), f"{t.name}.{m}", c)
        tvars = self.instance_tvars(t)
        rt = self.extern_args(proto, tvars, argv, c, scope, ctx, c.type_args)
        ext = registry.lookup(t.name)
        if ext is None or not registry.lowers(ext, "method"):
            raise unsupported(f"method {m} of extern {t.name}", c)
        ext.check_method(self, t, m, argv, c, scope, ctx)
        return Val(rt)

    def extern_instance(self, d: ast.Instantiation, t: TExtern, scope: Scope) -> None:
        ext = registry.lookup(t.name)
        if ext is None:
            raise unsupported(f"extern {t.name}", d)
        reason = _refusal(ext)
        if reason is not None:
            raise unsupported(f"{t.name} ({reason})" if reason else f"extern {t.name}", d)
        decl = t.decl
        ctors = [p for p in (decl.methods if decl is not None else []) if p.is_constructor]
        args = [a.value for a in d.args]
        if decl is not None and decl.type_params and not t.args:
            names = ", ".join(tp.name for tp in decl.type_params)
            raise err(
                f"{t.name} needs its type argument{'s' if len(decl.type_params) > 1 else ''}: "
                f"{t.name}<{names}>(...)",
                d,
            )
        if not ctors:  # packet_in, packet_out: made by the architecture, never by a program
            raise err(f"{t.name} declares no constructor: it cannot be instantiated", d)
        proto = self.signature(ctors, len(args), f"{t.name}'s constructor", d)
        self.extern_args(proto, self.instance_tvars(t), args, d, scope, None, [])
        if not registry.lowers(ext, "instantiate"):
            raise unsupported(f"extern {t.name}", d)
        ext.check_instance(self, d, t, scope)
