"""v1model `verify_checksum`, `update_checksum` and their `_with_payload` forms.

verify: a mismatch sets standard_metadata.checksum_error (BMv2 does not drop); update: the
field gets the checksum when the condition holds. `_with_payload` appends the payload (the
bytes after the last extracted header) to the field list, as BMv2's calculation does.
"""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID, mask, width_of
from p4sim.lower.codegen import _DOTTED, V

from . import extern
from ._common import enum_member
from .base import Extern
from .hash import hash_call


def csum16_direct(parts: list[tuple[str, str, str | None]] | None, fn: Any) -> str | None:
    """The Internet checksum of a packed field list (`Compiler.data_pack`'s parts: value,
    width, validity), computed from the fields' 16-bit words (no bytes built); None when
    widths vary or validity is mixed."""
    if not parts or not all(p[1].isdigit() for p in parts):
        return None
    conds = {p[2] for p in parts}
    if len(conds) != 1:
        return None
    owners = {p[0].rsplit(".", 1)[0] for p in parts if _DOTTED.match(p[0])}
    if fn is not None and len(owners) == 1 and all(_DOTTED.match(p[0]) for p in parts):
        # every field of one header (the usual IPv4 header checksum): read the header
        # object once into a local instead of once per field
        owner = next(iter(owners))
        if "." in owner:
            loc = fn.tmp("ck")
            fn.emit(f"{loc} = {owner}")
            parts = [(loc + p[0][len(owner) :], p[1], p[2]) for p in parts]
            cond0 = next(iter(conds))
            if cond0 == f"{owner}._v":
                conds = {f"{loc}._v"}
    total = sum(int(p[1]) for p in parts)
    nwords = (total + 15) // 16
    words: list[list[str]] = [[] for _ in range(nwords)]
    off = 0  # bit offset from the most significant end
    for val, w_, _ in parts:
        w = int(w_)
        start, end = off, off + w  # [start, end)
        k = start // 16
        while k * 16 < end:
            lo_bit, hi_bit = max(start, k * 16), min(end, k * 16 + 16)  # overlap
            n = hi_bit - lo_bit
            right = end - hi_bit  # bits of the field below the overlap
            left = (k * 16 + 16) - hi_bit  # position inside the word
            e = f"({val} >> {right})" if right else val
            if n < w:
                e = f"({e} & {mask(n)})"
            words[k].append(f"({e} << {left})" if left else e)
            k += 1
        off = end
    total_expr = " + ".join(
        "(" + " | ".join(ws) + ")" if len(ws) > 1 else ws[0] for ws in words if ws
    )
    code = f"_csum_fold({total_expr or '0'})"
    cond = next(iter(conds))
    return code if cond is None else f"({code} if {cond} else 65535)"


@extern
class Checksum(Extern):
    functions = (
        "verify_checksum",
        "verify_checksum_with_payload",
        "update_checksum",
        "update_checksum_with_payload",
    )

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        ck.field_list(argv[1], scope, ctx)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        payload = name.endswith("_with_payload")
        cnd = cc.cond(argv[0], scope, fn)
        data = cc.data_pack(argv[1], scope, fn)
        parts = cc.last_pack_parts
        if payload:
            data = f"({data} + _RT.payload)"
        if name.startswith("verify"):
            ck = cc.expr(argv[2], scope, fn)
            algo = enum_member(argv[3])
            w = width_of(ck.type)
            h = self._checksum(algo, data, parts, payload, fn)
            fn.emit(f"if ({cnd}) and ({h} & {mask(w)}) != {ck.code}:")
            fn.emit("    _RT.checksum_error()")
            return V("None", VOID)
        lt = cc.lvalue_type(argv[2], scope, fn)
        algo = enum_member(argv[3])
        h = self._checksum(algo, data, parts, payload, fn)
        fn.emit(f"if {cnd}:")
        fn.ind += 1
        cc.assign(argv[2], V(f"({h} & {mask(width_of(lt))})", lt), scope, fn)
        fn.ind -= 1
        return V("None", VOID)

    @staticmethod
    def _checksum(algo: str, data: str, parts: Any, payload: bool, fn: Any) -> str:
        direct = csum16_direct(parts, fn) if algo == "csum16" and not payload else None
        return direct or hash_call(algo, data, "0", None)

    def runtime_methods(self) -> dict[str, Any]:
        return {"checksum_error": _checksum_error}


def _checksum_error(sw: Any) -> None:
    # the packet's checksum-error flag (BMv2 Packet::set_checksum_error), which the switch
    # copies into standard_metadata.checksum_error after the parser (ingress_thread)
    sw.cksum_err = True
    sw.mark_dirty()
