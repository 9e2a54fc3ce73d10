"""v1model `mark_to_drop(standard_metadata)` and the deprecated `mark_to_drop()`."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V, fld

from . import extern
from .base import Extern


@extern
class MarkToDrop(Extern):
    functions = ("mark_to_drop",)

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        if not argv:
            ck.need_standard_metadata(
                c, ctx, "mark_to_drop() where no standard_metadata is in scope"
            )

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        # the deprecated mark_to_drop() acts on the standard metadata in scope, as the
        # BMv2 back end of p4c lowers it (check_call: there is one)
        sm = cc.expr(argv[0], scope, fn).code if argv else fn.sm
        fn.emit(
            f"{sm}.{fld('egress_spec')} = _RT.drop_port"
        )  # the switch's drop port, as BMv2's primitive
        fn.emit(f"{sm}.{fld('mcast_grp')} = 0")
        return V("None", VOID)
