"""v1model `meter`: an indexed array of two-rate three-colour meters, as BMv2 computes them."""

from __future__ import annotations

from typing import Any

from p4rtproto.stf import parse_rate
from p4sim.check.types import VOID
from p4sim.lower.codegen import V
from p4sim.model import MeterInfo, P4SimError
from p4sim.spec import ExternSpec

from . import extern
from ._common import (
    check_index,
    enum_member,
    indices,
    modify_only,
    p4info_unit,
    resolve_name,
)
from .base import Extern

GREEN, YELLOW, RED = 0, 1, 2


class MeterState:
    """A two-rate three-colour meter computed as BMv2's Meter::execute does.

    Rates are in units (bytes or packets) per microsecond, bursts in units, as BMv2's
    meter_set_rates takes them (committed first, then peak). BMv2 keeps the rates sorted
    peak first: a packet takes tokens from each bucket in turn and gets the colour of the
    first bucket that is short (peak short: RED; committed short: YELLOW), else GREEN.
    Tokens are whole units: cumulative floor(microseconds since start * rate), each bucket
    capped at its burst and full when configured. Until configured the meter is GREEN.
    """

    __slots__ = ("configured", "rates", "tokens", "last")

    def __init__(self) -> None:
        self.configured = False
        self.rates: list[tuple[float, int, int]] = []  # (rate, burst, colour when short)
        self.tokens: list[int] = []
        self.last: list[int] = []

    def set_rates(self, rates: list[tuple[float, int]], now_ns: int) -> None:
        if not rates:  # no rates: back to unconfigured (always GREEN), as P4Runtime resets
            self.configured = False
            return
        if len(rates) != 2:
            raise P4SimError("a meter takes two rates: committed then peak (rate:burst)")
        (cir, cbs), (pir, pbs) = rates
        if pir < cir:
            raise P4SimError("meter: peak rate must be >= committed rate (as BMv2 requires)")
        if cir < 0 or cbs < 0 or pbs < 0:
            raise P4SimError("meter: rates and bursts must be >= 0")
        self.rates = [(float(pir), int(pbs), RED), (float(cir), int(cbs), YELLOW)]
        self.tokens = [int(pbs), int(cbs)]
        self.last = [0, 0]
        self.configured = True

    def execute(self, amount: int, now_ns: int) -> int:
        if not self.configured:
            return GREEN
        micros = now_ns // 1000
        tokens, last = self.tokens, self.last
        for i, (rate, burst, colour) in enumerate(self.rates):
            since = int(micros * rate)
            if since > last[i]:
                tokens[i] = min(tokens[i] + since - last[i], burst)
                last[i] = since
            if tokens[i] < amount:
                return colour
            tokens[i] -= amount
        return GREEN


class MeterArray:
    __slots__ = ("name", "size", "unit", "cells")

    def __init__(self, name: str, size: int, unit: str):
        self.name, self.size, self.unit = name, size, unit
        self.cells = [MeterState() for _ in range(size)]

    def check(self, index: int) -> None:
        check_index("meter", self.name, self.size, index)


def meter_units() -> dict[str, int]:
    from p4rtproto import p4info_pb2

    return {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}


def write_config(p: Any, key: Any, msg: Any, what: str, set_rates: Any) -> None:
    """P4Runtime MeterConfig -> BMv2 rates (per microsecond); no config: unmetered."""
    from p4rtproto import p4runtime_pb2
    from p4rtproto.errors import invalid

    if msg.HasField("config"):
        c = msg.config
        if c.cir > c.pir:
            raise invalid(f"{what}: cir {c.cir} > pir {c.pir}")
        set_rates([(c.cir / 1e6, c.cburst), (c.pir / 1e6, c.pburst)])
        cfg = p4runtime_pb2.MeterConfig()
        cfg.CopyFrom(c)
        p.meter_configs[key] = cfg
    else:  # no config: back to unmetered (everything green)
        set_rates([])
        p.meter_configs.pop(key, None)


@extern
class Meter(Extern):
    name = "meter"
    model_field = "meters"
    p4info_prefix = "METER"
    entities = ("meter_entry",)

    def instantiate(self, cc: Any, d: Any, t: Any, scope: Any, name: str) -> ExternSpec:
        size = cc.const_eval(d.args[0].value, scope)
        unit = enum_member(d.args[1].value)
        cc.model.meters[name] = MeterInfo(
            name=name, id=cc.ann_id(d), annotations=cc.annotations_text(d), unit=unit, size=size
        )
        return ExternSpec("", self.name, name, size=size, unit=unit)

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: Any, scope: Any, fn: Any
    ) -> Any:
        if m != "execute_meter":
            return super().method(cc, obj, t, m, argv, c, scope, fn)
        lt = cc.lvalue_type(argv[1], scope, fn)
        idx = cc.expr(argv[0], scope, fn)
        cc.assign(argv[1], V(f"_RT.meter({obj.code}, {idx.code})", lt), scope, fn)
        return V("None", VOID)

    def build(self, spec: ExternSpec) -> MeterArray:
        return MeterArray(spec.name, spec.size, spec.unit)

    def attach(self, sw: Any, spec: ExternSpec, obj: object) -> None:
        sw.meters[spec.name] = obj

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        msg = out.meters.add()
        pre(msg, self.p4info_prefix, info)
        msg.spec.unit = p4info_unit(meter_units(), info.unit, info.name)
        msg.size = info.size

    def cells(self, info: Any) -> int:
        return info.size

    def write(self, svc: Any, p: Any, utype: int, entity: str, me: Any) -> None:
        info = p.maps.meter(me.meter_id)
        modify_only("meter", info.name, utype)
        for i in indices("meter", info, me):
            write_config(
                p,
                (info.name, i),
                me,
                f"meter {info.name}",
                lambda rates, i=i: p.switch.meter_set_rates(info.name, i, rates),
            )

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import p4runtime_pb2

        infos = [p.maps.meter(req.meter_id)] if req.meter_id else list(p.maps.meters.values())
        for info in infos:
            for i in indices("meter", info, req):
                me = p4runtime_pb2.MeterEntry(meter_id=info.id)
                me.index.index = i
                cfg = p.meter_configs.get((info.name, i))
                if cfg is not None:
                    me.config.CopyFrom(cfg)
                yield (p4runtime_pb2.Entity(meter_entry=me))

    # ------------------------------------------------------------------ per packet, operations

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.meters = {}  # control-plane name -> MeterArray (filled by `attach`)

    def runtime_methods(self) -> dict[str, Any]:
        return {"meter": _execute}

    def api(self) -> dict[str, Any]:
        return {"meter_set_rates": meter_set_rates}

    def stf_commands(self) -> dict[str, Any]:
        return {"meter_set_rates": _stf_set_rates, "meter_array_set_rates": _stf_array_set_rates}


def _execute(sw: Any, arr: MeterArray, idx: int) -> int:
    # BMv2 answers GREEN for an index out of range
    if not 0 <= idx < arr.size:
        return GREEN
    amount = 1 if arr.unit == "packets" else sw.plen
    return arr.cells[idx].execute(amount, sw._now)


def meter_set_rates(sw: Any, name: str, index: int, rates: list[tuple[float, int]]) -> None:
    """BMv2's meter_set_rates: (rate per microsecond, burst), committed then peak."""
    m = sw.meters[resolve_name(name, sw.meters, "meter")]
    m.check(index)
    m.cells[index].set_rates(rates, sw.now())


def _stf_set_rates(r: Any, c: Any) -> None:
    """meter_set_rates NAME INDEX RATE:BURST RATE:BURST"""
    a = c.args
    r.sw.meter_set_rates(a[0], int(a[1]), [parse_rate(x) for x in a[2:]])


def _stf_array_set_rates(r: Any, c: Any) -> None:
    """meter_array_set_rates NAME RATE:BURST RATE:BURST: every cell of the array"""
    a = c.args
    sw = r.sw
    name = resolve_name(a[0], sw.meters, "meter")
    for i in range(sw.meters[name].size):
        sw.meter_set_rates(name, i, [parse_rate(x) for x in a[1:]])
