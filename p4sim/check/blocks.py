"""Blocks: the V1Switch package, parsers (states, transitions, select keysets), controls,
their local declarations, instantiations and tables."""

from __future__ import annotations

from typing import Any

from p4sim import externs as registry
from p4sim.frontend import ast
from p4sim.model import (
    Exact,
    KeyField,
    Lpm,
    Optional_,
    Range,
    TableEntry,
    Ternary,
)
from p4sim.spec import ActionSpec

from . import ctor_args
from .decls import cp_name
from .entries import const_entry_error
from .exprs import Ctx, Val
from .names import Scope, Sym
from .types import (
    VOID,
    TBits,
    TEnum,
    TError,
    TExtern,
    TInt,
    TNamedBlock,
    TStack,
    TStruct,
    Type,
    err,
    mask,
    unsupported,
    width_of,
)

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")


def key_text(e: ast.Expression) -> str:
    """A table key's control-plane name as p4c writes it (the key expression's text)."""
    if isinstance(e, ast.Name):
        return e.name
    if isinstance(e, ast.Member):
        return f"{key_text(e.expr)}.{e.member}"
    if isinstance(e, ast.Index):
        return f"{key_text(e.expr)}[{key_text(e.index)}]"
    if isinstance(e, ast.Slice):
        return f"{key_text(e.expr)}[{key_text(e.hi)}:{key_text(e.lo)}]"
    if isinstance(e, ast.IntLiteral):
        return _literal_text(e)
    if (
        isinstance(e, ast.MethodCall)
        and not e.args
        and isinstance(e.callee, ast.Member)
        and e.callee.member == "isValid"
    ):
        return f"{key_text(e.callee.expr)}.$valid$"  # as p4c names validity keys
    if isinstance(e, ast.MethodCall) and not e.args:
        return f"{key_text(e.callee)}()"
    if isinstance(e, ast.TypeRef) and isinstance(e.type, ast.ErrorType):
        return "error"
    if isinstance(e, ast.Binary):
        return f"{key_text(e.left)} {e.op} {key_text(e.right)}"
    if isinstance(e, ast.Unary):
        return f"{e.op}{key_text(e.operand)}"
    if isinstance(e, ast.Cast):
        return key_text(e.expr)  # p4c names a cast key after its operand
    raise unsupported("this table key expression form (give it an @name)", e)


def param_cp_name(p: ast.Parameter) -> str:
    """An action parameter's control-plane name: its `@name` if it has one (p4c sample
    name_annotations_to_p4info-bmv2; p4c's BMv2 JSON names the runtime data so too)."""
    a = p.annotation("name")
    return a.string_value() if a is not None and a.string_value() else p.name


def _literal_text(e: ast.IntLiteral) -> str:
    """An integer as p4c prints it (lib/stringify.cpp, Util::toString): the width prefix if
    written, the base's prefix, lowercase digits without leading zeros (0x0101 -> 0x101)."""
    text = e.text.lower().replace("_", "")
    width = ""
    if e.width is not None:  # 8w0x0f, 16s3: the digits follow the first w or s
        width = f"{e.width}{'s' if e.signed else 'w'}"
        text = text[text.index(width[-1]) + 1 :]
    base = {"0x": "x", "0b": "b", "0o": "o"}.get(text[:2])
    if base is None:
        return f"{width}{e.value}"
    return f"{width}0{base}{format(e.value, base)}"


def body_key(sym: Sym) -> tuple[int, int]:
    """An action or function body is checked once per scope it is declared in (a control's
    own actions once per instance: constructor parameters may differ)."""
    return id(sym.decl), id(sym.scope)


def key_width(t: Type) -> int:
    """Bits of a table key of type t (0: not a valid key type)."""
    return 32 if isinstance(t, TError) else width_of(t)


class BlockChecker:
    """Mixin of `p4sim.check.Checker`: the package, parsers, controls and tables."""

    g: Scope
    errors: dict[str, int]
    names: dict[int, Sym]
    callables: list[Sym]
    checked_bodies: set[int]
    hdr_type: TStruct | None
    meta_type: TStruct | None
    std_meta_type: TStruct | None
    instance: str  # control-plane prefix of the block instance being checked

    # ------------------------------------------------------------------ package

    def check_main(self, inst: ast.Instantiation) -> None:
        t = inst.type
        tname = t.base.name if isinstance(t, ast.SpecializedType) else getattr(t, "name", "")
        if tname != "V1Switch":
            raise unsupported(f"package {tname!r} (p4sim runs the v1model V1Switch package)", inst)
        if len(inst.args) != 6:
            raise err(
                "V1Switch takes 6 arguments: parser, verify, ingress, egress, compute, deparser",
                inst,
            )
        blocks = [self.block_arg(a.value) for a in inst.args]
        for a, (sym, _, _) in zip(inst.args, blocks, strict=True):
            a.value.checked_type = TNamedBlock(sym.kind, sym.name, sym.decl)
        p = blocks[0]
        if p[0].kind != "parser_decl":
            raise err("the first argument of V1Switch must be a parser", inst.args[0].value)
        pdecl: ast.ParserDecl = p[0].decl  # type: ignore[assignment]
        if len(pdecl.params) != 4:
            raise err(
                "the v1model parser takes (packet_in, out H, inout M, inout standard_metadata_t)",
                pdecl,
            )
        types = [self.resolve_type(pdecl.params[i].type, self.g) for i in (1, 2, 3)]
        for t_ in types:
            if not isinstance(t_, TStruct) or t_.kind != "struct":
                raise err(
                    "the parser's header, metadata and standard metadata must be structs", pdecl
                )
        self.hdr_type, self.meta_type, self.std_meta_type = types  # type: ignore[assignment]
        self.main_blocks = blocks
        self.check_parser(pdecl, p[1], p[2], arg_scope=self.g)
        for (sym, prefix, args), role in zip(
            blocks[1:], ("verify", "ingress", "egress", "compute", "deparser"), strict=True
        ):
            if sym.kind != "control_decl":
                raise err(f"the {role} argument of V1Switch must be a control", inst)
            self.check_control(sym.decl, prefix, args, top=True)  # type: ignore[arg-type]
        self.check_field_list_indexes(self.meta_type)  # type: ignore[arg-type]
        for t_ in self.struct_types.values():  # type: ignore[attr-defined]
            d = t_.decl
            if (
                t_.kind == "header"
                and isinstance(d, ast.Annotated)
                and d.annotation("controller_header")
            ):
                self.check_field_ids([t_.annotations.get(f, []) for f, _ in t_.fields], d)

    def check_field_list_indexes(self, t: TStruct) -> None:
        for fname, ft in t.fields:
            for a in t.annotations.get(fname, []):
                if a.name == "field_list" and a.exprs:
                    for x in a.exprs:
                        self.const_eval(x, self.g)
            if isinstance(ft, TStruct) and ft.kind == "struct":
                self.check_field_list_indexes(ft)

    def block_arg(self, e: ast.Expression) -> tuple[Sym, str, list[ast.Argument]]:
        """(declaration symbol, control-plane prefix, constructor args) of a package argument."""
        if isinstance(e, ast.MethodCall) and isinstance(e.callee, ast.Name):
            sym = self.names[id(e.callee)] = self.g.resolve(e.callee.name, e.callee)
            if sym.kind in ("parser_decl", "control_decl"):
                # p4c's HierarchicalNames prefixes with the block's declared name
                # (HierarchicalNames::getName), not its @name nor an instance name
                return sym, sym.decl.name, e.args  # type: ignore[union-attr]
        if isinstance(e, ast.Name):
            sym = self.names[id(e)] = self.g.resolve(e.name, e)
            if sym.kind == "instance" and isinstance(sym.decl, ast.Instantiation):
                inst = sym.decl
                tn = inst.type.name if isinstance(inst.type, ast.NamedType) else ""
                dsym = self.g.resolve(tn, inst)
                return dsym, dsym.decl.name, inst.args  # type: ignore[union-attr]
        raise err("expected a parser or control instantiation here", e)

    # ------------------------------------------------------------------ parameters

    def bind_params(self, params: list[ast.Parameter], scope: Scope, ctx: Ctx) -> None:
        for p in params:
            t = self.resolve_type(p.type, scope)
            if isinstance(t, TExtern) and t.name in ("packet_in", "packet_out"):
                scope.add(Sym("packet", p.name, p, t), p)
                continue
            if t is self.std_meta_type or (
                isinstance(t, TStruct) and t.name == "standard_metadata_t"
            ):
                ctx.sm = True
            scope.add(Sym("var", p.name, p, t, extra={"dir": p.direction}), p)

    def bind_ctor_args(
        self,
        d: ast.ParserDecl | ast.ControlDecl,
        ctor_args: list[ast.Argument],
        scope: Scope,
        arg_scope: Scope | None,
    ) -> None:
        """Constructor parameters of a parser/control instance: a control, parser or extern
        instance passed by name is bound to that instance; a value parameter to its constant."""
        if len(ctor_args) != len(d.ctor_params):
            raise err(
                f"{d.name} takes {len(d.ctor_params)} constructor argument"
                f"{'s' if len(d.ctor_params) != 1 else ''}, {len(ctor_args)} given",
                d,
            )
        for p, a in zip(d.ctor_params, ctor_args, strict=True):
            pt = self.resolve_type(p.type, scope)
            e = a.value
            if isinstance(pt, (TNamedBlock, TExtern)):
                if not isinstance(e, ast.Name) or arg_scope is None:
                    raise unsupported(
                        "a constructor call as a constructor argument "
                        "(instantiate it first and pass the instance by name)",
                        e,
                    )
                sym = self.names[id(e)] = arg_scope.resolve(e.name, e, top_level=e.top_level)
                if sym.kind != "instance":
                    raise err(f"'{e.name}' is not an instance", e)
                if (
                    isinstance(pt, TNamedBlock)
                    and pt.kind == "blocktype"
                    and isinstance(sym.type, TNamedBlock)
                ):
                    if len(getattr(pt.decl, "params", [])) != len(
                        getattr(sym.type.decl, "params", [])
                    ):
                        raise err(
                            f"'{e.name}' does not match the type {pt.name} of parameter '{p.name}'",
                            e,
                        )
                scope.add(Sym(sym.kind, p.name, p, sym.type, value=sym.value, extra=sym.extra), p)
            else:
                v = self.coerce(self.expr(e, arg_scope or self.g, None, want=pt), pt, e)
                if not v.is_const:
                    raise err("constructor arguments must be compile-time constants", e)
                scope.add(Sym("const", p.name, p, pt, value=v.const), p)

    # ------------------------------------------------------------------ parsers

    def check_parser(
        self,
        d: ast.ParserDecl,
        prefix: str,
        ctor_args: list[ast.Argument],
        sub: bool = False,
        arg_scope: Scope | None = None,
    ) -> None:
        if d.type_params:
            raise unsupported("generic parsers", d)
        outer, self.instance = self.instance, prefix
        try:
            self._check_parser(d, prefix, ctor_args, arg_scope)
        finally:
            self.instance = outer

    def _check_parser(
        self, d: ast.ParserDecl, prefix: str, ctor_args: list[ast.Argument], arg_scope: Scope | None
    ) -> None:
        ctx = Ctx(in_parser=True, block="parser")
        scope = Scope(self.g, d.name)
        self.bind_ctor_args(d, ctor_args, scope, arg_scope)
        self.bind_params(d.params, scope, ctx)
        for loc in d.locals:
            self.local_decl(loc, scope, ctx, prefix)
        names = {s.name for s in d.states}
        if "start" not in names:
            raise err(f"parser {d.name} has no start state", d)
        for s in d.states:
            scope.add(Sym("state", s.name, s), s)
        for s in d.states:
            sscope = Scope(scope, s.name)
            for st in s.statements:
                self.stmt(st, sscope, ctx)
            self.transition(s, names, sscope, ctx)

    def transition(self, s: ast.ParserState, states: set[str], scope: Scope, ctx: Ctx) -> None:
        tr = s.transition
        if tr is None:
            return

        def goto(target: ast.Name) -> None:
            if target.name in ("accept", "reject"):
                return
            if target.name not in states:
                raise err(f"unknown parser state '{target.name}'", target)
            self.names[id(target)] = scope.resolve(target.name, target)

        if isinstance(tr.target, ast.Name):
            goto(tr.target)
            return
        sel = tr.target
        keys = [self.expr(e, scope, ctx) for e in sel.exprs]
        for case in sel.cases:
            ks = case.keyset
            elems = ks.elements if isinstance(ks, ast.TupleKeyset) else [ks]
            if isinstance(ks, (ast.DefaultKeyset, ast.DontCare)):
                elems = [ks] * len(keys)
            if self.value_set_keyset(ks, [k.type for k in keys], scope):
                goto(case.state)
                continue
            if len(elems) != len(keys):
                raise err(f"select has {len(keys)} expressions but this case has {len(elems)}", ks)
            for el, kv in zip(elems, keys, strict=True):
                self.keyset(el, kv.type, scope, ctx)
            goto(case.state)

    def value_set_keyset(self, ks: ast.Expression, key_types: list[Type], scope: Scope) -> bool:
        """A case naming a value set: its element type is the select key's (bit<W>, or a
        struct with one field per select expression, in order). False: not a value set."""
        if not isinstance(ks, ast.Name):
            return False
        sym = scope.lookup(ks.name)
        if sym is None or sym.kind != "value_set":
            return False
        self.names[id(ks)] = sym
        ks.checked_type = t = sym.type
        want = [width_of(ft) for _, ft in t.fields] if isinstance(t, TStruct) else [width_of(t)]
        got = [key_width(kt) for kt in key_types]
        if want != got:
            raise err(
                f"value set {ks.name} holds {t.show()}: its fields' widths {want} are not the select"
                f" keys' widths {got}",
                ks,
            )
        return True

    def keyset(self, el: ast.Expression, kt: Type, scope: Scope, ctx: Ctx) -> None:
        if isinstance(el, (ast.DefaultKeyset, ast.DontCare)):
            return
        if isinstance(el, ast.MaskKeyset):
            self.coerce(self.expr(el.value, scope, ctx, want=kt), kt, el.value)
            self.coerce(self.expr(el.mask, scope, ctx, want=kt), kt, el.mask)
            return
        if isinstance(el, ast.RangeKeyset):
            self.coerce(self.expr(el.low, scope, ctx, want=kt), kt, el.low)
            self.coerce(self.expr(el.high, scope, ctx, want=kt), kt, el.high)
            return
        if isinstance(el, ast.Name):
            sym = scope.lookup(el.name)
            if sym is not None and sym.kind == "value_set":
                self.names[id(el)] = sym
                el.checked_type = sym.type
                return
        self.coerce(self.expr(el, scope, ctx, want=kt), kt, el)

    # ------------------------------------------------------------------ controls

    def check_control(
        self,
        d: ast.ControlDecl,
        prefix: str,
        ctor_args: list[ast.Argument],
        top: bool = False,
        arg_scope: Scope | None = None,
    ) -> None:
        if d.type_params:
            raise unsupported("generic controls", d)
        outer, self.instance = self.instance, prefix
        try:
            self._check_control(d, prefix, ctor_args, top, arg_scope)
        finally:
            self.instance = outer

    def _check_control(
        self,
        d: ast.ControlDecl,
        prefix: str,
        ctor_args: list[ast.Argument],
        top: bool,
        arg_scope: Scope | None,
    ) -> None:
        ctx = Ctx(block="control")
        scope = Scope(self.g, d.name)
        self.bind_ctor_args(d, ctor_args, scope, arg_scope if arg_scope is not None else self.g)
        for p in d.params:
            pt = self.resolve_type(p.type, scope)
            if isinstance(pt, TExtern) and pt.name == "packet_in":
                raise unsupported("packet_in in a control", p)
            if (
                top
                and p.direction in ("out", "inout")
                and not isinstance(pt, (TStruct, TStack, TExtern))
            ):
                raise unsupported("scalar out/inout parameters of a pipeline control", p)
        self.bind_params(d.params, scope, ctx)
        for loc in d.locals:
            self.local_decl(loc, scope, ctx, prefix)
        ctx.body = id(d.apply)
        self.bodies.add(ctx.body)
        self.block(d.apply, scope, ctx)

    def local_decl(self, loc: ast.Node, scope: Scope, ctx: Ctx, prefix: str) -> None:
        if isinstance(loc, ast.Unsupported):
            raise unsupported(loc.what, loc)
        if isinstance(loc, ast.ActionDecl):
            self.callables.append(
                scope.add(
                    Sym(
                        "action",
                        loc.name,
                        loc,
                        scope=scope,
                        value=cp_name(prefix, loc),
                        extra={"sm": ctx.sm, "inst": prefix},
                    ),
                    loc,
                )
            )
        elif isinstance(loc, ast.FunctionDecl):
            self.callables.append(
                scope.add(
                    Sym(
                        "function", loc.name, loc, scope=scope, extra={"sm": ctx.sm, "inst": prefix}
                    ),
                    loc,
                )
            )
        elif isinstance(loc, ast.TableDecl):
            self.table_decl(loc, scope, ctx, prefix)
        elif isinstance(loc, ast.Instantiation):
            self.instantiation(loc, scope, ctx, prefix)
        elif isinstance(loc, ast.ValueSetDecl):
            t = self.resolve_type(loc.element_type, scope)
            self.const_eval(loc.size, scope)
            if isinstance(t, TStruct) and t.kind == "struct":
                self.check_field_ids([t.annotations.get(f, []) for f, _ in t.fields], loc)
            elif not isinstance(t, TBits):
                raise unsupported(
                    f"value_set of {t.show()} (P4Runtime takes bit<W> or a struct of them)", loc
                )
            scope.add(Sym("value_set", loc.name, loc, t), loc)
        elif isinstance(loc, (ast.VariableDecl, ast.ConstDecl)):
            self.stmt(loc, scope, ctx)
        else:
            raise unsupported(f"declaration {type(loc).__name__} here", loc)

    def check_callable(self, sym: Sym) -> None:
        """An action's or function's body, once, in the scope it is declared in."""
        outer, self.instance = self.instance, sym.extra.get("inst", "")
        try:
            self._check_callable(sym)
        finally:
            self.instance = outer

    def _check_callable(self, sym: Sym) -> None:
        d = sym.decl
        assert isinstance(d, (ast.ActionDecl, ast.FunctionDecl))
        self.checked_bodies.add(body_key(sym))
        dscope = sym.scope or self.g
        inner = Scope(dscope, d.name)
        for p in d.params:
            pt = self.resolve_type(p.type, dscope)
            inner.add(Sym("var", p.name, p, pt, extra={"dir": p.direction or "in"}), p)
        ret = None
        if isinstance(d, ast.FunctionDecl):
            ret = self.resolve_type(d.return_type, dscope)
            if ret.show() == "void":
                ret = None
        # a top-level one runs where it is called: what is in scope there is checked at the call
        block = (
            "global"
            if sym.scope is self.g
            else "action"
            if isinstance(d, ast.ActionDecl)
            else "function"
        )
        ctx = Ctx(
            ret=ret, in_callable=True, block=block, sm=bool(sym.extra.get("sm")), body=id(d.body)
        )
        self.bodies.add(ctx.body)
        self.block(d.body, inner, ctx)
        if "needs_sm" in ctx.extra:
            sym.extra["needs_sm"] = ctx.extra["needs_sm"]

    # ------------------------------------------------------------------ instances

    def instantiation(
        self, d: ast.Instantiation, scope: Scope, ctx: Ctx | None, prefix: str
    ) -> None:
        # `Outer(Inner()) o;`: the same moved nodes for every instance, and for lowering
        before, d = self.moved.setdefault(id(d), ctor_args.move(d, self.ctor_arg_names))  # type: ignore[attr-defined]
        for inst in before:
            self.instantiation(inst, scope, ctx, prefix)
        t = self.resolve_type(d.type, scope)
        name = cp_name(prefix, d)
        if isinstance(t, TNamedBlock) and t.kind == "control_decl":
            self.check_control(t.decl, name, d.args, arg_scope=scope)  # type: ignore[arg-type]
            scope.add(Sym("instance", d.name, d, t, value="control"), d)
            return
        if (
            isinstance(t, TNamedBlock)
            and t.kind == "parser_decl"
            and ctx is not None
            and ctx.in_parser
        ):
            self.check_parser(t.decl, name, d.args, sub=True, arg_scope=scope)  # type: ignore[arg-type]
            scope.add(Sym("instance", d.name, d, t, value="parser"), d)
            return
        if isinstance(t, TNamedBlock):
            raise unsupported(
                f"instantiating {t.kind.replace('_decl', '')} {t.name} inside a block", d
            )
        if not isinstance(t, TExtern):
            raise err(f"cannot instantiate {t.show()}", d)
        self.extern_instance(d, t, scope)
        scope.add(Sym("instance", d.name, d, t, value=name), d)

    # ------------------------------------------------------------------ tables

    def table_decl(self, d: ast.TableDecl, scope: Scope, ctx: Ctx, prefix: str) -> None:

        name = cp_name(prefix, d)
        keys: list[KeyField] = []
        key_types: list[Type] = []
        selectors: list[ast.KeyElement] = []
        for i, k in enumerate(d.keys):
            if k.match_kind == "selector":  # the action selector's hash input, not a match key
                st = self.expr(k.expr, scope, ctx).type
                if not key_width(st):
                    raise err(f"selector key of type {st.show()} has no bit width", k.expr)
                selectors.append(k)
                continue
            if k.match_kind not in MATCH_KINDS:
                raise err(f"unknown match kind '{k.match_kind}'", k)
            kt = self.expr(k.expr, scope, ctx).type
            if isinstance(kt, TEnum) and kt.underlying is None:
                raise unsupported("non-serializable enum as table key", k.expr)
            w = key_width(kt)
            if not w:
                raise err(f"table key of type {kt.show()} has no bit width", k.expr)
            a = k.annotation("name")
            kname = a.string_value() if a is not None and a.string_value() else key_text(k.expr)
            keys.append(KeyField(kname or "", k.match_kind, w, i + 1))
            key_types.append(kt)
        self.check_field_ids(d.keys, d)
        if sum(1 for k in keys if k.match_kind == "lpm") > 1:
            raise err("a table can have at most one lpm key", d)
        actions: list[ActionSpec] = []
        syms: list[Sym] = []
        for ar in d.actions:
            asym = self.names[id(ar.name)] = scope.resolve(
                ar.name.name, ar.name, top_level=ar.name.top_level
            )
            if asym.kind != "action":
                raise err(f"'{ar.name.name}' is not an action", ar.name)
            if body_key(asym) not in self.checked_bodies:
                self.check_callable(asym)
            adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
            nbound = len(ar.args or [])
            if nbound > len(adecl.params):
                raise err(f"action {ar.name.name} takes {len(adecl.params)} parameters", ar)
            params = []
            for p in adecl.params[nbound:]:
                if p.direction:
                    raise unsupported("directional action parameters in a table action", p)
                pt = self.resolve_type(p.type, asym.scope or scope)
                if not width_of(pt):
                    raise unsupported(f"action parameter of type {pt.show()}", p)
                params.append((param_cp_name(p), width_of(pt)))
            if nbound:
                # arguments bound in `actions = { a(x); }`: checked like a call's
                vals = [
                    self.bound_value(a_, p_, asym, scope, ctx)
                    for a_, p_ in zip(ar.args or [], adecl.params, strict=False)
                ]
                vals += [
                    Val(self.resolve_type(p.type, asym.scope or scope))
                    for p in adecl.params[nbound:]
                ]
                self.bind_args(asym, vals, list(ar.args or []), scope, ctx)
            self.check_field_ids([p for p in adecl.params if not p.direction], adecl)
            self.check_sm_use(asym, ctx)
            sc = (
                "TABLE_ONLY"
                if ar.has_annotation("tableonly")
                else "DEFAULT_ONLY"
                if ar.has_annotation("defaultonly")
                else "TABLE_AND_DEFAULT"
            )
            actions.append(ActionSpec(asym.value or asym.name, tuple(params), sc))
            syms.append(asym)
        sp = d.prop("size")
        if sp is not None and sp.value is not None:
            self.const_eval(sp.value, scope)
        dp = d.default_action
        if dp is not None and dp.value is not None:
            self.bound_action(dp.value, scope, actions, syms)
        else:
            nsym = self.g.lookup("NoAction")
            if not any(a.name == "NoAction" for a in actions):
                if nsym is None or nsym.kind != "action":
                    raise err(
                        f"table {d.name} has no default_action and NoAction is not declared", d
                    )
                actions.append(ActionSpec("NoAction", (), "DEFAULT_ONLY"))
                syms.append(nsym)
        for pname in ("counters", "meters"):
            p = d.prop(pname)
            if p is None or p.value is None:
                continue
            if not isinstance(p.value, ast.Name):
                raise err(f"{pname} = must name a direct_{pname[:-1]} instance", p.value)
            isym = self.names[id(p.value)] = scope.resolve(p.value.name, p.value)
            p.value.checked_type = isym.type
            ext = (
                registry.lookup(isym.type.name)
                if (isym.kind == "instance" and isinstance(isym.type, TExtern))
                else None
            )
            if ext is None or ext.table_property != pname:  # v1model: direct_counter / direct_meter
                raise err(f"{pname} = must name a direct_{pname[:-1]}", p.value)
        ep = d.prop("entries")
        impl = self.table_implementation(d, scope, ctx)
        if selectors and not getattr(impl, "selector", False):
            raise err("selector keys need `implementation = action_selector(...)`", selectors[0])
        if impl is not None and ep is not None and ep.entries:
            raise unsupported("entries in a table with an action profile/selector", ep)
        entries = (
            [
                self.const_entry(en, keys, key_types, scope, actions, syms, name, i + 1)
                for i, en in enumerate(ep.entries or [])
            ]
            if ep is not None
            else []
        )
        # an entry the switch would refuse to install is a located compile error
        bad = const_entry_error(name, keys, actions, entries)
        if bad is not None:
            raise err(f"table {d.name}: {bad[1]}", ep.entries[bad[0]])  # type: ignore[union-attr]
        scope.add(Sym("table", d.name, d, extra={"action_syms": syms}), d)

    def table_implementation(self, d: ast.TableDecl, scope: Scope, ctx: Ctx) -> Any:
        """The extern module of `implementation = x` / `= action_selector(...)` (None: no
        such property): an action_profile/action_selector instance or constructor call."""
        ip = d.prop("implementation")
        if ip is None or ip.value is None:
            return None
        v = ip.value
        what = "implementation = must name or construct an action_profile or action_selector"
        if isinstance(v, ast.Name):
            isym = self.names[id(v)] = scope.resolve(v.name, v, top_level=v.top_level)
            v.checked_type = isym.type
            ext = (
                registry.lookup(isym.type.name)
                if (isym.kind == "instance" and isinstance(isym.type, TExtern))
                else None
            )
            if ext is None or ext.table_property != "implementation":
                raise err(what, v)
            return ext
        if isinstance(v, ast.MethodCall) and isinstance(v.callee, ast.Name) and not v.type_args:
            t = self.resolve_type(ast.NamedType(v.callee.name, span=v.callee.span), scope)
            ext = registry.lookup(t.name) if isinstance(t, TExtern) else None
            if ext is None or ext.table_property != "implementation":
                raise err(what, v)
            # checked as the declaration `T(args) implementation;` would be
            self.extern_instance(
                ast.Instantiation(
                    name="implementation",
                    type=ast.NamedType(v.callee.name),
                    args=v.args,
                    annotations=ip.annotations,
                    span=v.span,
                ),
                t,
                scope,
            )  # type: ignore[arg-type]
            return ext
        raise err(what, v)

    def bound_value(
        self, a: ast.Argument, p: ast.Parameter, asym: Sym, scope: Scope, ctx: Ctx
    ) -> Val:
        pt = self.resolve_type(p.type, asym.scope or scope)
        if p.direction == "out":
            return Val(pt)
        return self.expr(a.value, scope, ctx, want=pt)

    def bound_action(
        self, e: ast.Expression, scope: Scope, actions: list, syms: list[Sym]
    ) -> tuple[str, dict[str, int]]:
        """An action with compile-time arguments (`default_action = a(1)`, entries)."""
        callee, args = (e.callee, e.args) if isinstance(e, ast.MethodCall) else (e, [])
        if not isinstance(callee, ast.Name):
            raise err("expected an action call", e)
        asym = self.names[id(callee)] = scope.resolve(
            callee.name, callee, top_level=callee.top_level
        )
        idx = next((i for i, s in enumerate(syms) if s is asym), None)
        if idx is None:
            raise err(f"action '{callee.name}' is not in the table's actions list", e)
        spec = actions[idx]
        e.checked_type = VOID
        adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
        nb = len(adecl.params) - len(spec.params)  # leading params bound in the actions list
        if nb and len(args) == len(adecl.params):
            args = args[nb:]  # `default_action = a(bound, ...)` repeats the bound arguments
        if len(args) != len(spec.params):
            raise err(
                f"action {callee.name} takes {len(spec.params)} arguments, {len(args)} given", e
            )
        vals = {}
        for (pname, _pw), a, p in zip(spec.params, args, adecl.params[nb:], strict=True):
            pt = self.resolve_type(p.type, asym.scope or scope)
            v = self.coerce(self.expr(a.value, scope, None, want=pt), pt, a.value)
            if not v.is_const:
                raise err("table action arguments must be compile-time constants", a.value)
            vals[pname] = int(v.const)
        return spec.name, vals

    def const_entry(
        self,
        en: ast.Entry,
        keys: list[KeyField],
        key_types: list[Type],
        scope: Scope,
        actions: list,
        syms: list[Sym],
        tname: str,
        order_prio: int,
    ) -> TableEntry:
        ks = en.keyset
        elems = ks.elements if isinstance(ks, ast.TupleKeyset) else [ks]
        if len(elems) != len(keys):
            raise err(f"entry has {len(elems)} key values, table has {len(keys)} keys", ks)
        match: dict = {}

        def const(x: ast.Expression, kt: Type) -> Val:
            v = self.expr(x, scope, None, want=kt)
            if not v.is_const:
                raise err("entry key values must be compile-time constants", x)
            return v

        def to_key(v: Val, kt: Type, x: ast.Expression) -> int:
            # p4c TypeInference::postorder(const IR::Entry*) unifies the key types with the
            # entry's, casts allowed: a serializable-enum key also takes exactly its
            # underlying bit<W> (table-entries-ser-enum: `(bit<16>)E.M &&& 0xff00`)
            if (
                isinstance(kt, TEnum)
                and kt.underlying is not None
                and isinstance(v.type, TBits)
                and (v.type.width, v.type.signed) == (kt.underlying.width, kt.underlying.signed)
            ):
                return int(v.const)
            return int(self.coerce(v, kt, x).const)

        def value(x: ast.Expression, kt: Type) -> int:
            return to_key(const(x, kt), kt, x)

        def under(t: Type) -> Type:
            return t.underlying if isinstance(t, TEnum) and t.underlying is not None else t

        def pair(
            el: ast.Expression, a_x: ast.Expression, b_x: ast.Expression, kt: Type, op: str
        ) -> tuple[int, int]:
            # p4c TypeInference::typeSet (`&&&`, `..`): each side taken as bit<W> (a serializable
            # enum as its underlying type) or an int literal; two bit<W> sides must be the same
            # type; the set has the left side's own type (the right's when the left is a literal)
            a, b = const(a_x, kt), const(b_x, kt)
            ua, ub = under(a.type), under(b.type)
            for v, u, x in ((a, ua, a_x), (b, ub, b_x)):
                if not isinstance(u, (TBits, TInt)):
                    raise err(f"{op}: cannot be applied to a value of type {v.type.show()}", x)
            if (
                isinstance(ua, TBits)
                and isinstance(ub, TBits)
                and (ua.width, ua.signed) != (ub.width, ub.signed)
            ):
                raise err(
                    f"{op}: cannot operate on values with different types {ua.show()} and {ub.show()}",
                    el,
                )
            elem = a.type if not isinstance(ua, TInt) else ub
            if isinstance(elem, TInt):  # two literals: each is the key's type
                return to_key(a, kt, a_x), to_key(b, kt, b_x)
            w = under(elem).width  # type: ignore[attr-defined]
            return (
                to_key(Val(elem, int(a.const) & mask(w)), kt, a_x),
                to_key(Val(elem, int(b.const) & mask(w)), kt, b_x),
            )

        for el, k, kt in zip(elems, keys, key_types, strict=True):
            if isinstance(el, (ast.DontCare, ast.DefaultKeyset)):
                continue
            if isinstance(el, ast.MaskKeyset):
                v, m = pair(el, el.value, el.mask, kt, "&&&")
                plen = bin(m).count("1")
                if k.match_kind == "lpm" and m != mask(plen) << (k.bitwidth - plen):
                    # p4c (bmv2 ControlConverter::convertTableEntries, P4Runtime serializer):
                    # an lpm mask must be a contiguous prefix (0 is the /0)
                    raise err(f"{m:#x}: invalid mask for LPM key {k.name}", el)
                match[k.name] = Lpm(v & m, plen) if k.match_kind == "lpm" else Ternary(v, m)
            elif isinstance(el, ast.RangeKeyset):
                match[k.name] = Range(*pair(el, el.low, el.high, kt, ".."))
            else:
                val = value(el, kt)
                match[k.name] = (
                    Exact(val)
                    if k.match_kind == "exact"
                    else Optional_(val)
                    if k.match_kind == "optional"
                    else Lpm(val, k.bitwidth)
                    if k.match_kind == "lpm"
                    else Ternary(val, mask(k.bitwidth))
                    if k.match_kind == "ternary"
                    else Range(val, val)
                )
        aname, args = self.bound_action(en.action, scope, actions, syms)
        if en.priority is not None:
            prio = self.const_eval(en.priority, scope)
        else:
            a = en.annotation("priority")
            prio = (1 << 30) - int(
                a.int_value() if a is not None and a.int_value() is not None else order_prio
            )
        return TableEntry(tname, match, aname, args, priority=prio)
