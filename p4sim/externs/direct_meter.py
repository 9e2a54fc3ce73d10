"""v1model `direct_meter<T>`: one meter per entry of the table it is bound to (`meters = m;`);
the table runs it on a hit and `read()` returns that colour."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V
from p4sim.model import MeterInfo
from p4sim.spec import ExternSpec

from . import extern
from ._common import enum_member, modify_only, p4info_unit
from .base import Extern
from .direct_counter import _rec, bind
from .meter import GREEN, MeterState, meter_units, write_config


@extern
class DirectMeter(Extern):
    name = "direct_meter"
    model_field = "direct_meters"
    p4info_prefix = "DIRECT_METER"
    entities = ("direct_meter_entry",)
    table_property = "meters"

    def instantiate(self, cc: Any, d: Any, t: Any, scope: Any, name: str) -> ExternSpec:
        unit = enum_member(d.args[0].value)
        cc.model.direct_meters[name] = MeterInfo(
            name=name, id=cc.ann_id(d), annotations=cc.annotations_text(d), unit=unit
        )
        return ExternSpec("", self.name, name, unit=unit)

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any
    ) -> Any:
        if m != "read":
            return super().method(cc, obj, t, m, argv, c, scope, fn)
        lt = cc.lvalue_type(argv[0], scope, fn)
        cc.assign(argv[0], V(f"_RT.dm_color.get({obj.code!r}, 0)", lt), scope, fn)
        return V("None", VOID)

    def bind_table(self, cc: Any, instance: str, table: str) -> None:
        bind(cc, cc.model.direct_meters, instance, table)

    # ------------------------------------------------------------------ per packet, operations

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.direct_meter_tables = {}  # instance name -> the table it is bound to
        sw.dm_color = {}  # instance -> the colour its table's hit gave in this pass (`read()`)

    def runtime_methods(self) -> dict[str, Any]:
        return {"direct_meter": _execute}

    def reset(self, sw: Any) -> None:
        sw.dm_color.clear()

    def api(self) -> dict[str, Any]:
        return {"direct_meter_set_rates": direct_meter_set_rates}

    def attach(self, sw: Any, spec: ExternSpec, obj: object) -> None:
        if spec.table:
            sw.direct_meter_tables[spec.name] = spec.table

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        if info.table is None:  # as direct_counter: listed through its table only
            return
        msg = out.direct_meters.add()
        pre(msg, self.p4info_prefix, info)
        msg.spec.unit = p4info_unit(meter_units(), info.unit, info.name)
        msg.direct_table_id = ids("TABLE", info.table)

    def write(self, svc: Any, p: Any, utype: int, entity: str, dme: Any) -> None:
        from p4rtproto import codec

        modify_only("direct meter", "", utype)
        meta, entry = codec.decode_table_entry(p.maps, dme.table_entry, need_action=False)
        if not meta.direct_meter_id:
            raise codec.invalid(f"table {meta.name} has no direct meter")
        write_config(
            p,
            ("direct", codec.entry_key(entry)),
            dme,
            f"direct meter of {meta.name}",
            lambda rates: p.switch.direct_meter_set_rates(meta.name, entry, rates),
        )

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import codec, p4runtime_pb2

        for meta, e in svc._table_entries(p, req.table_entry):
            if not meta.direct_meter_id or e is None:
                if req.table_entry.table_id and not meta.direct_meter_id:
                    raise codec.invalid(f"table {meta.name} has no direct meter")
                continue
            dme = p4runtime_pb2.DirectMeterEntry()
            dme.table_entry.CopyFrom(codec.encode_table_entry(p.maps, meta, e))
            cfg = p.meter_configs.get(("direct", codec.entry_key(e)))
            if cfg is not None:
                dme.config.CopyFrom(cfg)
            yield (p4runtime_pb2.Entity(direct_meter_entry=dme))


def _execute(sw: Any, table: Any, rec: Any) -> int:
    """The table's hit on entry `rec` runs its meter (generated code stores the colour in
    `dm_color`); an entry never configured is GREEN."""
    sw.mark_dirty()
    if rec.meter is None:
        return GREEN
    unit = sw.model.direct_meters[table.info.direct_meter].unit
    return rec.meter.execute(1 if unit == "packets" else sw.plen, sw._now)


def direct_meter_set_rates(sw: Any, table: str, entry: Any, rates: list[tuple[float, int]]) -> None:
    rec = _rec(sw, table, entry)
    if rec.meter is None:
        rec.meter = MeterState()
    rec.meter.set_rates(rates, sw.now())
