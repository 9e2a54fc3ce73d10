"""Calls: actions and functions (argument count, direction, lvalue-ness), table and block
applies, header/stack methods, externs, and `switch`."""

from __future__ import annotations

from p4sim.frontend import ast

from .blocks import body_key
from .exprs import Ctx, Val
from .names import Scope, Sym
from .types import (
    BOOL,
    INT,
    VOID,
    TBits,
    TBool,
    TExtern,
    TNamedBlock,
    TStack,
    TStruct,
    TTuple,
    TVarbit,
    Type,
    err,
    unsupported,
    width_of,
)


def positional_call(c: ast.MethodCall, scope: Scope) -> ast.MethodCall:
    """`f(y = 1, x = 2)` of an action, function, extern function or extern method, as the
    positional call it stands for (p4c CheckNamedArgs: all arguments named or none, each
    parameter once; an overloaded extern is chosen by its parameter names). Lowering calls
    this too, on calls checked here."""
    if not all(a.name for a in c.args):
        raise err("either all arguments are named or none is", c)
    target = named_call_target(c, scope)
    if target is None:
        raise unsupported(
            "named arguments here (p4sim takes them for actions, functions and externs)", c
        )
    what, overloads, is_extern = target
    names = [a.name for a in c.args]
    for a in c.args:
        if names.count(a.name) > 1:
            raise err(f"argument '{a.name}' is given twice", a)
    fits = [
        ps
        for ps in overloads
        if set(names) <= {p.name for p in ps}
        and all(p.name in names or p.default is not None for p in ps)
    ]
    if len(fits) > 1:
        raise err(
            f"call to {what} is ambiguous: {len(fits)} overloads take these argument names", c
        )
    params = fits[0] if fits else overloads[0]
    given: dict[str, ast.Argument] = {}
    for a in c.args:
        if a.name not in {p.name for p in params}:
            raise err(f"{what} has no parameter '{a.name}'", a)
        given[a.name] = a  # type: ignore[index]
    args: list[ast.Argument] = []
    for i, p in enumerate(params):
        if p.name in given:
            args.append(ast.Argument(given[p.name].value, span=given[p.name].span))
        elif p.default is None:
            raise err(f"no argument for parameter '{p.name}' of {what}", c)
        elif is_extern or any(q.name in given for q in params[i + 1 :]):
            # extern hooks read their arguments by position: pass every default;
            # an action or function takes defaults only for trailing parameters
            args.append(ast.Argument(p.default, span=c.span))
    return ast.MethodCall(c.callee, args, c.type_args, span=c.span)


def named_call_target(c: ast.MethodCall, scope: Scope) -> tuple[str, list[list], bool] | None:
    """(name, parameter lists of its overloads, is an extern) of a call's callee."""
    callee = c.callee
    if isinstance(callee, ast.Name):
        sym = scope.lookup(callee.name)
        if sym is None:
            return None
        if sym.kind in ("action", "function") and "overloads" not in sym.extra:
            return sym.name, [sym.decl.params], False  # type: ignore[union-attr]
        if sym.kind == "extern_fn":
            decls = sym.extra.get("overloads", [sym.decl])
            return sym.name, [d.proto.params for d in decls], True
        return None
    if isinstance(callee, ast.Member) and isinstance(callee.expr, ast.Name):
        sym = scope.lookup(callee.expr.name)
        t = sym.type if sym is not None and sym.kind == "instance" else None
        if isinstance(t, TExtern) and t.decl is not None:
            methods = [
                m for m in t.decl.methods if m.name == callee.member and not m.is_constructor
            ]
            if methods:
                return f"{t.name}.{callee.member}", [m.params for m in methods], True
    return None


class CallChecker:
    """Mixin of `p4sim.check.Checker`: calls."""

    g: Scope
    meta_type: TStruct | None
    checked_bodies: set[int]

    # ------------------------------------------------------------------ helpers

    def table_of(self, e: ast.Expression, scope: Scope) -> Sym:
        if isinstance(e, ast.Name):
            sym = self.names[id(e)] = scope.resolve(e.name, e, top_level=e.top_level)  # type: ignore[attr-defined]
            if sym.kind == "table":
                return sym
        raise err("expected a table", e)

    def enum_member(self, e: ast.Expression, scope: Scope) -> str:
        """An enum-valued extern argument (`HashAlgorithm.crc16`, `CounterType.packets`)."""
        if not isinstance(e, ast.Member):
            raise err("expected an enum member such as CounterType.packets", e)
        self.expr(e, scope, None)
        return e.member

    def static_assert(self, c: ast.MethodCall, scope: Scope) -> Val | None:
        """core.p4's `static_assert(check[, message])`: evaluated at compile time; a false
        check stops compilation at the call (P4_16 spec, "Static assertions")."""
        callee = c.callee
        if not (isinstance(callee, ast.Name) and callee.name == "static_assert"):
            return None
        sym = scope.lookup("static_assert")
        if sym is None or sym.kind != "extern_fn":
            return None
        self.names[id(callee)] = sym  # type: ignore[attr-defined]
        if not 1 <= len(c.args) <= 2:
            raise err("static_assert takes a condition and an optional message", c)
        vals = [self.expr(a.value, scope, None) for a in c.args]
        if not all(v.is_const for v in vals):
            raise err("static_assert needs compile-time constant arguments", c)
        if not isinstance(vals[0].type, TBool):
            raise err("the condition of static_assert must be a bool", c.args[0].value)
        if not vals[0].const:
            raise err(str(vals[1].const) if len(vals) == 2 else "static_assert failed", c)
        return Val(BOOL, True)

    def positional_call(self, c: ast.MethodCall, scope: Scope) -> ast.MethodCall:
        return positional_call(c, scope)

    # ------------------------------------------------------------------ calls

    def call(self, c: ast.MethodCall, scope: Scope, ctx: Ctx, want: Type | None = None) -> Val:
        v = self._call(c, scope, ctx, want)
        c.checked_type = v.type
        return v

    def _call(self, c: ast.MethodCall, scope: Scope, ctx: Ctx, want: Type | None = None) -> Val:
        sa = self.static_assert(c, scope)
        if sa is not None:
            return sa
        callee = c.callee
        if any(a.name for a in c.args):
            # one positional form per call (every instance, and lowering, read the same nodes)
            c = self.positional.setdefault(id(c), self.positional_call(c, scope))  # type: ignore[attr-defined]
        argv = [a.value for a in c.args]
        if isinstance(callee, ast.Member):
            m, base = callee.member, callee.expr
            if m == "apply":
                return self.apply_call(c, base, scope, ctx)
            obj = self.expr(base, scope, ctx)
            ot = obj.type
            if isinstance(ot, TStruct) and ot.kind == "header":
                if m == "isValid":
                    return Val(BOOL)
                if m in ("setValid", "setInvalid"):
                    if m == "setValid" and isinstance(base, ast.Member):
                        self.expr(base.expr, scope, ctx)
                    return Val(VOID)
                if m in ("minSizeInBits", "minSizeInBytes"):
                    w = width_of(ot)
                    return Val(INT, w if m.endswith("Bits") else w // 8)
            if isinstance(ot, TStruct) and ot.kind == "union" and m == "isValid":
                return Val(BOOL)
            if isinstance(ot, TStack) and m in ("push_front", "pop_front"):
                self.expr(argv[0], scope, ctx)
                return Val(VOID)
            if isinstance(ot, TExtern):
                return self.extern_method(ot, m, argv, c, scope, ctx)
            raise err(f"{ot.show()} has no method '{m}'", callee)
        if not isinstance(callee, ast.Name):
            raise unsupported("this call form", c)
        sym = self.names[id(callee)] = scope.resolve(
            callee.name,
            callee,  # type: ignore[attr-defined]
            top_level=callee.top_level,
        )
        if sym.kind in ("action", "function"):
            return self.callable_call(sym, c, scope, ctx)
        if sym.kind == "extern_fn":
            return self.extern_fn(sym, argv, c, scope, ctx)
        raise err(f"'{callee.name}' cannot be called", callee)

    def apply_call(self, c: ast.MethodCall, base: ast.Expression, scope: Scope, ctx: Ctx) -> Val:
        bsym = (
            scope.resolve(base.name, base, top_level=base.top_level)
            if isinstance(base, ast.Name)
            else None
        )
        if bsym is not None:
            self.names[id(base)] = bsym  # type: ignore[attr-defined]
            base.checked_type = bsym.type or TNamedBlock(bsym.kind, bsym.name)
        if bsym is not None and bsym.kind == "table":
            return Val(TNamedBlock("apply_result", bsym.name))
        if bsym is not None and bsym.kind == "instance" and bsym.value == "control":
            return self.control_call(bsym, c, scope, ctx)
        if bsym is not None and bsym.kind == "instance" and bsym.value == "parser":
            if not ctx.in_parser:
                raise err("a parser can only be applied inside a parser", c)
            pdecl: ast.ParserDecl = bsym.type.decl  # type: ignore[union-attr,assignment]
            if len(c.args) != len(pdecl.params):
                raise err(f"parser {pdecl.name} takes {len(pdecl.params)} arguments", c)
            for a, p in zip(c.args[1:], pdecl.params[1:], strict=True):
                pt = self.resolve_type(p.type, self.g)
                scalar_out = p.direction in ("out", "inout") and not isinstance(
                    pt, (TStruct, TStack)
                )
                if not (p.direction == "out" and scalar_out):
                    self.expr(a.value, scope, ctx, want=pt)
                if scalar_out:
                    self.assign(a.value, Val(pt), scope, ctx)
            return Val(VOID)
        raise err("only tables and control instances can be applied", c.callee)

    def control_call(self, sym: Sym, c: ast.MethodCall, scope: Scope, ctx: Ctx) -> Val:
        d: ast.ControlDecl = sym.type.decl  # type: ignore[union-attr,assignment]
        if len(c.args) != len(d.params):
            raise err(f"control {d.name} takes {len(d.params)} arguments", c)
        for a, p in zip(c.args, d.params, strict=True):
            pt = self.resolve_type(p.type, self.g)
            if isinstance(pt, TExtern) and pt.name in ("packet_in", "packet_out"):
                raise unsupported("passing packets to a sub-control", a.value)
            scalar = not isinstance(pt, (TStruct, TStack))
            if isinstance(a.value, ast.DontCare) or p.direction == "out" and scalar:
                if p.direction == "out" and not isinstance(a.value, ast.DontCare):
                    self.assign(a.value, Val(pt), scope, ctx)
                continue
            self.coerce(self.expr(a.value, scope, ctx, want=pt), pt, a.value)
            if p.direction in ("out", "inout") and scalar:
                self.assign(a.value, Val(pt), scope, ctx)
        return Val(VOID)

    def callable_call(self, sym: Sym, c: ast.MethodCall, scope: Scope, ctx: Ctx) -> Val:
        """A direct call of an action or function: arity, each argument against its
        parameter (in: a value of the type; out/inout: an assignable place)."""
        decl = sym.decl
        if "overloads" in sym.extra:
            decl = next((d for d in sym.extra["overloads"] if len(d.params) == len(c.args)), decl)
            sym = Sym(sym.kind, sym.name, decl, scope=sym.scope, value=sym.value)
        params = decl.params  # type: ignore[union-attr]
        argv = [a.value for a in c.args]
        required = sum(1 for p in params if p.default is None)
        if not required <= len(argv) <= len(params):
            raise err(
                f"{sym.kind} {sym.name} takes {len(params)} argument"
                f"{'s' if len(params) != 1 else ''}, {len(argv)} given",
                c,
            )
        dscope = sym.scope or self.g
        vals: list[Val] = []
        for a, p in zip(argv, params, strict=False):
            if isinstance(a, ast.DontCare) or p.direction == "out":
                vals.append(Val(VOID))
            else:
                vals.append(self.expr(a, scope, ctx, want=self.resolve_type(p.type, dscope)))
        self.bind_args(sym, vals, c.args, scope, ctx)
        if body_key(sym) not in self.checked_bodies:
            self.check_callable(sym)
        self.check_sm_use(sym, ctx)
        if isinstance(decl, ast.FunctionDecl):
            return Val(self.resolve_type(decl.return_type, dscope))
        return Val(VOID)

    def bind_args(
        self,
        sym: Sym,
        vals: list[Val],
        arg_nodes: list[ast.Argument | None],
        scope: Scope,
        ctx: Ctx,
    ) -> None:
        """Arguments against the parameters of an action or function (defaults for the
        missing trailing ones; out/inout ones must be assignable)."""
        d = sym.decl
        dscope = sym.scope or self.g
        for i, p in enumerate(d.params):  # type: ignore[union-attr]
            pt = self.resolve_type(p.type, dscope)
            a = vals[i] if i < len(vals) else None
            an = arg_nodes[i] if i < len(arg_nodes) else None
            node = an.value if an is not None else None
            if p.direction != "out" and a is None:
                if p.default is None:
                    raise err(f"missing argument '{p.name}'", node or d)
                a = self.expr(p.default, dscope, ctx, want=pt)
            if a is not None and p.direction != "out":
                self.coerce(a, pt, node or d)
            if (
                p.direction in ("out", "inout")
                and node is not None
                and not isinstance(node, ast.DontCare)
            ):
                self.assign(node, Val(self.lvalue_type(node, scope, ctx)), scope, ctx)

    def check_sm_use(self, sym: Sym, ctx: Ctx) -> None:
        """A top-level action or function whose body needs the standard metadata in scope,
        used here (a call, a table's action)."""
        need = sym.extra.get("needs_sm")
        if need is not None:
            self.need_standard_metadata(need[0], ctx, need[1])

    # ------------------------------------------------------------------ switch

    def switch(self, s: ast.SwitchStatement, scope: Scope, ctx: Ctx) -> None:
        e = s.expr
        if isinstance(e, ast.Member) and e.member == "action_run":
            if not (
                isinstance(e.expr, ast.MethodCall)
                and isinstance(e.expr.callee, ast.Member)
                and e.expr.callee.member == "apply"
            ):
                raise err("switch on action_run needs `table.apply().action_run`", e)
            tsym = self.table_of(e.expr.callee.expr, scope)
            e.expr.callee.expr.checked_type = TNamedBlock("table", tsym.name)
            e.expr.checked_type = e.checked_type = TNamedBlock("apply_result", tsym.name)
            syms: list[Sym] = tsym.extra["action_syms"]
            for case in s.cases:
                if not isinstance(case.label, ast.DefaultKeyset):
                    if not isinstance(case.label, ast.Name):
                        raise err("action_run case labels are action names", case.label)
                    asym = self.names[id(case.label)] = scope.resolve(  # type: ignore[attr-defined]
                        case.label.name, case.label
                    )
                    if not any(x is asym for x in syms):
                        raise err(
                            f"action '{case.label.name}' is not an action of the table", case.label
                        )
                if case.body is not None:
                    self.body(case.body, scope, ctx)
            return
        n = self.run_time_indexes  # type: ignore[attr-defined]
        v = self.expr(e, scope, ctx)
        if self.run_time_indexes != n:  # type: ignore[attr-defined]
            self.run_time_index_stmts.add(id(s))  # type: ignore[attr-defined]
        for case in s.cases:
            if not isinstance(case.label, ast.DefaultKeyset):
                self.coerce(self.expr(case.label, scope, ctx, want=v.type), v.type, case.label)
            if case.body is not None:
                self.body(case.body, scope, ctx)

    # ------------------------------------------------------------------ externs

    def field_list(self, e: ast.Expression, scope: Scope, ctx: Ctx) -> None:
        """The data of a hash or checksum: every element must have a bit width (headers and
        structs are flattened into their fields)."""
        elems = e.elements if isinstance(e, ast.ListExpression) else [e]

        def check(t: Type, node: ast.Node) -> None:
            if isinstance(t, TStruct):
                for _, ft in t.fields:
                    check(ft, node)
            elif not isinstance(t, TVarbit) and not width_of(t):
                raise err(f"cannot put a {t.show()} in a field list", node)

        types = []
        for el in elems:
            types.append(self.expr(el, scope, ctx).type)
            check(types[-1], el)
        if isinstance(e, ast.ListExpression):
            e.checked_type = TTuple(types)

    def listed_fields(self, e: ast.Expression, scope: Scope) -> None:
        """The deprecated forms (`resubmit(data)`, `recirculate(data)`, `clone3(t, s, data)`)
        keep user-metadata fields only."""
        for el in e.elements if isinstance(e, ast.ListExpression) else [e]:
            x = el
            while isinstance(x, ast.Member):
                x = x.expr
            sym = scope.lookup(x.name) if isinstance(x, ast.Name) else None
            if sym is not None:
                self.names[id(x)] = sym  # type: ignore[attr-defined]
            if sym is None or sym.kind != "var" or sym.type is not self.meta_type:
                raise unsupported("preserving anything but user metadata fields", el)

    def extern_method(
        self,
        t: TExtern,
        m: str,
        argv: list[ast.Expression],
        c: ast.MethodCall,
        scope: Scope,
        ctx: Ctx,
    ) -> Val:
        # the packet's own methods: what the language says of a header to extract or emit
        if t.name == "packet_in":
            self.packet_in_method(m, argv, c, scope, ctx)
        elif t.name == "packet_out":
            if m != "emit":
                raise err(f"packet_out has no method {m}", c)
            self.emit_arg(self.expr(argv[0], scope, ctx).type, argv[0])
        return super().extern_method(t, m, argv, c, scope, ctx)  # type: ignore[misc]

    def need_standard_metadata(self, c: ast.Node, ctx: Ctx, what: str) -> None:
        """An extern use that acts on the standard metadata in scope (the deprecated
        `mark_to_drop()`): refused where there is none; in a top-level action or function
        it is checked where that is called (`check_sm_use`)."""
        if ctx.sm:
            return
        if ctx.block == "global":
            ctx.extra.setdefault("needs_sm", (c, what))
            return
        raise unsupported(what, c)

    def emit_arg(self, t: Type, node: ast.Node) -> None:
        """packet_out.emit takes a header, a stack, or a struct/union of those."""
        if isinstance(t, TStruct):
            if t.kind != "header":
                for _, ft in t.fields:
                    self.emit_arg(ft, node)
            return
        if isinstance(t, TStack):
            return
        raise err(f"emit needs a header, stack or struct of headers, not {t.show()}", node)

    def packet_in_method(
        self, m: str, argv: list[ast.Expression], c: ast.MethodCall, scope: Scope, ctx: Ctx
    ) -> Val:
        if m == "extract":
            if len(argv) not in (1, 2):
                raise err("extract takes a header (and a varbit length)", c)
            target = argv[0]
            if isinstance(target, ast.DontCare):
                # `extract<T>(_)` skips a T: p4c's DontcareArgs (frontends/p4/dontcareArgs.cpp)
                # makes `_` a fresh temporary of the out parameter's type, here T
                if not c.type_args:
                    raise err("cannot infer the header type of _: write extract<T>(_)", target)
                ht = self.resolve_type(c.type_args[0], scope)
            else:
                ht = self.expr(target, scope, ctx).type
            if len(argv) == 2:
                self.expr(argv[1], scope, ctx)
            if (
                isinstance(target, ast.Member)
                and target.member == "next"
                and isinstance(target.expr.checked_type, TStack)
            ):
                return Val(VOID)
            if not (isinstance(ht, TStruct) and ht.kind == "header"):
                raise err(f"extract needs a header, not {ht.show()}", target)
            if len(argv) == 1 and any(isinstance(ft, TVarbit) for _, ft in ht.fields):
                raise err("extract of a header with a varbit field needs the length", c)
            return Val(VOID)
        if m == "lookahead":
            if not c.type_args:
                raise err("lookahead needs a type: lookahead<T>()", c)
            t = self.resolve_type(c.type_args[0], scope)
            if isinstance(t, TStruct) and t.kind == "header":
                if any(isinstance(ft, TVarbit) for _, ft in t.fields):
                    # P4_16 spec (packet_in.lookahead): T must have a fixed width
                    raise err(
                        f"lookahead needs a fixed-width type; {t.show()} has a varbit field", c
                    )
                return Val(t)
            if isinstance(t, TStruct) and t.kind == "struct" and _fixed_bits_struct(t):
                return Val(t)  # p4c: any fixed-width type (issue1768-bmv2: a struct of bit<N>)
            if not isinstance(t, TBits):
                raise unsupported(f"lookahead of {t.show()}", c)
            return Val(t)
        if m == "advance":
            self.expr(argv[0], scope, ctx)
            return Val(VOID)
        if m == "length":
            return Val(TBits(32))
        raise err(f"packet_in has no method {m}", c)


def _fixed_bits_struct(t: TStruct) -> bool:
    """A struct whose fields are bit<N>, int<N>, bool or such structs (nothing varbit, no header)."""
    return all(
        isinstance(ft, (TBits, TBool))
        or (isinstance(ft, TStruct) and ft.kind == "struct" and _fixed_bits_struct(ft))
        for _, ft in t.fields
    )
