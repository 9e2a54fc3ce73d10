"""v1model `register<T>`: an indexed array of bit<W> cells the data plane reads and writes."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID, TBits, mask, unsupported, width_of
from p4sim.lower.codegen import V
from p4sim.model import P4SimError, RegisterInfo
from p4sim.spec import ExternSpec

from . import extern
from ._common import check_index, indices, modify_only, refuse_rebind, resolve_name
from .base import Extern


class RegisterArray:
    __slots__ = ("name", "size", "width", "cells", "mask")

    def __init__(self, name: str, size: int, width: int):
        self.name, self.size, self.width = name, size, width
        self.cells = [0] * size
        self.mask = (1 << width) - 1

    def __setattr__(self, name: str, value: Any) -> None:
        refuse_rebind(self, name, value, ("size", "cells"))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"RegisterArray.{name} cannot be deleted")

    def check(self, index: int) -> None:
        check_index("register", self.name, self.size, index)


@extern
class Register(Extern):
    name = "register"
    model_field = "registers"
    p4info_prefix = "REGISTER"
    entities = ("register_entry",)

    def instantiate(self, cc: Any, d: Any, t: Any, scope: Any, name: str) -> ExternSpec:
        size = cc.const_eval(d.args[0].value, scope)
        w = width_of(t.args[0])  # check_instance: a bit<W> cell type
        cc.model.registers[name] = RegisterInfo(
            name=name, id=cc.ann_id(d), annotations=cc.annotations_text(d), bitwidth=w, size=size
        )
        return ExternSpec("", self.name, name, size=size, width=w)

    def check_instance(self, ck: Any, d: Any, t: Any, scope: Any) -> None:
        if not width_of(t.args[0]):
            raise unsupported(f"register of {t.args[0].show()} (p4sim supports bit<W> cells)", d)

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any
    ) -> Any:
        # BMv2 reads 0 from, and ignores writes to, an index out of range
        if m == "read":
            lt = cc.lvalue_type(argv[0], scope, fn)
            idx = cc.expr(argv[1], scope, fn)
            i = fn.tmp("i")
            fn.emit(f"{i} = {idx.code}")
            cc.assign(
                argv[0],
                V(f"({obj.code}.cells[{i}] if {i} < {obj.code}.size else 0)", lt),
                scope,
                fn,
            )
            return V("None", VOID)
        if m == "write":
            idx = cc.expr(argv[0], scope, fn)
            val = cc.expr(argv[1], scope, fn)
            i = fn.tmp("i")
            fn.emit(f"{i} = {idx.code}")
            cell = obj.type.args[0]
            vcode = (
                val.const & mask(cell.width)
                if val.is_const and isinstance(cell, TBits)
                else val.code
            )
            fn.emit(f"if {i} < {obj.code}.size: {obj.code}.cells[{i}] = {vcode}")
            return V("None", VOID)
        return super().method(cc, obj, t, m, argv, c, scope, fn)

    def build(self, spec: ExternSpec) -> RegisterArray:
        return RegisterArray(spec.name, spec.size, spec.width)

    def attach(self, sw: Any, spec: ExternSpec, obj: object) -> None:
        sw.registers[spec.name] = obj

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        msg = out.registers.add()
        pre(msg, self.p4info_prefix, info)
        msg.type_spec.bitstring.bit.bitwidth = info.bitwidth
        msg.size = info.size

    def cells(self, info: Any) -> int:
        return info.size

    def write(self, svc: Any, p: Any, utype: int, entity: str, re_: Any) -> None:
        from p4rtproto import codec

        info = p.maps.register(re_.register_id)
        modify_only("register", info.name, utype)
        value = codec.from_p4data(re_.data, info.bitwidth, f"register {info.name}")
        for i in indices("register", info, re_):
            p.switch.register_write(info.name, i, value)

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import codec, p4runtime_pb2

        infos = (
            [p.maps.register(req.register_id)]
            if req.register_id
            else list(p.maps.registers.values())
        )
        for info in infos:
            for i in indices("register", info, req):
                ent = p4runtime_pb2.Entity()
                re_ = ent.register_entry
                re_.register_id = info.id
                re_.index.index = i
                re_.data.bitstring = codec.to_bytes(p.switch.register_read(info.name, i))
                yield ent

    # ------------------------------------------------------------------ operations

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.registers = {}  # control-plane name -> RegisterArray (filled by `attach`)

    def api(self) -> dict[str, Any]:
        return {
            "register_read": register_read,
            "register_write": register_write,
            "register_reset": register_reset,
        }

    def stf_commands(self) -> dict[str, Any]:
        return {
            "register_read": _stf_read,
            "register_write": _stf_write,
            "register_reset": _stf_reset,
            "check_register": _stf_check,
        }


def _register(sw: Any, name: str) -> RegisterArray:
    return sw.registers[resolve_name(name, sw.registers, "register")]


def register_read(sw: Any, name: str, index: int | None) -> Any:
    """One cell's value; index None: a list of every cell."""
    r = _register(sw, name)
    if index is None:
        return list(r.cells)
    r.check(index)
    return r.cells[index]


def register_write(sw: Any, name: str, index: int | None, value: int) -> None:
    r = _register(sw, name)
    if int(value) < 0 or int(value) > r.mask:
        raise P4SimError(f"register {r.name}: value {value:#x} does not fit in {r.width} bits")
    if index is None:
        r.cells[:] = [int(value)] * r.size
        return
    r.check(index)
    r.cells[index] = int(value)


def register_reset(sw: Any, name: str) -> None:
    r = _register(sw, name)
    r.cells[:] = [0] * r.size


def _stf_read(r: Any, c: Any) -> None:
    """register_read NAME INDEX"""
    a = c.args
    v = r.sw.register_read(a[0], int(a[1]))
    r.result.messages.append(f"register {a[0]}[{a[1]}] = {v}")


def _stf_write(r: Any, c: Any) -> None:
    """register_write NAME INDEX VALUE"""
    from p4sim.stf import parse_int

    a = c.args
    r.sw.register_write(a[0], int(a[1]), parse_int(a[2]))


def _stf_reset(r: Any, c: Any) -> None:
    """register_reset NAME"""
    r.sw.register_reset(c.args[0])


def _stf_check(r: Any, c: Any) -> None:
    """check_register NAME INDEX [==] VALUE"""
    from p4rtproto.stf import register_check

    name, index, want = register_check(c.args)
    v = r.sw.register_read(name, index)
    if v != want:
        r.fail(f"{r.path}:{c.line}: register {name}[{index}] is {v:#x}, expected {want:#x}")
