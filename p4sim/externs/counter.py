"""v1model `counter`: an indexed array of packet and byte counts (BMv2 counts both)."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V
from p4sim.model import CounterInfo
from p4sim.spec import ExternSpec

from . import extern
from ._common import (
    check_index,
    enum_member,
    indices,
    modify_only,
    p4info_unit,
    refuse_rebind,
    resolve_name,
)
from .base import Extern


class CounterArray:
    __slots__ = ("name", "size", "pkts", "bytes", "unit")

    def __init__(self, name: str, size: int, unit: str):
        self.name, self.size, self.unit = name, size, unit
        self.pkts = [0] * size
        self.bytes = [0] * size

    def __setattr__(self, name: str, value: Any) -> None:
        refuse_rebind(self, name, value, ("size", "pkts", "bytes"))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"CounterArray.{name} cannot be deleted")

    def check(self, index: int) -> None:
        check_index("counter", self.name, self.size, index)


def counter_units() -> dict[str, int]:
    from p4rtproto import p4info_pb2

    spec = p4info_pb2.CounterSpec
    return {"packets": spec.PACKETS, "bytes": spec.BYTES, "packets_and_bytes": spec.BOTH}


@extern
class Counter(Extern):
    name = "counter"
    model_field = "counters"
    p4info_prefix = "COUNTER"
    entities = ("counter_entry",)

    def instantiate(self, cc: Any, d: Any, t: Any, scope: Any, name: str) -> ExternSpec:
        size = cc.const_eval(d.args[0].value, scope)
        unit = enum_member(d.args[1].value)
        cc.model.counters[name] = CounterInfo(
            name=name, id=cc.ann_id(d), annotations=cc.annotations_text(d), unit=unit, size=size
        )
        return ExternSpec("", self.name, name, size=size, unit=unit)

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any
    ) -> Any:
        if m != "count":
            return super().method(cc, obj, t, m, argv, c, scope, fn)
        # BMv2 ignores an index out of range (no count); so do we
        i = fn.tmp("i")
        fn.emit(f"{i} = {cc.expr(argv[0], scope, fn).code}")
        fn.emit(f"if {i} < {obj.code}.size:")
        fn.emit(f"    {obj.code}.pkts[{i}] += 1")
        fn.emit(f"    {obj.code}.bytes[{i}] += _RT.plen")
        return V("None", VOID)

    def build(self, spec: ExternSpec) -> CounterArray:
        return CounterArray(spec.name, spec.size, spec.unit)

    def attach(self, sw: Any, spec: ExternSpec, obj: object) -> None:
        sw.counters[spec.name] = obj

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        msg = out.counters.add()
        pre(msg, self.p4info_prefix, info)
        msg.spec.unit = p4info_unit(counter_units(), info.unit, info.name)
        msg.size = info.size

    def cells(self, info: Any) -> int:
        return info.size

    def write(self, svc: Any, p: Any, utype: int, entity: str, ce: Any) -> None:
        info = p.maps.counter(ce.counter_id)
        modify_only("counter", info.name, utype)
        for i in indices("counter", info, ce):
            p.switch.counter_write(info.name, i, ce.data.packet_count, ce.data.byte_count)

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import p4runtime_pb2

        infos = (
            [p.maps.counter(req.counter_id)] if req.counter_id else list(p.maps.counters.values())
        )
        for info in infos:
            cells = indices("counter", info, req)
            if not req.HasField(
                "index"
            ):  # every cell: serialized chunks, see P4RuntimeServer.counter_chunks
                yield from svc.counter_chunks(p, info)
                continue
            read, Entity, cid = p.switch.counter_read, p4runtime_pb2.Entity, info.id
            for i in cells:
                pk, by = read(info.name, i)
                ent = Entity()  # filled in place: nesting finished messages copies them
                ce = ent.counter_entry
                ce.counter_id = cid
                ce.index.index = i
                ce.data.packet_count = pk
                ce.data.byte_count = by
                yield ent

    # ------------------------------------------------------------------ operations

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.counters = {}  # control-plane name -> CounterArray (filled by `attach`)

    def api(self) -> dict[str, Any]:
        return {"counter_read": counter_read, "counter_write": counter_write}

    def stf_commands(self) -> dict[str, Any]:
        return {"counter_read": _stf_read, "counter_write": _stf_write, "check_counter": _stf_check}


def _counter(sw: Any, name: str) -> CounterArray:
    return sw.counters[resolve_name(name, sw.counters, "counter")]


def counter_read(sw: Any, name: str, index: int | None) -> Any:
    """(packets, bytes) of one cell; index None: a list over every cell."""
    c = _counter(sw, name)
    if index is None:
        return list(zip(c.pkts, c.bytes, strict=True))
    c.check(index)
    return c.pkts[index], c.bytes[index]


def counter_write(sw: Any, name: str, index: int | None, packets: int, bytes_: int) -> None:
    c = _counter(sw, name)
    if index is None:
        c.pkts[:] = [int(packets)] * c.size
        c.bytes[:] = [int(bytes_)] * c.size
        return
    c.check(index)
    c.pkts[index], c.bytes[index] = int(packets), int(bytes_)


def _stf_read(r: Any, c: Any) -> None:
    """counter_read NAME INDEX"""
    a = c.args
    p, b = r.sw.counter_read(a[0], int(a[1]))
    r.result.messages.append(f"counter {a[0]}[{a[1]}] = {p} packets, {b} bytes")


def _stf_write(r: Any, c: Any) -> None:
    """counter_write NAME INDEX PACKETS [BYTES]"""
    from p4sim.stf import parse_int

    a = c.args
    r.sw.counter_write(a[0], int(a[1]), parse_int(a[2]), parse_int(a[3]) if len(a) > 3 else 0)


def _stf_check(r: Any, c: Any) -> None:
    """check_counter NAME(INDEX) [packets|bytes] [== VALUE] (p4c's STF runner)"""
    from p4rtproto.stf import counter_check

    chk = counter_check(c.args)
    p, b = r.sw.counter_read(chk.name, chk.index)
    if not chk.holds(p, b):
        got = p if chk.what == "packets" else b
        r.fail(
            f"{r.path}:{c.line}: counter {chk.name}({chk.index}) {chk.what} is {got}, "
            f"expected {chk.cmp} {chk.value}"
        )
