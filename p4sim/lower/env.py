"""Lowering's environment: which Python name (and value) a declaration has at one site.

Check resolved every name already (`CheckedProgram.names`: the `Sym` of each `ast.Name`,
whose `decl` is the declaring node). Lowering does not look names up again; it maps that
declaration to its own binding at the site being written: an action inlined at three call
sites, or a control instantiated twice, gets one `Env` per site, each binding the same
declarations (parameters, locals, instances) to different Python names.
"""

from __future__ import annotations

from p4sim.check.names import Sym
from p4sim.frontend import ast


class Env:
    """Bindings of one site (a block instance, a state, a block statement, an inlined body),
    falling back to the enclosing site's."""

    __slots__ = ("parent", "binds")

    def __init__(self, parent: Env | None = None):
        self.parent = parent
        self.binds: dict[int, Sym] = {}  # id(declaring node) -> lowering's Sym for it here

    def add(self, sym: Sym) -> Sym:
        self.binds[id(sym.decl)] = sym
        return sym

    def find(self, decl: ast.Node | None) -> Sym | None:
        env: Env | None = self
        key = id(decl)
        while env is not None:
            sym = env.binds.get(key)
            if sym is not None:
                return sym
            env = env.parent
        return None
