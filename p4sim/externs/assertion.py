"""v1model `assert(check)` and `assume(check)`: a false check stops the switch, as BMv2's
simple_switch aborts (p4sim raises AssertFailed with the call's location)."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V
from p4sim.lower.rt import AssertFailed

from . import extern
from .base import Extern


@extern
class Assertion(Extern):
    functions = ("assert", "assume")
    stops = (AssertFailed,)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        cnd = cc.cond(argv[0], scope, fn)
        where = f"{name} failed at {c.span}"
        fn.emit(f"if not ({cnd}): raise AssertFailed({where!r})")
        return V("None", VOID)
