"""core.p4 `verify(condition, error)`: in a parser, a false condition ends parsing with
that error (P4_16 spec, "verify")."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from .base import Extern


@extern
class Verify(Extern):
    functions = ("verify",)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        cnd = cc.cond(argv[0], scope, fn)
        e = cc.expr(argv[1], scope, fn)
        fn.emit(f"if not ({cnd}): raise ParserError({e.code})")
        return V("None", VOID)
