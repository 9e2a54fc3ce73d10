"""Scopes and symbols: what a name in P4 source refers to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4sim.frontend import ast

from .types import P4TypeError, Type, err, name_span


@dataclass(eq=False)
class Sym:
    """A resolved name.

    kind: 'type' | 'var' | 'const' | 'action' | 'function' | 'table' | 'instance' |
          'extern_fn' | 'extern_type' | 'parser_decl' | 'control_decl' | 'value_set' |
          'state' | 'packet' | 'package' | 'enum_type'
    """

    kind: str
    name: str
    decl: ast.Node | None = None
    type: Type | None = None
    py: str = ""  # Python expression that holds the value at run time
    value: Any = None  # folded constant value (kind 'const'), or extra data
    scope: Scope | None = None  # the scope the declaration lives in (actions, functions)
    extra: dict = field(default_factory=dict)


class Scope:
    def __init__(self, parent: Scope | None = None, label: str = ""):
        self.parent = parent
        self.names: dict[str, Sym] = {}
        self.label = label

    def add(self, sym: Sym, node: ast.Node | None = None, *, replace: bool = False) -> Sym:
        if sym.name in self.names and not replace:
            old = self.names[sym.name]
            # P4 allows overloading externs/functions by arity; keep a list
            if old.kind in ("extern_fn", "function") and sym.kind == old.kind:
                old.extra.setdefault("overloads", [old.decl]).append(sym.decl)
                return old
            span = name_span(node) if node is not None else None
            if span is None:
                raise err(f"'{sym.name}' is already declared in this scope", node)
            raise P4TypeError(f"'{sym.name}' is already declared in this scope", span)
        self.names[sym.name] = sym
        return sym

    def lookup(self, name: str) -> Sym | None:
        s: Scope | None = self
        while s is not None:
            sym = s.names.get(name)
            if sym is not None:
                return sym
            s = s.parent
        return None

    def root(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def resolve(self, name: str, node: ast.Node | None, *, top_level: bool = False) -> Sym:
        sym = self.root().names.get(name) if top_level else self.lookup(name)
        if sym is None:
            raise err(f"unknown name '{name}'", node)
        return sym
