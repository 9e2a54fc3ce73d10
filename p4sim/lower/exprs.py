"""Expression lowering: method and function calls (controls, actions, externs), then
expressions (members, operators, casts, lazy and/or). Each reads its type from check.
A part of `codegen.Compiler` (a mixin: it uses the compiler's state and the other parts)."""

from __future__ import annotations

from p4sim import externs as registry
from p4sim.check.names import Sym
from p4sim.check.types import (
    BOOL,
    INT,
    VOID,
    TBits,
    TBool,
    TEnum,
    TExtern,
    TInt,
    TNamedBlock,
    TStack,
    TStruct,
    TVarbit,
    TVoid,
    Type,
    mask,
    width_of,
)
from p4sim.frontend import ast
from p4sim.frontend.errors import LoweringError as LoweringError  # re-exported: tests, callers
from p4sim.frontend.errors import bug
from p4sim.spec import TableSpec

from .env import Env
from .values import (
    _PURE_KEY,
    V,
    _Fn,
    fld,
    vbw,
)


class ExprLowering:
    """Calls and expressions: methods of `codegen.Compiler`."""

    # ======================================================================= calls

    def table_of(self, e: ast.Expression, scope: Env) -> Sym:
        if isinstance(e, ast.Name):
            sym = self.sym(e, scope)
            if sym.kind == "table":
                return sym
        raise bug("expected a table", e)

    def table_apply(self, tsym: Sym, scope: Env, fn: _Fn) -> tuple[str, str]:
        spec: TableSpec = tsym.value
        self.applied_tables.add(spec.info.name)
        tscope: Env = tsym.extra["scope"]
        keys = [self.expr(k, tscope, fn) for k in tsym.extra["keys"]]
        kcodes = []
        for k in keys:
            c = k.code
            if isinstance(k.type, TBool):
                c = f"int({c})"
            kcodes.append(c)
        hit = fn.tmp("hit")
        aid = fn.tmp("aid")
        r = fn.tmp("r")
        kt = "(" + ", ".join(kcodes) + ("," if len(kcodes) == 1 else "") + ")"
        kinds = {k.match_kind for k in spec.info.keys}
        if len(kcodes) == 1 and kinds == {"exact"}:
            look = f"{spec.py}.exact1_get({kcodes[0]})"
        elif not kinds or kinds == {"exact"}:
            look = f"{spec.py}.exact_get({kt})"
        elif len(kcodes) == 1 and kinds == {"lpm"}:
            look = f"{spec.py}.lookup1({kcodes[0]})"
        else:
            look = f"{spec.py}.lookup({kt})"
        if all(_PURE_KEY.match(k) for k in kcodes):
            # an empty table misses without building its key: many tables of a program are
            # empty in a given deployment (keys that cannot raise only: no index, no division)
            look = f"{look} if {spec.py}.recs else None"
        fn.emit(f"{r} = {look}")
        fn.emit(f"if {r} is None:")
        fn.emit(f"    {r} = {spec.py}.default")
        fn.emit(f"    {hit} = False")
        fn.emit("else:")
        fn.emit(f"    {hit} = True")
        if spec.direct_counter:
            fn.emit(f"    {r}.pkts += 1")
            fn.emit(f"    {r}.bytes += _RT.plen")
        if spec.direct_meter:
            dm_py = next(x.py for x in self.externs if x.name == spec.direct_meter)
            fn.emit(f"    _RT.dm_color[{dm_py!r}] = _RT.direct_meter({spec.py}, {r})")
        if spec.implementation:
            # an indirect entry's `args` is its member or group (p4sim.runtime.action_profile):
            # a group hashes the selector keys (packed as hash() packs a field list) to pick
            tgt = fn.tmp("tgt")
            fn.emit(f"    {tgt} = {r}.args")
            if tsym.extra["with_selector"]:
                data = (
                    self.data_pack(ast.ListExpression(list(tsym.extra["selector"])), tscope, fn)
                    if tsym.extra["selector"]
                    else "b''"
                )
                fn.emit(
                    f"    {r} = {tgt}.recs[{spec.py}.slot] if {tgt}.is_member else "
                    f"{tgt}.pick({data}, {spec.py}.slot)"
                )
            else:
                fn.emit(f"    {r} = {tgt}.recs[{spec.py}.slot]")
        fn.emit(f"{aid} = {r}.aid")
        syms: list[Sym] = tsym.extra["action_syms"]
        for i, asym in enumerate(syms):
            fn.emit(f"{'if' if i == 0 else 'elif'} {aid} == {i}:")
            fn.ind += 1
            start = len(fn.lines)
            adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
            bound: list[ast.Argument] = tsym.extra["bound"][i]
            if not bound:
                args = [V(f"{r}.args[{j}]", INT) for j in range(len(adecl.params))]
                self.inline_action(asym, args, None, scope, fn, from_table=True)
            else:
                # arguments bound in `actions = { a(x); }`, then the control-plane ones
                vals: list[V] = []
                nodes: list[ast.Argument | None] = []
                for j, p in enumerate(adecl.params):
                    pt = self.resolve_type(p.type, asym.scope or scope)
                    if j < len(bound):
                        vals.append(
                            V("None", VOID)
                            if p.direction == "out"
                            else self.expr(bound[j].value, tscope, fn)
                        )
                        nodes.append(bound[j])
                    else:
                        vals.append(V(f"{r}.args[{j - len(bound)}]", pt))
                        nodes.append(None)
                self.inline_action(asym, vals, nodes, tscope, fn)
            if len(fn.lines) == start:
                fn.emit("pass")
            fn.ind -= 1
        return hit, aid

    def inline_action(
        self,
        asym: Sym,
        args: list[V],
        arg_nodes: list[ast.Argument | None] | None,
        scope: Env,
        fn: _Fn,
        from_table: bool = False,
    ) -> str | None:
        """Inline an action or function body; returns the Python var holding a function's result."""
        d = asym.decl
        assert isinstance(d, (ast.ActionDecl, ast.FunctionDecl))
        if not from_table and asym.kind == "action" and not fn.in_action:
            # an action called directly from a control stays a declaration after p4c's front
            # end (only its call is inlined), so P4Info lists it: a control's own, and a
            # top-level one under its global name (p4c localizes it keeping that name,
            # frontends/p4/localizeActions.cpp; sample issue1937-1-bmv2); one
            # called only from another action's body is not listed (p4c's InlineActions
            # inlines it there and RemoveAllUnusedDeclarations then drops it)
            self.register_action(asym, d, called=True)  # type: ignore[arg-type]
            self.action_users.setdefault(self.action_cp_name(asym), set()).add(None)
        dscope = self.body_env(asym)
        inner = Env(dscope)
        copy_back: list[tuple[ast.Expression, str, Env]] = []
        for i, p in enumerate(d.params):
            pt = self.resolve_type(p.type, dscope)
            py = "a_" + self.uid(p.name)
            if from_table:
                fn.emit(f"{py} = {args[i].code}")
            else:
                a = args[i] if i < len(args) else None
                an = arg_nodes[i] if arg_nodes and i < len(arg_nodes) else None
                node = an.value if an is not None else None
                if p.direction == "out":
                    fn.emit(f"{py} = {self.default_value(pt)}")
                elif a is None:  # check gave every parameter without a default an argument
                    a = self.expr(p.default, dscope, fn)  # type: ignore[arg-type]
                if a is not None and p.direction != "out":
                    a = self.convert(a, pt)
                    fn.emit(f"{py} = {self.copy_code(a)}")
                if (
                    p.direction in ("out", "inout")
                    and node is not None
                    and not isinstance(node, ast.DontCare)
                ):
                    copy_back.append((node, py, scope))
            inner.add(Sym("var", p.name, p, pt, py=py, extra={"dir": p.direction or "in"}))
        rv = None
        if isinstance(d, ast.FunctionDecl):
            rt = self.resolve_type(d.return_type, dscope)
            if not isinstance(rt, TVoid):
                rv = fn.tmp("ret")
                fn.emit(f"{rv} = {self.default_value(rt)}")
        has_return = self.checked.has_return(d.body)
        if copy_back:
            # copy-out happens however the body ends, `exit` included (P4 spec)
            fn.emit("try:")
            fn.ind += 1
        if has_return:
            fn.emit("for _ in ONCE:")
            fn.ind += 1
            fn.once_stack.append(V(rv, rt) if rv is not None else None)
        saved_parser, saved_loops = fn.in_parser, fn.loops
        fn.in_parser = False if isinstance(d, ast.ActionDecl) else fn.in_parser
        fn.loops = []  # break/continue/return inside the body belong to the body
        start = len(fn.lines)
        is_action = isinstance(d, ast.ActionDecl)
        fn.in_action += is_action
        self.block(d.body, inner, fn)
        fn.in_action -= is_action
        if len(fn.lines) == start:
            fn.emit("pass")
        fn.in_parser, fn.loops = saved_parser, saved_loops
        if has_return:
            fn.once_stack.pop()
            fn.ind -= 1
        if copy_back:
            fn.ind -= 1
            fn.emit("finally:")
            fn.ind += 1
        for node, py, sc in copy_back:
            self.assign(node, V(py, self.lvalue_type(node, sc, fn)), sc, fn)
        if copy_back:
            fn.ind -= 1
        return rv

    def positional_call(self, c: ast.MethodCall) -> ast.MethodCall:
        """Named arguments as the positional call check made of them (p4sim.check.calls)."""
        pc = self.checked.positional.get(id(c))
        if pc is None:
            raise bug("a call with named arguments the checker never saw", c)
        return pc

    def static_assert(self, c: ast.MethodCall) -> V | None:
        """core.p4's `static_assert(...)`: check evaluated it (a false one stops there)."""
        callee = c.callee
        if not (isinstance(callee, ast.Name) and callee.name == "static_assert"):
            return None
        sym = self.checked.names.get(id(callee))
        if sym is None or sym.kind != "extern_fn":
            return None
        return V("True", BOOL, True)

    def call(self, c: ast.MethodCall, scope: Env, fn: _Fn, stmt: bool = False) -> V:
        sa = self.static_assert(c)
        if sa is not None:
            return sa
        callee = c.callee
        if any(a.name for a in c.args):
            c = self.positional_call(c)
        argv = [a.value for a in c.args]
        # ---- methods: x.m(...)
        if isinstance(callee, ast.Member):
            m = callee.member
            base = callee.expr
            # table.apply()
            if m == "apply":
                bsym = None
                if isinstance(base, ast.Name):
                    bsym = self.sym(base, scope)
                if bsym is not None and bsym.kind == "table":
                    hit, aid = self.table_apply(bsym, scope, fn)
                    return V(hit, TNamedBlock("apply_result", bsym.name), const=None)
                if bsym is not None and bsym.kind == "instance" and bsym.value == "control":
                    return self.call_control(bsym, c, scope, fn)
                if bsym is not None and bsym.kind == "instance" and bsym.value == "parser":
                    pdecl: ast.ParserDecl = bsym.type.decl  # type: ignore[union-attr,assignment]
                    codes = []
                    backs = []
                    for a, p in zip(c.args[1:], pdecl.params[1:], strict=True):
                        pt = self.resolve_type(p.type, self.g)
                        scalar_out = p.direction in ("out", "inout") and not isinstance(
                            pt, (TStruct, TStack)
                        )
                        if scalar_out:
                            backs.append((a.value, pt))
                        if p.direction == "out" and scalar_out:
                            codes.append(self.default_value(pt))
                        else:
                            codes.append(self.expr(a.value, scope, fn).code)
                    call = f"{bsym.py}({', '.join(['buf', 'off'] + codes)})"
                    if backs:
                        res = fn.tmp("pr")
                        fn.emit(f"{res} = {call}")
                        fn.emit(f"off = {res}[0]")
                        for k, (node, pt) in enumerate(backs):
                            self.assign(node, V(f"{res}[{k + 1}]", pt), scope, fn)
                    else:
                        fn.emit(f"off = {call}")
                    return V("None", VOID)
                raise bug("only tables and control instances can be applied", callee)
            obj = self.expr(base, scope, fn)
            ot = obj.type
            if isinstance(ot, TStruct) and ot.kind == "header":
                if m == "isValid":
                    return V(f"{obj.code}._v", BOOL)
                if m == "setValid":
                    fn.emit(f"{obj.code}._v = True")
                    self.union_invalidate(base, scope, fn)
                    return V("None", VOID)
                if m == "setInvalid":
                    fn.emit(f"{obj.code}._v = False")
                    return V("None", VOID)
                if m in ("minSizeInBits", "minSizeInBytes"):
                    w = width_of(ot)
                    return V(
                        str(w if m.endswith("Bits") else w // 8),
                        INT,
                        w if m.endswith("Bits") else w // 8,
                    )
            if isinstance(ot, TStruct) and ot.kind == "union" and m == "isValid":
                return V(
                    "(" + " or ".join(f"{obj.code}.{fld(f)}._v" for f, _ in ot.fields) + ")", BOOL
                )
            if isinstance(ot, TStack) and m in ("push_front", "pop_front"):
                n = self.expr(argv[0], scope, fn)
                fn.emit(f"{obj.code}.{m}({n.code})")
                return V("None", VOID)
            if isinstance(ot, TExtern):
                return self.extern_method(obj, ot, m, argv, c, scope, fn)
            raise bug(f"{ot.show()} has no method '{m}'", callee)
        if not isinstance(callee, ast.Name):
            raise bug("this call form", c)
        sym = self.sym(callee, scope)
        if sym.kind in ("action", "function"):
            decl = sym.decl
            if "overloads" in sym.extra:
                decl = next((d for d in sym.extra["overloads"] if len(d.params) == len(argv)), decl)
                sym = Sym(sym.kind, sym.name, decl, scope=sym.scope, value=sym.value)
            vals = []
            for a, p in zip(argv, decl.params, strict=False):  # type: ignore[union-attr]
                if isinstance(a, ast.DontCare) or p.direction == "out":
                    vals.append(V("None", VOID))
                else:
                    vals.append(self.expr(a, scope, fn))
            rv = self.inline_action(sym, vals, c.args, scope, fn)
            if isinstance(decl, ast.FunctionDecl):
                rt = self.resolve_type(decl.return_type, sym.scope or scope)
                return V(rv or "None", rt)
            return V("None", VOID)
        if sym.kind == "extern_fn":
            return self.extern_fn(sym, argv, c, scope, fn)
        raise bug(f"'{callee.name}' cannot be called", callee)

    def union_invalidate(self, base: ast.Expression, scope: Env, fn: _Fn) -> None:
        if isinstance(base, ast.Member):
            parent = self.expr(base.expr, scope, fn)
            if isinstance(parent.type, TStruct) and parent.type.kind == "union":
                for other, _ in parent.type.fields:
                    if other != base.member:
                        fn.emit(f"{parent.code}.{fld(other)}._v = False")

    def call_control(self, sym: Sym, c: ast.MethodCall, scope: Env, fn: _Fn) -> V:
        t: TNamedBlock = sym.type  # type: ignore[assignment]
        d: ast.ControlDecl = t.decl  # type: ignore[assignment]
        pys, body, outs = self.inline_bodies[sym.py]
        backs = []
        for a, p, py in zip(c.args, d.params, pys, strict=True):
            pt = self.resolve_type(p.type, self.g)
            if (
                isinstance(a.value, ast.DontCare)
                or p.direction == "out"
                and not isinstance(pt, (TStruct, TStack))
            ):
                fn.emit(f"{py} = {self.default_value(pt)}")
                if p.direction == "out" and not isinstance(a.value, ast.DontCare):
                    backs.append((a.value, pt, py))
                continue
            v = self.convert(self.expr(a.value, scope, fn), pt)
            if p.direction in ("out", "inout") and not isinstance(pt, (TStruct, TStack)):
                backs.append((a.value, pt, py))
            fn.emit(f"{py} = {v.code if p.direction in ('out', 'inout') else self.copy_code(v)}")
        # the sub-control's body, spliced in place: no call, its locals re-initialised per apply
        if backs:
            fn.emit("try:")  # scalar copy-out happens on `exit` too
            fn.ind += 1
        pad = "    " * fn.ind
        for line in body:
            fn.lines.append(pad + line[4:])
        if backs:
            fn.ind -= 1
            fn.emit("finally:")
            fn.ind += 1
            for node, pt, py in backs:
                self.assign(node, V(py, pt), scope, fn)
            fn.ind -= 1
        return V("None", VOID)

    # ------------------------------------------------------------------ externs

    def data_pack(self, e: ast.Expression, scope: Env, fn: _Fn) -> str:
        """Python expr giving the bytes of a field list (BMv2 BufBuilder: fields of invalid
        headers are skipped)."""
        elems = e.elements if isinstance(e, ast.ListExpression) else [e]
        parts: list[tuple[str, str, str | None]] = []  # (value, width, validity)

        def add(v: V, valid: str | None, node: ast.Node) -> None:
            t = v.type
            if isinstance(t, TStruct):
                vv = f"{v.code}._v" if t.kind == "header" else valid
                for fname, ft in t.fields:
                    add(V(f"{v.code}.{fld(fname)}", ft), vv, node)
                return
            if isinstance(t, TVarbit):
                parts.append((v.code, vbw(v.code), valid))
                return
            w = width_of(t)
            parts.append((f"int({v.code})" if isinstance(t, TBool) else v.code, str(w), valid))

        for el in elems:
            v = self.expr(el, scope, fn)
            valid = None
            if isinstance(el, ast.Member):
                parent = self.expr(el.expr, scope, fn)
                if isinstance(parent.type, TStruct) and parent.type.kind == "header":
                    valid = f"{parent.code}._v"
            add(v, valid, el)
        conds = {p[2] for p in parts}
        fixed = all(p[1].isdigit() for p in parts)
        self.last_pack_parts = parts  # what checksum lowering reads back

        def packed() -> str:
            if not fixed:
                return f"pack(({', '.join(p[0] for p in parts)},), ({', '.join(p[1] for p in parts)},))"
            # one shift-or and one to_bytes: the BufBuilder layout, padding at the end
            total = sum(int(p[1]) for p in parts)
            pad = (-total) % 8
            shift = total + pad
            terms = []
            for val, w, _ in parts:
                shift -= int(w)
                terms.append(f"({val} << {shift})" if shift else val)
            return f"({' | '.join(terms) or '0'}).to_bytes({(total + pad) // 8}, 'big')"

        if len(conds) == 1 and None not in conds:
            return f"({packed()} if {next(iter(conds))} else b'')"
        if all(p[2] is None for p in parts):
            return packed()
        vals = ", ".join(
            f"(({p[0]}, {p[1]}) if {p[2]} else None)" if p[2] else f"({p[0]}, {p[1]})"
            for p in parts
        )
        return f"_RT.pack_valid(({vals},))"

    def extern_fn(
        self, sym: Sym, argv: list[ast.Expression], c: ast.MethodCall, scope: Env, fn: _Fn
    ) -> V:
        ext = registry.function(sym.name)
        if ext is None:
            raise bug(f"extern function {sym.name}", c)
        if not fn.in_parser:
            self.model.calls_extern_function = True
        return ext.call(self, sym.name, argv, c, scope, fn)

    def extern_method(
        self,
        obj: V,
        t: TExtern,
        m: str,
        argv: list[ast.Expression],
        c: ast.MethodCall,
        scope: Env,
        fn: _Fn,
    ) -> V:
        ext = registry.lookup(t.name)
        if ext is None:
            raise bug(f"method {m} of extern {t.name}", c)
        return ext.method(self, obj, t, m, argv, c, scope, fn)

    # ======================================================================= expressions

    def convert(self, v: V, t: Type) -> V:
        """v converted to type t, a conversion check allowed (t is a type check gave: a
        declared type, or the other operand's); the only one that changes code is an `int`
        becoming bit<N> (masked) or a serializable enum."""
        if isinstance(v.type, TInt):
            if isinstance(t, TBits):
                if v.is_const:
                    c = int(v.const) & mask(t.width)
                    return V(str(c), t, c)
                return V(f"(({v.code}) & {mask(t.width)})", t)
            if isinstance(t, TEnum) and t.underlying is not None and v.is_const:
                return V(str(v.const), t, v.const)
        return v

    def expr(self, e: ast.Expression, scope: Env, fn: _Fn | None) -> V:
        """e lowered: its type and constant value are check's (per instance where instances
        differ); lowering only writes the code."""
        hoisted = self.index_memo.get(id(e))
        if hoisted is not None:
            return hoisted
        r = self.checked.value(e, self.inst)
        if r is None:
            raise bug("an expression the checker never typed", e)
        t, value = r
        if value is not None:  # folded by check
            return V(repr(value) if isinstance(value, str) else str(value), t, value)
        return V(self._expr(e, t, scope, fn), t)

    def etype(self, e: ast.Expression) -> Type:
        """The type check gave e (in this instance)."""
        r = self.checked.value(e, self.inst)
        if r is None:
            raise bug("an expression the checker never typed", e)
        return r[0]

    def _need_fn(self, fn: _Fn | None, e: ast.Node) -> _Fn:
        if fn is None:
            raise bug("expected a compile-time constant", e)
        return fn

    def _expr(self, e: ast.Expression, t: Type, scope: Env, fn: _Fn | None) -> str:
        """The code of a non-constant expression e of (checked) type t."""
        if isinstance(e, ast.Name):
            sym = self.sym(e, scope)
            return "None" if sym.kind == "type" else sym.py
        if isinstance(e, ast.TypeRef):
            return "None"
        if isinstance(e, ast.Member):
            return self.member(e, t, scope, fn)
        if isinstance(e, ast.Index):
            obj = self.expr(e.expr, scope, fn)
            idx = self.expr(e.index, scope, fn)
            if isinstance(obj.type, TStack):
                return f"{obj.code}.a[{self.stack_index(obj, idx, e)}]"
            return f"{obj.code}[{int(idx.const)}]"  # a tuple element: check made the index constant
        if isinstance(e, ast.Slice):
            b = self.expr(e.expr, scope, fn)
            lo = self.const_eval(e.lo, scope)
            mk = mask(width_of(t))
            return f"(({b.code} >> {lo}) & {mk})" if lo else f"({b.code} & {mk})"
        if isinstance(e, ast.Unary):
            v = self.expr(e.operand, scope, fn)
            if e.op == "!":
                return f"(not {v.code})"
            if e.op == "+":
                return v.code
            mk = mask(width_of(t))
            return f"((-{v.code}) & {mk})" if e.op == "-" else f"({v.code} ^ {mk})"
        if isinstance(e, ast.Binary):
            return self.binary(e, t, scope, fn)
        if isinstance(e, ast.Ternary):
            c = self.expr(e.cond, scope, fn)
            a, sa = self.lazy(e.then, scope, fn)
            b, sb = self.lazy(e.else_, scope, fn)
            a, b = self.convert(a, t), self.convert(b, t)
            if (sa or sb) and fn is not None:
                # a branch needs statements: evaluate only the branch taken
                tv = fn.tmp("tv")
                fn.emit(f"if {c.code}:")
                fn.lines.extend(sa)
                fn.emit(f"    {tv} = {a.code}")
                fn.emit("else:")
                fn.lines.extend(sb)
                fn.emit(f"    {tv} = {b.code}")
                return tv
            if c.is_const:
                return a.code if c.const else b.code
            return f"({a.code} if {c.code} else {b.code})"
        if isinstance(e, ast.Cast):
            return self.cast(t, self.expr(e.expr, scope, fn))
        if isinstance(e, ast.MethodCall):
            return self.call(e, scope, self._need_fn(fn, e)).code
        if isinstance(e, ast.DontCare):
            return "None"
        if isinstance(e, (ast.ListExpression, ast.StructExpression)):
            if isinstance(t, TStruct):  # `{...}` where a struct/header is expected
                f = self._need_fn(fn, e)
                tmp = f.tmp("lst")
                f.emit(f"{tmp} = {self.default_value(t)}")
                self.assign_fields(V(tmp, t), t, e, scope, f)
                return tmp
            return "(" + ", ".join(self.expr(x, scope, fn).code for x in e.elements) + ",)"  # type: ignore[union-attr]
        raise bug(f"expression {type(e).__name__}", e)

    def lazy(self, e: ast.Expression, scope: Env, fn: _Fn | None) -> tuple[V, list[str]]:
        """Lower e, capturing the statements it needs (one level deeper) instead of emitting
        them, so a caller can run them conditionally (short circuit, ?:)."""
        if fn is None:
            return self.expr(e, scope, fn), []
        start = len(fn.lines)
        fn.ind += 1
        try:
            v = self.expr(e, scope, fn)
        finally:
            fn.ind -= 1
        stmts = fn.lines[start:]
        del fn.lines[start:]
        return v, stmts

    def member(self, e: ast.Member, t: Type, scope: Env, fn: _Fn | None) -> str:
        base = e.expr
        m = e.member
        # table.apply().hit / miss (error and enum members are constants check folded)
        if (
            isinstance(base, ast.MethodCall)
            and isinstance(base.callee, ast.Member)
            and base.callee.member == "apply"
        ):
            f = self._need_fn(fn, e)
            hit, aid = self.table_apply(self.table_of(base.callee.expr, scope), scope, f)
            return hit if m == "hit" else f"(not {hit})"
        b = self.expr(base, scope, fn)
        bt = b.type
        if isinstance(bt, TStack):
            if m == "lastIndex":
                return f"(({b.code}.n - 1) & 0xffffffff)"
            if m == "nextIndex":
                return f"{b.code}.n"
            f = self._need_fn(fn, e)
            s = f.tmp("s")
            f.emit(f"{s} = {b.code}")
            code = self.errors.get("StackOutOfBounds", 3)
            if m == "next":
                f.emit(f"if {s}.n >= {s}.size: raise ParserError({code})")
                return f"{s}.a[{s}.n]"
            f.emit(f"if {s}.n < 1: raise ParserError({code})")  # last
            return f"{s}.a[{s}.n - 1]"
        return f"{b.code}.{fld(m)}"

    # Constant operands never reach the operators below: check folded every constant
    # expression, so these only write code for the types check gave.

    def binary(self, e: ast.Binary, t: Type, scope: Env, fn: _Fn | None) -> str:
        op = e.op
        if op in ("&&", "||"):
            a = self.expr(e.left, scope, fn)
            b, stmts = self.lazy(e.right, scope, fn)
            if stmts and fn is not None:
                # the right operand needs statements (a table apply, an inlined call):
                # run them only when the left operand does not decide (short circuit)
                tv = fn.tmp("sc")
                fn.emit(f"{tv} = {a.code}")
                fn.emit(f"if {'' if op == '&&' else 'not '}{tv}:")
                fn.lines.extend(stmts)
                fn.emit(f"    {tv} = {b.code}")
                return tv
            return f"({a.code} {'and' if op == '&&' else 'or'} {b.code})"
        a = self.expr(e.left, scope, fn)
        b, stmts = self.lazy(e.right, scope, fn)
        if stmts and fn is not None:
            # left to right: take the left value before the right operand's statements run
            if not a.is_const:
                tv = fn.tmp("l")
                fn.emit(f"{tv} = {a.code}")
                a = V(tv, a.type)
            fn.lines.extend(line[4:] for line in stmts)
        if op == "++":
            return f"(({a.code} << {width_of(b.type)}) | {b.code})"
        if op in ("<<", ">>"):
            w = width_of(t)
            if op == "<<":
                return f"(({a.code} << {b.code}) & {mask(w)})"
            if isinstance(t, TBits) and t.signed:
                return f"((sx({a.code}, {w}) >> {b.code}) & {mask(w)})"
            return f"({a.code} >> {b.code})"
        # the operands' type: the result's, but for a comparison the bit<N> one of the two
        # (an int operand next to a bit<N> one is that bit<N>: check's rule, its types)
        compare = op in ("==", "!=", "<", ">", "<=", ">=")
        ot = (a.type if isinstance(a.type, TBits) else b.type) if compare else t
        a, b = self.convert(a, ot), self.convert(b, ot)
        if op in ("==", "!="):
            if isinstance(ot, (TStruct, TStack)):
                eq = self.aggregate_eq(a.code, b.code, ot)
                return f"({eq})" if op == "==" else f"(not ({eq}))"
            return f"({a.code} {op} {b.code})"
        if not isinstance(ot, TBits):
            raise bug(f"operator {op} on {ot.show()}", e)
        w = ot.width
        mk = mask(w)
        signed = ot.signed
        ac, bc = a.code, b.code
        sa, sb = (f"sx({ac}, {w})", f"sx({bc}, {w})") if signed else (ac, bc)
        if op in ("<", ">", "<=", ">="):
            return f"({sa} {op} {sb})"
        if op in ("+", "-", "*"):
            return f"(({ac} {op} {bc}) & {mk})"
        if op in ("&", "|", "^"):
            return f"({ac} {op} {bc})"
        if op in ("|+|", "|-|"):
            py = "+" if op == "|+|" else "-"
            if signed:
                lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
                return f"(max({lo}, min({hi}, {sa} {py} {sb})) & {mk})"
            return f"min({ac} + {bc}, {mk})" if op == "|+|" else f"max({ac} - {bc}, 0)"
        if op in ("/", "%") and not signed:
            return f"({ac} {'//' if op == '/' else '%'} {bc})"
        raise bug(f"operator {op} on {ot.show()}", e)

    def aggregate_eq(self, a: str, b: str, t: Type) -> str:
        """P4 == on headers (both invalid, or both valid with equal fields), structs and
        stacks (every member equal)."""
        if isinstance(t, TStack):
            return (
                " and ".join(
                    f"({self.aggregate_eq(f'{a}.a[{i}]', f'{b}.a[{i}]', t.elem)})"
                    for i in range(t.size)
                )
                or "True"
            )
        if isinstance(t, TStruct):
            parts = [self.aggregate_eq(f"{a}.{fld(f)}", f"{b}.{fld(f)}", ft) for f, ft in t.fields]
            fields = " and ".join(f"({p})" for p in parts) or "True"
            if t.kind == "header":
                return f"{a}._v == {b}._v and (not {a}._v or ({fields}))"
            if t.kind == "union":
                return " and ".join(f"({p})" for p in parts) or "True"
            return fields
        return f"{a} == {b}"

    def cast(self, t: Type, v: V) -> str:
        """The code of v cast to t (check allowed the cast)."""
        vt = v.type
        if isinstance(t, TEnum) and t.underlying is not None:
            t = t.underlying
        if isinstance(t, TBits):
            mk = mask(t.width)
            if isinstance(vt, TBool):
                return f"int({v.code})"
            if isinstance(vt, TInt):
                return f"({v.code} & {mk})"
            if isinstance(vt, TEnum) and vt.underlying is not None:
                vt = vt.underlying
            if isinstance(vt, TBits):
                if vt.signed and t.width > vt.width:
                    return f"(sx({v.code}, {vt.width}) & {mk})"
                if t.width >= vt.width:
                    return v.code
                return f"({v.code} & {mk})"
            return v.code  # error -> bit<N>
        if isinstance(t, TBool) and isinstance(vt, (TBits, TInt)):
            return f"({v.code} != 0)"
        return v.code  # to bool from bool, to int, to the same struct
