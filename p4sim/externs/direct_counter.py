"""v1model `direct_counter`: one packet/byte count per entry of the table it is bound to
(`counters = c;`). The counts live in the table's entries; the table counts on a hit."""

from __future__ import annotations

import dataclasses
from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V
from p4sim.model import CounterInfo
from p4sim.spec import ExternSpec

from . import extern
from ._common import enum_member, modify_only, p4info_unit, resolve_name
from .base import Extern
from .counter import counter_units


def bind(cc: Any, infos: dict, instance: str, table: str) -> None:
    """Record that `instance` (a direct resource) belongs to `table`."""
    infos[instance] = dataclasses.replace(infos[instance], table=table)
    for ex in cc.externs:
        if ex.name == instance:
            ex.table = table


@extern
class DirectCounter(Extern):
    name = "direct_counter"
    model_field = "direct_counters"
    p4info_prefix = "DIRECT_COUNTER"
    entities = ("direct_counter_entry",)
    table_property = "counters"

    def instantiate(self, cc: Any, d: Any, t: Any, scope: Any, name: str) -> ExternSpec:
        unit = enum_member(d.args[0].value)
        cc.model.direct_counters[name] = CounterInfo(
            name=name, id=cc.ann_id(d), annotations=cc.annotations_text(d), unit=unit
        )
        return ExternSpec("", self.name, name, unit=unit)

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any
    ) -> Any:
        if m != "count":
            return super().method(cc, obj, t, m, argv, c, scope, fn)
        return V("None", VOID)  # counted by the table on a hit (BMv2 ignores count())

    def bind_table(self, cc: Any, instance: str, table: str) -> None:
        bind(cc, cc.model.direct_counters, instance, table)

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        if info.table is None:
            # p4c serialises a direct resource from the table that owns it
            # (addTableProperties); one no table uses is not in P4Info
            return
        msg = out.direct_counters.add()
        pre(msg, self.p4info_prefix, info)
        msg.spec.unit = p4info_unit(counter_units(), info.unit, info.name)
        msg.direct_table_id = ids("TABLE", info.table)

    def write(self, svc: Any, p: Any, utype: int, entity: str, dce: Any) -> None:
        from p4rtproto import codec

        modify_only("direct counter", "", utype)
        meta, entry = codec.decode_table_entry(p.maps, dce.table_entry, need_action=False)
        if not meta.direct_counter_id:
            raise codec.invalid(f"table {meta.name} has no direct counter")
        p.switch.direct_counter_write(meta.name, entry, dce.data.packet_count, dce.data.byte_count)

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import codec, p4runtime_pb2

        te_req = req.table_entry
        for meta, e in svc._table_entries(p, te_req):
            if not meta.direct_counter_id or e is None:
                if te_req.table_id and not meta.direct_counter_id:
                    raise codec.invalid(f"table {meta.name} has no direct counter")
                continue
            pk, by = p.switch.direct_counter_read(meta.name, e)
            ent = p4runtime_pb2.Entity()
            dce = ent.direct_counter_entry
            codec.encode_table_entry(
                p.maps, meta, e, p.entry_metadata.get(codec.entry_key(e), b""), out=dce.table_entry
            )
            dce.data.packet_count = pk
            dce.data.byte_count = by
            yield ent

    def api(self) -> dict[str, Any]:
        return {
            "direct_counter_read": direct_counter_read,
            "direct_counter_write": direct_counter_write,
        }


def direct_counter_read(sw: Any, table: str, entry: Any) -> tuple[int, int]:
    rec = _rec(sw, table, entry)
    return rec.pkts, rec.bytes


def direct_counter_write(sw: Any, table: str, entry: Any, packets: int, bytes_: int) -> None:
    rec = _rec(sw, table, entry)
    rec.pkts, rec.bytes = int(packets), int(bytes_)


def _rec(sw: Any, table: str, entry: Any) -> Any:
    """The record of `entry` in table `table` (full name or unique suffix)."""
    return sw.tables[resolve_name(table, sw.tables, "table")].find(entry)
