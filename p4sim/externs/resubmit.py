"""v1model `resubmit`/`recirculate` (deprecated, with a field list) and their
`_preserving_field_list` forms: the switch runs the packet through ingress again (resubmit,
after ingress) or through the whole pipeline (recirculate, after the deparser)."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from ._common import field_list_fn, listed_fields_fn
from .base import Extern


@extern
class Resubmit(Extern):
    functions = ("resubmit", "recirculate", "resubmit_preserving_field_list", "recirculate_preserving_field_list")

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        if not name.endswith("_preserving_field_list"):
            ck.listed_fields(argv[0], scope)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        what = name.split("_")[0]
        if name.endswith("_preserving_field_list"):
            fl = field_list_fn(cc, argv[0], scope)
        else:
            fl = listed_fields_fn(cc, argv[0], scope)
        fn.emit(f"_RT.{what}({fl})")
        return V("None", VOID)
