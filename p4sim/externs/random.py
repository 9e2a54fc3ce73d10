"""v1model `random(out result, lo, hi)`: uniform in [lo, hi] from the switch's seeded RNG
(`Switch.random`), so that runs repeat."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from .base import Extern


@extern
class Random(Extern):
    functions = ("random",)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        cc.check_nargs(name, argv, c, 3)
        lt = cc.lvalue_type(argv[0], scope, fn)
        lo = cc.convert(cc.expr(argv[1], scope, fn), lt)
        hi = cc.convert(cc.expr(argv[2], scope, fn), lt)
        cc.assign(argv[0], V(f"_RT.random({lo.code}, {hi.code})", lt), scope, fn)
        return V("None", VOID)
