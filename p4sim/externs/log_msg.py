"""v1model `log_msg(msg[, data])`: BMv2 logs the message with `{}` replaced by the values
(the lines go to `Switch.log`)."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.frontend import ast
from p4sim.lower.codegen import V

from . import extern
from .base import Extern


@extern
class LogMsg(Extern):
    functions = ("log_msg",)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        msg = cc.expr(argv[0], scope, fn)
        if len(argv) == 2:
            data = argv[1]
            elems = data.elements if isinstance(data, ast.ListExpression) else [data]
            vals = ", ".join(cc.expr(x, scope, fn).code for x in elems)
            fn.emit(f"_RT.log_msg({msg.code}, ({vals},))")
        else:
            fn.emit(f"_RT.log_msg({msg.code}, ())")
        return V("None", VOID)

    def runtime_methods(self) -> dict[str, Any]:
        return {"log_msg": _log}


def _log(sw: Any, msg: str, values: tuple) -> None:
    for v in values:
        msg = msg.replace("{}", str(v), 1)
    sw.log.append(msg)
