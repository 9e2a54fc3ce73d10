"""core.p4 `packet_in` (parsers: extract, lookahead, advance, length) and `packet_out`
(deparsers: emit). Generated parser code keeps the packet as `buf` (bytes) and the read
offset `off`; deparser code appends the emitted bytes to `_out`. A fixed-size header's
extract and emit are inlined from the templates its generated class was built with
(`Compiler.header_io`), so no method call runs per header per packet.

check (CallChecker.packet_in_method and the extern declarations in core.p4) has refused
every wrong use already; these hooks only write code."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID, TBits, TBool, TStack, TStruct, width_of
from p4sim.frontend import ast
from p4sim.frontend.errors import bug
from p4sim.lower.codegen import HDR_OBJ, V, fld

from . import extern
from .base import Extern


@extern
class PacketIn(Extern):
    name = "packet_in"

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any
    ) -> Any:
        if m == "extract":
            extract(cc, argv, scope, fn, c)
            return V("None", VOID)
        if m == "lookahead":
            return lookahead(cc, c, scope, fn)
        if m == "advance":
            n = cc.expr(argv[0], scope, fn)
            tmp = fn.tmp("adv")
            fn.emit(f"{tmp} = {n.code}")
            fn.emit(f"if {tmp} % 8: raise ParserError({cc.errors.get('ParserInvalidArgument', 6)})")
            fn.emit(f"if off + {tmp} // 8 > len(buf): raise ParserError(1)")
            fn.emit(f"off += {tmp} // 8")
            return V("None", VOID)
        if m == "length":
            return V("len(buf)", TBits(32))
        raise bug(f"packet_in method {m} has no lowering", c)


@extern
class PacketOut(Extern):
    name = "packet_out"

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any
    ) -> Any:
        emit(cc, cc.expr(argv[0], scope, fn), fn)  # its one method, emit
        return V("None", VOID)


def extract(cc: Any, argv: list, scope: Any, fn: Any, c: Any = None) -> None:
    """`pkt.extract(h[, varbit bits])` into a header, a stack's `next` or a union member;
    `extract<T>(_)` into a throwaway T (p4c's DontcareArgs temporary)."""
    target = argv[0]
    if isinstance(target, ast.DontCare):
        t = cc.resolve_type(c.type_args[0], scope)
        cc.gen_class(t)
        tmp = fn.tmp("dc")
        fn.emit(f"{tmp} = {t.pycls}()")
        vlen = f", {cc.expr(argv[1], scope, fn).code}" if len(argv) == 2 else ""
        fn.emit(f"off = {tmp}._ex(buf, off{vlen})")
        return
    stack_out = cc.errors.get("StackOutOfBounds", 3)
    # (for `s.next` this writes a bounds test the stack path below repeats; kept so the
    # generated code stays as it was)
    h = cc.expr(target, scope, fn)
    if isinstance(target, ast.Member) and target.member == "next":
        stack = cc.expr(target.expr, scope, fn)
        if isinstance(stack.type, TStack):
            s = fn.tmp("s")
            fn.emit(f"{s} = {stack.code}")
            fn.emit(f"if {s}.n >= {s}.size: raise ParserError({stack_out})")
            hv = f"{s}.a[{s}.n]"
            if len(argv) == 2:
                fn.emit(f"off = {hv}._ex(buf, off, {cc.expr(argv[1], scope, fn).code})")
            else:
                fn.emit(f"off = {hv}._ex(buf, off)")
            fn.emit(f"{s}.n += 1")
            return
    if len(argv) == 2:
        fn.emit(f"off = {h.code}._ex(buf, off, {cc.expr(argv[1], scope, fn).code})")
    else:
        io = cc.header_io.get(h.type.pycls)
        if io is None:
            fn.emit(f"off = {h.code}._ex(buf, off)")
        else:
            # _ex inlined: one call less per header per packet
            nbytes, ex_lines, _ = io
            hv = fn.tmp("xh")
            end = fn.tmp("xe")
            fn.emit(f"{hv} = {h.code}")
            fn.emit(f"{end} = off + {nbytes}")
            fn.emit(f"if {end} > _blen: raise ParserError(1)")
            for line in ex_lines:
                fn.emit(line.replace(HDR_OBJ, hv))
            fn.emit(f"{hv}._v = True")
            fn.emit(f"off = {end}")
    cc.union_invalidate(target, scope, fn)
    if (
        isinstance(target, ast.Member)
        and isinstance(target.expr, ast.Member)
        and target.expr.member == "next"
    ):
        st = cc.expr(target.expr.expr, scope, fn)
        if isinstance(st.type, TStack):
            # extract(us.next.m) of a stack of unions advances the stack, as BMv2's
            # ParserOpExtractUnionStack (bm_sim/parser.cpp) push_back()s after it
            fn.emit(f"{st.code}.n += 1")


def lookahead(cc: Any, c: Any, scope: Any, fn: Any) -> Any:
    """`pkt.lookahead<T>()` of a fixed-width header or bit<W>: read without advancing."""
    t = cc.resolve_type(c.type_args[0], scope)
    tmp = fn.tmp("la")
    if isinstance(t, TStruct) and t.kind == "header":
        cc.gen_class(t)
        fn.emit(f"{tmp} = {t.pycls}()")
        fn.emit(f"{tmp}._ex(buf, off)")
        return V(tmp, t)
    w = width_of(t)
    nb = (w + 7) // 8
    fn.emit(f"if off + {nb} > len(buf): raise ParserError(1)")
    shift = nb * 8 - w
    code = f"(int.from_bytes(buf[off:off + {nb}], 'big')" + (f" >> {shift})" if shift else ")")
    if not isinstance(t, TStruct):
        fn.emit(f"{tmp} = {code}")
        return V(tmp, t)
    # a struct of bit<N>/bool (check allows no other): its fields in order, the first the
    # most significant, as p4c's BMv2 back end reads it (one lookahead of the whole width)
    cc.gen_class(t)
    bits = fn.tmp("lab")
    fn.emit(f"{bits} = {code}")
    fn.emit(f"{tmp} = {t.pycls}()")
    shift = w
    for path, ft in _leaves(t, tmp):
        fw = width_of(ft)
        shift -= fw
        val = f"(({bits} >> {shift}) & {(1 << fw) - 1})"
        fn.emit(f"{path} = {'bool' + val if isinstance(ft, TBool) else val}")
    return V(tmp, t)


def _leaves(t: TStruct, code: str) -> list:
    """(attribute path, type) of every scalar field of a struct, nested structs flattened in order."""
    out: list = []
    for name, ft in t.fields:
        if isinstance(ft, TStruct):
            out.extend(_leaves(ft, f"{code}.{fld(name)}"))
        else:
            out.append((f"{code}.{fld(name)}", ft))
    return out


def emit(cc: Any, v: Any, fn: Any) -> None:
    """`pkt.emit(x)`: a valid header's bytes; a union's, a stack's and a struct's members in order."""
    t = v.type
    if isinstance(t, TStruct):
        if t.kind == "header":
            h = fn.tmp("h")
            fn.emit(f"{h} = {v.code}")
            io = cc.header_io.get(t.pycls)
            if io is None:
                fn.emit(f"if {h}._v: _out.append({h}._em())")
            else:  # _em inlined
                vals = ", ".join(x.replace(HDR_OBJ, h) for x in io[2])
                fn.emit(f"if {h}._v: _out.append(_S_{t.pycls}.pack({vals}))")
        else:
            for f, ft in t.fields:
                emit(cc, V(f"{v.code}.{fld(f)}", ft), fn)
        return
    if isinstance(t, TStack):
        if isinstance(t.elem, TStruct) and t.elem.kind == "union":
            el = fn.tmp("u")
            fn.emit(f"for {el} in {v.code}.a:")
            fn.ind += 1
            emit(cc, V(el, t.elem), fn)
            fn.ind -= 1
            return
        fn.emit(f"for _h in {v.code}.a:")
        fn.emit("    if _h._v: _out.append(_h._em())")
        return
    raise bug(f"emit of a {t.show()}", None)
