"""Lowering of the pipeline blocks' declarations: parsers (states, transitions, select),
controls (locals, instances), tables (keys, actions, entries, implementations).
A part of `codegen.Compiler` (a mixin: it uses the compiler's state and the other parts)."""

from __future__ import annotations

import dataclasses

from p4sim import externs as registry
from p4sim.check.blocks import key_text, param_cp_name
from p4sim.check.names import Sym
from p4sim.check.types import (
    TError,
    TExtern,
    TNamedBlock,
    TStack,
    TStruct,
    mask,
    width_of,
)
from p4sim.frontend import ast
from p4sim.frontend.errors import LoweringError as LoweringError  # re-exported: tests, callers
from p4sim.frontend.errors import bug
from p4sim.model import (
    ActionInfo,
    ActionRef,
    Exact,
    KeyField,
    Lpm,
    Optional_,
    Param,
    Range,
    TableEntry,
    TableInfo,
    Ternary,
    ValueSetInfo,
)
from p4sim.spec import ActionSpec, ExternSpec, TableSpec

from .env import Env
from .values import (
    V,
    _Fn,
    _pyid,
    fld,
    mangle,
)


class DeclLowering:
    """Parsers, controls, instances and tables: methods of `codegen.Compiler`."""

    # ======================================================================= parser

    def bind_params(
        self, params: list[ast.Parameter], scope: Env, fn: _Fn, pynames: list[str]
    ) -> None:
        for p, py in zip(params, pynames, strict=True):
            t = self.resolve_type(p.type, scope)
            if isinstance(t, TExtern) and t.name in ("packet_in", "packet_out"):
                scope.add(Sym("packet", p.name, p, t, py=py))
                fn.packet = py
                fn.packet_kind = t.name
                continue
            if t is self.std_meta_type or (
                isinstance(t, TStruct) and t.name == "standard_metadata_t"
            ):
                fn.sm = py
            scope.add(Sym("var", p.name, p, t, py=py, extra={"dir": p.direction}))

    def bind_ctor_args(
        self,
        d: ast.ParserDecl | ast.ControlDecl,
        ctor_args: list[ast.Argument],
        scope: Env,
        arg_scope: Env | None,
    ) -> None:
        """Constructor parameters of a parser/control instance: a control, parser or extern
        instance passed by name is bound to that instance; a value parameter to its constant."""
        for p, a in zip(d.ctor_params, ctor_args, strict=True):
            pt = self.resolve_type(p.type, scope)
            e = a.value
            if isinstance(pt, (TNamedBlock, TExtern)):
                sym = self.sym(e, arg_scope)
                scope.add(
                    Sym(sym.kind, p.name, p, sym.type, py=sym.py, value=sym.value, extra=sym.extra)
                )
            else:
                v = self.convert(self.expr(e, arg_scope or self.genv, None), pt)
                scope.add(Sym("const", p.name, p, pt, py=v.code, value=v.const))

    def compile_parser(
        self,
        d: ast.ParserDecl,
        prefix: str,
        ctor_args: list[ast.Argument],
        sub: bool = False,
        arg_scope: Env | None = None,
    ) -> str:
        outer, self.inst = self.inst, prefix
        try:
            return self._compile_parser(d, prefix, ctor_args, sub, arg_scope)
        finally:
            self.inst = outer

    def _compile_parser(
        self,
        d: ast.ParserDecl,
        prefix: str,
        ctor_args: list[ast.Argument],
        sub: bool,
        arg_scope: Env | None,
    ) -> str:
        fname = "P_" + self.uid(d.name)
        lines: list[str] = []
        fn = _Fn(lines, 1, self.tmp_counter)
        fn.in_parser = True
        scope = Env(self.genv)
        self.bind_ctor_args(d, ctor_args, scope, arg_scope)
        if sub:
            # a sub-parser: (buf, off, its other params) -> new offset; errors propagate
            pys = ["buf"] + [mangle("p", p.name) for p in d.params[1:]]
            outs = []
            for p, py in zip(d.params[1:], pys[1:], strict=True):
                pt = self.resolve_type(p.type, scope)
                if p.direction in ("out", "inout") and not isinstance(pt, (TStruct, TStack)):
                    outs.append(py)  # scalar out/inout: returned after the offset
            if outs:
                fn.parser_ret = f"(off, {', '.join(outs)})"
            self.bind_params(d.params, scope, fn, pys)
            head = f"def {fname}({', '.join(['buf', 'off'] + pys[1:])}):"
        else:
            pys = ["buf", "hdr", "meta", "sm"]
            self.bind_params(d.params, scope, fn, pys)
            fn.sm = "sm"
            head = f"def {fname}(buf, hdr, meta, sm):"
            fn.emit("off = 0")
        fn.emit("_blen = len(buf)")  # the inlined extracts' length checks
        for loc in d.locals:
            self.local_decl(loc, scope, fn, prefix)
        states = {s.name: i for i, s in enumerate(d.states)}
        fn.parser_states = states
        for s in d.states:
            scope.add(Sym("state", s.name, s))
        by_name = {s.name: s for s in d.states}
        inline = self.inline_size(by_name, self.parser_inline_limit) is not None
        fn.emit("try:")
        fn.ind += 1
        if inline:
            # an acyclic parser becomes straight-line nested code: no state dispatch
            fn.parser_inline = (by_name, scope)
            self.emit_state(by_name["start"], scope, fn)
            fn.ind -= 1
        else:
            fn.emit(f"st = {states['start']}")
            fn.emit("while True:")
            fn.ind += 1
            for i, s in enumerate(d.states):
                fn.emit(f"{'if' if i == 0 else 'elif'} st == {i}:  # state {s.name}")
                fn.ind += 1
                self.emit_state(s, scope, fn)
                fn.ind -= 1
            fn.ind -= 2
        if sub:
            fn.emit("finally:")
            fn.emit("    pass")
        else:
            fn.emit("except ParserError as e:")
            fn.emit(f"    sm.{fld('parser_error')} = e.code")
        fn.emit(f"return {fn.parser_ret}")
        self.funcs.append(head)
        self.funcs.extend(lines)
        self.funcs.append("")
        return fname

    @staticmethod
    def inline_size(states: dict[str, ast.ParserState], limit: int = 400) -> int | None:
        """Code copies needed to inline every path of the state graph; None if it loops
        (header stacks) or would grow past `limit` states."""
        memo: dict[str, int] = {}
        onpath: set[str] = set()

        def targets(st: ast.ParserState) -> list[str]:
            tr = st.transition
            if tr is None:
                return []
            if isinstance(tr.target, ast.Name):
                return [tr.target.name]
            return [c.state.name for c in tr.target.cases]

        def size(name: str) -> int | None:
            if name in ("accept", "reject") or name not in states:
                return 0
            if name in memo:
                return memo[name]
            if name in onpath:
                return None
            onpath.add(name)
            total = 1
            for t in targets(states[name]):
                n = size(t)
                if n is None:
                    return None
                total += n
                if total > limit:
                    return None
            onpath.discard(name)
            memo[name] = total
            return total

        return size("start")

    def emit_state(self, s: ast.ParserState, scope: Env, fn: _Fn) -> None:
        fn.emit(f"# state {s.name}")
        sscope = Env(scope)
        for stmt in s.statements:
            self.stmt(stmt, sscope, fn)
        self.transition(s, sscope, fn)

    def goto(self, target: str, fn: _Fn, node: ast.Node) -> None:
        if target == "accept":
            fn.emit(f"return {fn.parser_ret}")
        elif target == "reject":
            fn.emit(
                f"return {fn.parser_ret}  # reject: BMv2 goes on to ingress with parser_error set"
            )
        elif fn.parser_inline is not None and target in fn.parser_inline[0]:
            by_name, pscope = fn.parser_inline
            self.emit_state(by_name[target], pscope, fn)
        elif target in fn.parser_states:
            fn.emit(f"st = {fn.parser_states[target]}")
            fn.emit("continue")
        else:
            raise bug(f"unknown parser state '{target}'", node)

    def transition(self, s: ast.ParserState, scope: Env, fn: _Fn) -> None:
        tr = s.transition
        if tr is None:
            self.goto("reject", fn, s)
            return
        if isinstance(tr.target, ast.Name):
            self.goto(tr.target.name, fn, tr.target)
            return
        sel = tr.target
        vals = [self.expr(e, scope, fn) for e in sel.exprs]
        keyvars = []
        for v in vals:
            if v.is_const:
                keyvars.append(v)
            else:
                k = fn.tmp("k")
                fn.emit(f"{k} = {v.code}")
                keyvars.append(V(k, v.type))
        first = True
        has_default = False
        for case in sel.cases:
            ks = case.keyset
            elems = ks.elements if isinstance(ks, ast.TupleKeyset) else [ks]
            if isinstance(ks, ast.DefaultKeyset) or isinstance(ks, ast.DontCare):
                elems = [ks] * len(keyvars)
            vsym = self.sym(ks, scope) if isinstance(ks, ast.Name) and len(keyvars) > 1 else None
            if vsym is not None and vsym.kind == "value_set":
                # a value set over the whole select tuple: its members are value/mask pairs
                # over the keys concatenated (BMv2's parse_vsets match the bytes so)
                shift, parts = 0, []
                for kv in reversed(keyvars):
                    parts.append(f"({kv.code} << {shift})" if shift else f"{kv.code}")
                    shift += width_of(kv.type)
                fn.emit(
                    f"{'if' if first else 'elif'} {vsym.py}.match({' | '.join(reversed(parts))}):"
                )
                first = False
                fn.ind += 1
                self.goto(case.state.name, fn, case.state)
                fn.ind -= 1
                continue
            conds = []
            for el, kv in zip(elems, keyvars, strict=True):
                c = self.keyset_cond(el, kv, scope, fn)
                if c is not None:
                    conds.append(c)
            cond = " and ".join(conds) if conds else "True"
            if cond == "True":
                if first:
                    self.goto(case.state.name, fn, case.state)
                else:
                    fn.emit("else:")
                    fn.ind += 1
                    self.goto(case.state.name, fn, case.state)
                    fn.ind -= 1
                has_default = True
                break
            fn.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            fn.ind += 1
            self.goto(case.state.name, fn, case.state)
            fn.ind -= 1
        if not has_default:
            fn.emit(f"raise ParserError({self.errors.get('NoMatch', 2)})")

    def keyset_cond(self, el: ast.Expression, kv: V, scope: Env, fn: _Fn) -> str | None:
        if isinstance(el, (ast.DefaultKeyset, ast.DontCare)):
            return None
        if isinstance(el, ast.MaskKeyset):
            v = self.convert(self.expr(el.value, scope, fn), kv.type)
            m = self.convert(self.expr(el.mask, scope, fn), kv.type)
            if v.is_const and m.is_const:
                return f"({kv.code} & {m.const}) == {v.const & m.const}"
            return f"({kv.code} & {m.code}) == ({v.code} & {m.code})"
        if isinstance(el, ast.RangeKeyset):
            lo = self.convert(self.expr(el.low, scope, fn), kv.type)
            hi = self.convert(self.expr(el.high, scope, fn), kv.type)
            return f"{lo.code} <= {kv.code} <= {hi.code}"
        if isinstance(el, ast.Name):
            sym = self.sym(el, scope)
            if sym.kind == "value_set":
                return f"{sym.py}.match({kv.code})"
        v = self.convert(self.expr(el, scope, fn), kv.type)
        return f"{kv.code} == {v.code}"

    # ======================================================================= controls

    def compile_control(
        self,
        d: ast.ControlDecl,
        prefix: str,
        ctor_args: list[ast.Argument],
        top: bool = False,
        arg_scope: Env | None = None,
    ) -> str:
        outer, self.inst = self.inst, prefix
        try:
            return self._compile_control(d, prefix, ctor_args, top, arg_scope)
        finally:
            self.inst = outer

    def _compile_control(
        self,
        d: ast.ControlDecl,
        prefix: str,
        ctor_args: list[ast.Argument],
        top: bool,
        arg_scope: Env | None,
    ) -> str:
        fname = "C_" + self.uid(prefix)
        lines: list[str] = []
        fn = _Fn(lines, 1, self.tmp_counter)
        scope = Env(self.genv)
        self.bind_ctor_args(d, ctor_args, scope, arg_scope if arg_scope is not None else self.genv)
        pys = []
        for p in d.params:
            pt = self.resolve_type(p.type, scope)
            if isinstance(pt, TExtern) and pt.name == "packet_out":
                pys.append("_out")
            elif top:
                pys.append(mangle("p", p.name))
            else:
                self.n += 1
                pys.append(f"p{self.n}_{_pyid(p.name)}")  # unique: the body may be spliced
        self.bind_params(d.params, scope, fn, pys)
        outs = []
        for p, py in zip(d.params, pys, strict=True):
            pt = self.resolve_type(p.type, scope)
            if p.direction in ("out", "inout") and not isinstance(pt, (TStruct, TStack, TExtern)):
                outs.append(py)
        for loc in d.locals:
            self.local_decl(loc, scope, fn, prefix)
        body_start = len(lines)
        has_ret = self.checked.has_return(d.apply)
        wrap = bool(outs) or (has_ret and not top)
        if wrap:
            fn.emit("for _ in ONCE:")
            fn.ind += 1
            fn.once_stack.append(None)
        self.block(d.apply, scope, fn)
        if wrap:
            fn.once_stack.pop()
            fn.ind -= 1
        if len(lines) == body_start:
            fn.emit("pass")
        if not top:
            # callers splice this body in place of a call (see call_control)
            self.inline_bodies[fname] = (pys, list(lines), outs)
        if outs:
            fn.emit(f"return ({', '.join(outs)},)")
        head = [f"def {fname}({', '.join(pys)}):"]
        if top:
            # `exit` unwinds to here
            inner = (
                ["    try:"] + ["    " + ln for ln in lines] + ["    except Exit:", "        pass"]
            )
            lines[:] = inner
        self.funcs.extend(head + lines)
        self.funcs.append("")
        return fname

    def local_decl(self, loc: ast.Node, scope: Env, fn: _Fn, prefix: str) -> None:
        if isinstance(loc, ast.Unsupported):
            raise bug(loc.what, loc)
        if isinstance(loc, ast.ActionDecl):
            scope.add(Sym("action", loc.name, loc, scope=scope, value=self.cp_name(prefix, loc)))
        elif isinstance(loc, ast.FunctionDecl):
            scope.add(Sym("function", loc.name, loc, scope=scope))
        elif isinstance(loc, ast.TableDecl):
            self.table_decl(loc, scope, fn, prefix)
        elif isinstance(loc, ast.Instantiation):
            self.instantiation(loc, scope, fn, prefix)
        elif isinstance(loc, ast.ValueSetDecl):
            t = self.resolve_type(loc.element_type, scope)
            py = "VS_" + self.uid(loc.name)
            size = self.const_eval(loc.size, scope)
            name = self.cp_name(prefix, loc)
            self.value_sets.append((py, name, size))
            self.model.value_sets[name] = ValueSetInfo(
                name=name,
                id=self.ann_id(loc),
                annotations=self.annotations_text(loc),
                size=size,
                matches=self.value_set_matches(t, loc),
            )
            scope.add(Sym("value_set", loc.name, loc, t, py=py))
        elif isinstance(loc, (ast.VariableDecl, ast.ConstDecl)):
            self.stmt(loc, scope, fn)
        else:
            raise bug(f"declaration {type(loc).__name__} here", loc)

    # ------------------------------------------------------------------ instances

    def instantiation(self, d: ast.Instantiation, scope: Env, fn: _Fn, prefix: str) -> None:
        before, d = self.checked.moved.get(id(d), ([], d))  # `Outer(Inner()) o;`, as check moved it
        for inst in before:
            self.instantiation(inst, scope, fn, prefix)
        t = self.resolve_type(d.type, scope)
        name = self.cp_name(prefix, d)
        if isinstance(t, TNamedBlock) and t.kind == "control_decl":
            fname = self.compile_control(t.decl, name, d.args, arg_scope=scope)  # type: ignore[arg-type]
            scope.add(Sym("instance", d.name, d, t, py=fname, value="control"))
            return
        if (
            isinstance(t, TNamedBlock)
            and t.kind == "parser_decl"
            and fn is not None
            and fn.in_parser
        ):
            fname = self.compile_parser(t.decl, name, d.args, sub=True, arg_scope=scope)  # type: ignore[arg-type]
            scope.add(Sym("instance", d.name, d, t, py=fname, value="parser"))
            return
        if not isinstance(t, TExtern):
            raise bug(f"cannot instantiate {t.show()}", d)
        py = "X_" + self.uid(d.name)
        ext = registry.lookup(t.name)
        if ext is None:
            raise bug(f"extern {t.name}", d)
        spec = ext.instantiate(self, d, t, scope, name)
        if spec is not None:
            spec.py = py
            self.externs.append(spec)
        # at the top level: bound in lowering's global env, where check's symbol has no Python name
        scope.add(Sym("instance", d.name, d, t, py=py, value=name))

    # ------------------------------------------------------------------ tables

    def table_decl(self, d: ast.TableDecl, scope: Env, fn: _Fn, prefix: str) -> None:
        name = self.cp_name(prefix, d)
        py = "T_" + self.uid(d.name)
        keys: list[KeyField] = []
        key_exprs: list[ast.Expression] = []
        key_pos: list[int] = []  # each match key's position among all keys (its field id)
        sel_exprs: list[ast.Expression] = []  # `selector` keys: the action selector's hash input
        for i, k in enumerate(d.keys):
            if k.match_kind == "selector":
                sel_exprs.append(k.expr)
                continue
            kt = self.etype(k.expr)
            w = width_of(kt)
            if isinstance(kt, TError):
                w = 32  # hmm: p4c gives errors no width; BMv2 uses 32 bits... rare in keys
            a = k.annotation("name")
            kname = a.string_value() if a is not None and a.string_value() else key_text(k.expr)
            keys.append(KeyField(kname, k.match_kind, w, i + 1))
            key_exprs.append(k.expr)
            key_pos.append(i)
        all_ids = self.field_ids(d.keys, d)
        for i, pos in enumerate(key_pos):
            keys[i] = dataclasses.replace(keys[i], id=all_ids[pos])
        actions: list[ActionSpec] = []
        action_syms: list[Sym] = []
        refs: list[ActionRef] = []
        bound_args: list[list[ast.Argument]] = []
        for ar in d.actions:
            asym = self.sym(ar.name, scope)
            adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
            aname = self.action_cp_name(asym)
            nbound = len(ar.args or [])
            bound_args.append(list(ar.args or []))
            params = []
            for p in adecl.params[nbound:]:
                pt = self.resolve_type(p.type, asym.scope or scope)
                pw = width_of(pt)
                params.append((param_cp_name(p), pw))
            sc = "TABLE_AND_DEFAULT"
            if ar.has_annotation("tableonly"):
                sc = "TABLE_ONLY"
            elif ar.has_annotation("defaultonly"):
                sc = "DEFAULT_ONLY"
            actions.append(ActionSpec(aname, tuple(params), sc))
            action_syms.append(asym)
            refs.append(ActionRef(aname, sc))
            self.register_action(asym, adecl)
            self.action_users.setdefault(aname, set()).add(name)
        # no actions at all: p4c's front end gives the table NoAction as its (only) default
        size = 1024
        sp = d.prop("size")
        if sp is not None and sp.value is not None:
            size = self.const_eval(sp.value, scope)
        # default action
        default_name = None
        default_args: dict[str, int] = {}
        const_default = False
        dp = d.default_action
        if dp is not None and dp.value is not None:
            const_default = dp.is_const
            default_name, default_args = self.bound_action(dp.value, scope, actions, action_syms)
        else:
            na = next((a for a in actions if a.name == "NoAction"), None)
            if na is None:
                # p4c adds NoAction as the default; we need it in the list to run it
                nsym = self.g.lookup("NoAction")
                actions.append(ActionSpec("NoAction", (), "DEFAULT_ONLY"))
                # p4c's CreateBuiltins adds it to the list too, as `@defaultonly NoAction`,
                # so P4Info's table refers to it (scope DEFAULT_ONLY)
                refs.append(ActionRef("NoAction", "DEFAULT_ONLY"))
                action_syms.append(nsym)
                bound_args.append([])
                self.register_action(nsym, nsym.decl)  # type: ignore[arg-type]
                self.action_users.setdefault("NoAction", set()).add(name)
            default_name = "NoAction"
        # direct resources
        dc = dm = None
        for pname in ("counters", "meters"):
            p = d.prop(pname)
            if p is None or p.value is None:
                continue
            isym = self.sym(p.value, scope)
            ext = (
                registry.lookup(isym.type.name)
                if (isym.kind == "instance" and isinstance(isym.type, TExtern))
                else None
            )
            if ext is None:
                raise bug(f"{pname} = names no extern module", p.value)
            ext.bind_table(self, isym.value, name)
            if pname == "counters":
                dc = isym.value
            else:
                dm = isym.value
        impl = self.table_implementation(d, scope, fn, prefix, name)
        for p in d.properties:
            if p.name not in (
                "key",
                "actions",
                "default_action",
                "size",
                "entries",
                "counters",
                "meters",
                "implementation",
            ) and not p.name.startswith("@"):
                pass  # custom table properties are kept out of the data path (p4c warns too)
        # const entries
        entries: list[TableEntry] = []
        ep = d.prop("entries")
        if ep is not None and ep.entries:
            for i, en in enumerate(ep.entries):
                entries.append(
                    self.const_entry(en, keys, key_exprs, scope, actions, action_syms, name, i + 1)
                )
        info = TableInfo(
            name=name,
            id=self.ann_id(d),
            annotations=self.annotations_text(d),
            keys=tuple(keys),
            actions=tuple(refs),
            default_action=default_name,
            default_params=tuple(
                default_args.get(p, 0)
                for p, _ in next(a for a in actions if a.name == default_name).params
            ),
            const_default_action=const_default,
            const_entries=bool(ep is not None and ep.is_const),
            initial_entries=bool(entries),
            size=size,
            direct_counter=dc,
            direct_meter=dm,
            implementation=impl.name if impl is not None else None,
        )
        self.model.tables[name] = info
        # the runtime installs the const entries when it loads the program; a bad one is
        # reported at its entry (p4sim.runtime.instance.check_program)
        spec = TableSpec(
            py,
            info,
            actions,
            entries,
            (default_name, default_args),
            dc,
            dm,
            entry_nodes=list(ep.entries) if ep is not None and ep.entries else [],
            decl_name=d.name,
            implementation=impl.py if impl is not None else None,
        )
        self.tables.append(spec)
        scope.add(
            Sym(
                "table",
                d.name,
                d,
                py=py,
                value=spec,
                extra={
                    "keys": key_exprs,
                    "action_syms": action_syms,
                    "scope": scope,
                    "bound": bound_args,
                    "selector": sel_exprs,
                    "with_selector": impl is not None and bool(impl.params.get("selector")),
                },
            )
        )

    def table_implementation(
        self, d: ast.TableDecl, scope: Env, fn: _Fn | None, prefix: str, table: str
    ) -> ExternSpec | None:
        """The action profile/selector of `implementation = ...`: a declared instance, or one
        constructed in place, named as p4c's getTableImplementationName names it (the
        property's control-plane name: its @name, else "implementation")."""
        ip = d.prop("implementation")
        if ip is None or ip.value is None:
            return None
        v = ip.value
        if isinstance(v, ast.Name):
            isym = self.sym(v, scope)
            spec = next((x for x in self.externs if x.py == isym.py), None)
        else:
            assert isinstance(v, ast.MethodCall) and isinstance(v.callee, ast.Name)
            inst = ast.Instantiation(
                name="implementation",
                type=ast.NamedType(v.callee.name),
                args=v.args,
                annotations=ip.annotations,
                span=ip.span,
            )
            ext = registry.lookup(v.callee.name)
            if ext is None or ext.table_property != "implementation":
                raise bug("implementation = must construct an action_profile or action_selector", v)
            # p4c's HierarchicalNames prefixes declarations, not table properties: an @name
            # on the property names the profile as written (samples action_profile-bmv2,
            # issue297-bmv2: `ap`, not `<Control>.ap`)
            cp = self.cp_name("", inst) if ip.annotation("name") is not None else "implementation"
            spec = ext.instantiate(self, inst, None, scope, cp)
            assert spec is not None
            spec.py = "X_" + self.uid(f"{d.name}_impl")
            self.externs.append(spec)
        ext = registry.lookup(spec.kind) if spec is not None else None
        if spec is None or ext is None or ext.table_property != "implementation":
            raise bug("implementation = must name an action_profile or action_selector", v)
        ext.bind_table(self, spec.name, table)
        return spec

    def action_cp_name(self, asym: Sym) -> str:
        """The control-plane name of an action as used in the current top-level control.

        p4c (frontends/p4/localizeActions.cpp) copies a global action into each control
        that uses it. p4c 1.2.4.0 then named a global action with a relative `@name("n")`
        `<Control>.n` (one P4Info action per control); since p4c #4975 (1.2.5.x, followed
        here) the copy keeps the global name `n` (sample issue-4969-bmv2)."""
        return asym.value

    def register_action(self, asym: Sym, adecl: ast.ActionDecl, called: bool = False) -> None:
        """`called`: the action is called directly (not from a table); p4c's front end then
        removes all its parameters (frontends/p4/removeParameters.cpp
        `FindActionParameters::postorder(MethodCallExpression)`: "remove all parameters"),
        so P4Info lists it without any."""
        aname = self.action_cp_name(asym)
        if aname in self.model.actions:
            return
        params = []
        # p4c drops the directional ones; a direct call binds all of them
        cp = [] if called else [p for p in adecl.params if not p.direction]
        for p, pid in zip(cp, self.field_ids(cp, adecl), strict=True):
            pt = self.resolve_type(p.type, asym.scope or self.g)
            params.append(Param(param_cp_name(p), width_of(pt), pid))
        self.model.actions[aname] = ActionInfo(
            name=aname,
            id=self.ann_id(adecl),
            annotations=self.annotations_text(adecl),
            params=tuple(params),
        )

    def bound_action(
        self, e: ast.Expression, scope: Env, actions: list[ActionSpec], syms: list[Sym]
    ) -> tuple[str, dict[str, int]]:
        if isinstance(e, ast.MethodCall):
            callee, args = e.callee, e.args
        else:
            callee, args = e, []
        asym = self.sym(callee, scope)
        idx = next((i for i, s in enumerate(syms) if s is asym), None)
        spec = actions[idx]
        adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
        nb = len(adecl.params) - len(spec.params)  # leading params bound in the actions list
        if nb and len(args) == len(adecl.params):
            args = args[nb:]  # `default_action = a(bound, ...)` repeats the bound arguments
        vals = {}
        for (pname, _pw), a, p in zip(spec.params, args, adecl.params[nb:], strict=True):
            pt = self.resolve_type(p.type, asym.scope or scope)
            v = self.convert(self.expr(a.value, scope, None), pt)
            vals[pname] = int(v.const)
        return spec.name, vals

    def const_entry(
        self,
        en: ast.Entry,
        keys: list[KeyField],
        key_exprs: list[ast.Expression],
        scope: Env,
        actions: list[ActionSpec],
        syms: list[Sym],
        tname: str,
        order_prio: int,
    ) -> TableEntry:
        ks = en.keyset
        elems = ks.elements if isinstance(ks, ast.TupleKeyset) else [ks]
        match: dict = {}
        for el, k, ke in zip(elems, keys, key_exprs, strict=True):
            kt = self.expr(ke, scope, _Fn([], 0, self.tmp_counter)).type  # typing only
            if isinstance(el, (ast.DontCare, ast.DefaultKeyset)):
                continue
            if isinstance(el, ast.MaskKeyset):
                v = self.convert(self.expr(el.value, scope, None), kt)
                m = self.convert(self.expr(el.mask, scope, None), kt)
                if k.match_kind == "lpm":
                    mm = int(m.const)
                    plen = bin(mm).count("1")
                    match[k.name] = Lpm(int(v.const) & mm, plen)
                else:
                    match[k.name] = Ternary(int(v.const), int(m.const))
            elif isinstance(el, ast.RangeKeyset):
                lo = self.convert(self.expr(el.low, scope, None), kt)
                hi = self.convert(self.expr(el.high, scope, None), kt)
                match[k.name] = Range(int(lo.const), int(hi.const))
            else:
                v = self.convert(self.expr(el, scope, None), kt)
                val = int(v.const)
                match[k.name] = (
                    {"exact": Exact, "optional": Optional_}.get(k.match_kind, Exact)(val)
                    if k.match_kind in ("exact", "optional")
                    else (
                        Lpm(val, k.bitwidth)
                        if k.match_kind == "lpm"
                        else Ternary(val, mask(k.bitwidth))
                        if k.match_kind == "ternary"
                        else Range(val, val)
                    )
                )
        aname, args = self.bound_action(en.action, scope, actions, syms)
        # Priorities, in our "higher wins" convention:
        # - `priority = N` (P4 1.2.4): larger N wins (spec default, largest_priority_wins);
        # - @priority(N) (BMv2's convention, as p4c passes it on): smaller N wins;
        # - neither: list order, the first entry wins (BMv2 gets the 1-based position).
        if en.priority is not None:
            prio = self.const_eval(en.priority, scope)
        else:
            a = en.annotation("priority")
            bmv2 = a.int_value() if a is not None and a.int_value() is not None else order_prio
            prio = (1 << 30) - int(bmv2)  # type: ignore[arg-type]
        return TableEntry(tname, match, aname, args, priority=prio)
