"""core.p4 `packet_in` (parsers: extract, lookahead, advance, length) and `packet_out`
(deparsers: emit). Their lowering is the compiler's header extraction and emission
(`Compiler.packet_in_method`, `Compiler.emit_value`), which the parser and deparser
code generation share; this module is where the registry finds them."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID, err
from p4sim.lower.codegen import V

from . import extern
from .base import Extern


@extern
class PacketIn(Extern):
    name = "packet_in"

    def method(self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        return cc.packet_in_method(obj, m, argv, c, scope, fn)


@extern
class PacketOut(Extern):
    name = "packet_out"

    def method(self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        if m != "emit":
            raise err(f"packet_out has no method {m}", c)
        cc.emit_value(cc.expr(argv[0], scope, fn), fn, argv[0])
        return V("None", VOID)
