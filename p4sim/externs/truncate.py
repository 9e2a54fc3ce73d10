"""v1model `truncate(length)`: the packet leaves with at most `length` bytes (BMv2 keeps
the smallest length asked for in one pass; `Switch.truncate`)."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from .base import Extern


@extern
class Truncate(Extern):
    functions = ("truncate",)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        fn.emit(f"_RT.truncate({cc.expr(argv[0], scope, fn).code})")
        return V("None", VOID)
