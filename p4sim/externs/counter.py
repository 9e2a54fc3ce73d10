"""v1model `counter`: an indexed array of packet and byte counts (BMv2 counts both)."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V
from p4sim.model import CounterInfo
from p4sim.spec import ExternSpec

from . import extern
from ._common import check_index, enum_member, indices, modify_only, p4info_unit
from .base import Extern


class CounterArray:
    __slots__ = ("name", "size", "pkts", "bytes", "unit")

    def __init__(self, name: str, size: int, unit: str):
        self.name, self.size, self.unit = name, size, unit
        self.pkts = [0] * size
        self.bytes = [0] * size

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
        cc.model.counters[name] = CounterInfo(name=name, id=cc.ann_id(d), annotations=cc.annotations_text(d),
                                              unit=unit, size=size)
        return ExternSpec("", self.name, name, size=size, unit=unit)

    def method(self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
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

        infos = [p.maps.counter(req.counter_id)] if req.counter_id else list(p.maps.counters.values())
        for info in infos:
            cells = indices("counter", info, req)
            if not req.HasField("index"):  # every cell: serialized chunks, see P4RuntimeServer.counter_chunks
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
