"""v1model `random(out result, lo, hi)`: uniform in [lo, hi] from the switch's seeded RNG
(`Switch.rng`, which this module makes from the switch's seed), so that runs repeat."""

from __future__ import annotations

import random as _random
from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from .base import Extern


@extern
class Random(Extern):
    functions = ("random",)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        lt = cc.lvalue_type(argv[0], scope, fn)
        lo = cc.convert(cc.expr(argv[1], scope, fn), lt)
        hi = cc.convert(cc.expr(argv[2], scope, fn), lt)
        cc.assign(argv[0], V(f"_RT.random({lo.code}, {hi.code})", lt), scope, fn)
        return V("None", VOID)

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        # the switch's one seeded random source (hash's `random` algorithm draws from it too)
        sw.rng = _random.Random(sw.seed)

    def runtime_methods(self) -> dict[str, Any]:
        return {"random": _random_in}


def _random_in(sw: Any, lo: int, hi: int) -> int:
    if hi < lo:
        return lo
    return sw.rng.randint(lo, hi)
