"""Top-level declarations and types: what every later stage reads from the global scope.

`DeclChecker.declare_top` enters each top-level declaration in the global scope (types
with their fields, enums with their values, error codes, constants folded, externs,
parsers, controls, actions, functions, instances); `resolve_type` turns a written type
into a `types.Type` and records it (`Checker.types`, keyed by the type node) so lowering
reads it instead of resolving again.
"""

from __future__ import annotations

from p4sim.frontend import ast

from .controlplane import field_ids
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
    TExtern,
    TMatchKind,
    TNamedBlock,
    TStack,
    TStruct,
    TTuple,
    TTypeVar,
    TVarbit,
    Type,
    check_type_args,
    err,
    identical,
    mask,
    unsupported,
)


def const_code(value: object) -> str:
    """The Python literal of a folded constant (as lowering writes it)."""
    return repr(value) if isinstance(value, str) else str(value)


class DeclChecker:
    """Mixin of `p4sim.check.Checker`: declarations and types."""

    g: Scope
    errors: dict[str, int]
    struct_types: dict[str, TStruct]
    callables: list[Sym]
    types: dict[int, object]

    # ------------------------------------------------------------------ top level

    def declare_top(self, d: ast.Node) -> None:
        g = self.g
        if isinstance(d, ast.Unsupported):
            raise unsupported(d.what, d)
        if isinstance(d, ast.ErrorDecl):
            for m in d.members:
                if m.name in self.errors:
                    # p4c: "FOO: Duplicates declaration FOO" (error members are one namespace)
                    raise err(f"{m.name}: Duplicates declaration {m.name}", m)
                self.errors[m.name] = len(self.errors)
            return
        if isinstance(d, ast.MatchKindDecl):
            for m in d.members:
                g.add(Sym("match_kind", m.name, m, TMatchKind()), m, replace=True)
            return
        if isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl)):
            kind = {
                ast.HeaderDecl: "header",
                ast.StructDecl: "struct",
                ast.HeaderUnionDecl: "union",
            }[type(d)]
            if d.type_params:
                raise unsupported(f"generic {kind} types", d)
            t = TStruct(kind, d.name, [], d)  # lowering names its class (TStruct.pycls)
            g.add(Sym("type", d.name, d, t), d)
            self.struct_types[d.name] = t
            for f in d.fields:
                ft = self.resolve_type(f.type, g)
                if kind == "header" and not (
                    isinstance(ft, (TBits, TVarbit, TBool, TEnum)) or _fixed_struct(ft)
                ):
                    raise err(
                        f"header field '{f.name}' must be bit<N>, int<N>, varbit, bool "
                        "or a struct of them",
                        f,
                    )
                if kind == "union" and not (isinstance(ft, TStruct) and ft.kind == "header"):
                    raise err(f"header union member '{f.name}' must be a header", f)
                t.fields.append((f.name, ft))
                t.annotations[f.name] = f.annotations
            if kind == "header" and sum(isinstance(ft, TVarbit) for _, ft in t.fields) > 1:
                raise unsupported("a header with more than one varbit field", d)
            if (
                kind == "header"
                and any(isinstance(ft, TVarbit) for _, ft in t.fields)
                and any(isinstance(ft, TStruct) for _, ft in t.fields)
            ):
                raise unsupported("a header with a varbit field and a struct field", d)
            return
        if isinstance(d, ast.EnumDecl):
            if d.underlying is not None:
                ut = self.resolve_type(d.underlying, g)
                if not isinstance(ut, TBits):
                    raise err("serializable enum needs a bit<N> or int<N> type", d)
                members = {}
                for m in d.members:
                    if m.value is None:
                        raise err(f"member {m.name} of serializable enum needs a value", m)
                    members[m.name] = self.const_eval(m.value, g) & mask(ut.width)
                t = TEnum(d.name, members, ut)
            else:
                t = TEnum(d.name, {m.name: i for i, m in enumerate(d.members)})
            g.add(Sym("type", d.name, d, t), d)
            return
        if isinstance(d, (ast.TypedefDecl, ast.NewTypeDecl)):
            g.add(Sym("type", d.name, d, self.resolve_type(d.type, g)), d)
            return
        if isinstance(d, ast.ConstDecl):
            self.declare_const(d, g)
            return
        if isinstance(d, ast.ExternDecl):
            g.add(Sym("extern_type", d.name, d, TExtern(d.name, d)), d)
            return
        if isinstance(d, ast.ExternFunctionDecl):
            g.add(Sym("extern_fn", d.name, d), d)
            return
        if isinstance(d, (ast.ParserTypeDecl, ast.ControlTypeDecl, ast.PackageTypeDecl)):
            g.add(Sym("type", d.name, d, TNamedBlock("blocktype", d.name, d)), d)
            return
        if isinstance(d, ast.ParserDecl):
            g.add(Sym("parser_decl", d.name, d), d)
            return
        if isinstance(d, ast.ControlDecl):
            g.add(Sym("control_decl", d.name, d), d)
            return
        if isinstance(d, ast.ActionDecl):
            self.callables.append(g.add(Sym("action", d.name, d, scope=g, value=cp_name("", d)), d))
            return
        if isinstance(d, ast.FunctionDecl):
            if d.type_params:
                raise unsupported("generic functions (type parameters)", d)
            self.callables.append(g.add(Sym("function", d.name, d, scope=g), d))
            return
        if isinstance(d, ast.Instantiation):
            t = self.resolve_type(d.type, g)
            if isinstance(t, TExtern):
                self.instantiation(d, g, None, "")
            else:
                g.add(Sym("instance", d.name, d), d)
            return
        raise unsupported(f"top-level declaration {type(d).__name__}", d)

    def declare_const(self, d: ast.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.type, scope)
        v = self.expr(d.value, scope, None, want=t)
        if not v.is_const:
            raise err(f"the value of constant '{d.name}' is not a compile-time constant", d.value)
        v = self.coerce(v, t, d.value)
        scope.add(Sym("const", d.name, d, t, py=const_code(v.const), value=v.const), d)

    # ------------------------------------------------------------------ types

    def resolve_type(self, t: ast.Type, scope: Scope, tvars: dict[str, Type] | None = None) -> Type:
        r = self._resolve_type(t, scope, tvars)
        if tvars:  # an extern's signature, for one use: nothing lowering reads
            return r
        key = id(t)
        self.inst_types[(self.instance, key)] = r  # type: ignore[attr-defined]
        old = self.types.get(key)
        if old is None:
            self.types[key] = r
        elif old is not VARIES and not identical(old, r):
            self.types[key] = VARIES
        return r

    def _resolve_type(self, t: ast.Type, scope: Scope, tvars: dict[str, Type] | None) -> Type:
        if isinstance(t, ast.BitType):
            return TBits(self.const_eval(t.width, scope), False)
        if isinstance(t, ast.IntType):
            return TBits(self.const_eval(t.width, scope), True)
        if isinstance(t, ast.InfIntType):
            return INT
        if isinstance(t, ast.VarbitType):
            return TVarbit(self.const_eval(t.width, scope))
        if isinstance(t, ast.BoolType):
            return BOOL
        if isinstance(t, ast.ErrorType):
            return ERROR
        if isinstance(t, ast.StringType):
            return STRING
        if isinstance(t, ast.VoidType):
            return VOID
        if isinstance(t, ast.MatchKindType):
            return TMatchKind()
        if isinstance(t, ast.DontCareType):
            return TDontCare()
        if isinstance(t, ast.NamedType):
            if tvars and t.name in tvars:
                return tvars[t.name]
            sym = scope.resolve(t.name, t, top_level=t.top_level)
            if sym.kind == "type" and sym.type is not None:
                return sym.type
            if sym.kind == "extern_type":
                return TExtern(t.name, sym.decl)  # type: ignore[arg-type]
            if sym.kind == "tvar":
                return sym.type or TTypeVar(t.name)
            if sym.kind in ("parser_decl", "control_decl"):
                return TNamedBlock(sym.kind, t.name, sym.decl)
            raise err(f"'{t.name}' is not a type", t)
        if isinstance(t, ast.SpecializedType):
            base = self.resolve_type(t.base, scope, tvars)
            args = [self.resolve_type(a, scope, tvars) for a in t.args]
            if isinstance(base, TExtern):
                check_type_args(base, args, t)
                return TExtern(base.name, base.decl, args)
            if isinstance(base, TNamedBlock):
                return base
            raise unsupported(f"generic type {base.show()}<...>", t)
        if isinstance(t, ast.StackType):
            elem = self.resolve_type(t.element, scope, tvars)
            if not (isinstance(elem, TStruct) and elem.kind in ("header", "union")):
                raise err("a stack's elements must be headers or header unions", t)
            return TStack(elem, self.const_eval(t.size, scope))
        if isinstance(t, ast.TupleType):
            return TTuple([self.resolve_type(e, scope, tvars) for e in t.elements])
        if isinstance(t, ast.ListType):
            raise unsupported("list<T> types (P4_16 1.2.4)", t)
        raise unsupported(f"type {type(t).__name__}", t)

    # ------------------------------------------------------------------ control-plane ids

    def check_field_ids(self, items: list, owner: ast.Node) -> None:
        """@id on an object's fields as p4c allows them (p4sim.check.controlplane.field_ids)."""
        user: list[int | None] = []
        for it in items:
            anns = it if isinstance(it, list) else getattr(it, "annotations", [])
            a = next((x for x in anns if x.name == "id"), None)
            user.append(a.int_value() if a is not None else None)
        try:
            field_ids(user)
        except ValueError as e:
            raise err(str(e), owner) from None


def cp_name(prefix: str, d: ast.Node, default: str | None = None) -> str:
    """A declaration's control-plane name: its @name (absolute with a leading dot), else its
    name, under `prefix` (p4c's HierarchicalNames)."""
    name = default if default is not None else getattr(d, "name", "")
    a = d.annotation("name") if isinstance(d, ast.Annotated) else None
    if a is not None and a.string_value() is not None:
        n = a.string_value() or ""
        if n.startswith("."):
            return n[1:]
        name = n
    return f"{prefix}.{name}" if prefix else name


def _fixed_struct(t: object) -> bool:
    """A struct a header may hold: fields bit<N>, int<N>, bool, serializable enum or such
    structs (p4c frontends/p4/typeChecking/typeCheckTypes.cpp, onlyBitsOrBitStructs; its
    sample bvec-hdr-bmv2). p4c's midend/flattenHeaders.cpp then lays the leaves out in order."""
    return (
        isinstance(t, TStruct)
        and t.kind == "struct"
        and all(
            isinstance(ft, (TBits, TBool))
            or (isinstance(ft, TEnum) and ft.underlying is not None)
            or _fixed_struct(ft)
            for _, ft in t.fields
        )
    )
