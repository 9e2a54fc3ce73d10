"""v1model `clone`, `clone_preserving_field_list` and the deprecated `clone3`: ask the
traffic manager for an ingress-to-egress (I2E) or egress-to-egress (E2E) copy to a clone
session; the switch (`Switch.clone`) makes it after the control, as simple_switch does."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from ._common import enum_member, field_list_fn, listed_fields_fn
from .base import Extern


@extern
class Clone(Extern):
    functions = ("clone", "clone_preserving_field_list", "clone3")

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        if name == "clone3":
            ck.listed_fields(argv[2], scope)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        ct = enum_member(argv[0])
        sess = cc.expr(argv[1], scope, fn).code
        fl = "None"
        if name == "clone_preserving_field_list":
            fl = field_list_fn(cc, argv[2], scope)
        elif name == "clone3":
            fl = listed_fields_fn(cc, argv[2], scope)
        fn.emit(f"_RT.clone({1 if ct == 'I2E' else 2}, {sess}, {fl})")
        return V("None", VOID)
