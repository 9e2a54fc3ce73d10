"""The shared layer at both ends of a real gRPC connection: the controller's P4RuntimeTarget
(p4rtproto.client + codec) against p4sim's server (the same codec), on l2_cpu.p4. What the
client encodes, the server decodes and applies; what the server encodes, the client decodes
back to the same entity."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.targets import from_p4
from controller.targets.base import (
    CloneSession,
    CounterCell,
    CounterQuery,
    DefaultAction,
    Exact,
    MeterRates,
    RegisterCell,
    RegisterQuery,
    TableEntry,
    TableQuery,
    TargetError,
)
from controller.targets.p4runtime import P4RuntimeTarget
from p4rtproto import p4runtime_pb2
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer

L2 = Path(__file__).resolve().parents[1] / "p4sim_runtime" / "programs" / "l2_cpu.p4"


@pytest.fixture
def target():
    ports = PortSet()
    for n in range(1, 5):
        ports.add_inprocess(n)
    srv = P4RuntimeServer(device_id=0, cpu_port=255, ports=ports)
    srv.start("127.0.0.1:0")
    t = P4RuntimeTarget(f"127.0.0.1:{srv.port}")
    t.push(from_p4(L2))
    t.server = srv  # type: ignore[attr-defined]
    yield t
    t.close()
    srv.stop(grace=0)


def test_entities_written_by_name_are_what_the_switch_holds(target) -> None:
    srv = target.server
    entry = TableEntry(
        "MyIngress.l2_fwd",
        {"hdr.ethernet.dst": Exact(0x020000000002)},
        "MyIngress.forward",
        {"port": 2},
    )
    target.write(
        [
            entry,
            DefaultAction("l2_fwd", "MyIngress.forward", {"port": 3}),
            CounterCell("port_rx", 7, 11, 1100),
            RegisterCell("last_len", 2, 999),
            CloneSession(4, (1, 2), 64),
            MeterRates("port_meter", 5, ((0.25, 8), (0.5, 16))),
        ]
    )
    sw = srv.pipeline.switch
    assert sw.table_entries("MyIngress.l2_fwd") == [entry]
    assert sw.table_default("MyIngress.l2_fwd") == ("MyIngress.forward", {"port": 3})
    assert sw.counter_read("MyIngress.port_rx", 7) == (11, 1100)
    assert sw.register_read("MyIngress.last_len", 2) == 999
    # and back through the server's encoder and the client's decoder
    assert target.read(TableQuery("l2_fwd")) == [entry]
    assert target.read(CounterQuery("port_rx", 7)) == [
        CounterCell("MyIngress.port_rx", 7, 11, 1100)
    ]
    assert target.read(RegisterQuery("last_len", 2)) == [RegisterCell("MyIngress.last_len", 2, 999)]
    # the meter's rates arrived per second (the server keeps the config it was given)
    ent = p4runtime_pb2.Entity()
    ent.meter_entry.meter_id = target.conn.schema.meter("port_meter").id
    ent.meter_entry.index.index = 5
    (got,) = target.conn.read([ent])
    cfg = got.meter_entry.config
    assert (cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) == (250_000, 8, 500_000, 16)


def test_client_side_refusals_are_target_errors_with_the_spec_code(target) -> None:
    cases = {
        "NOT_FOUND": TableEntry("l2_fwd", {"nosuch": Exact(1)}, "MyIngress.forward", {"port": 1}),
        "OUT_OF_RANGE": RegisterCell("last_len", 0, 1 << 32),
        "INVALID_ARGUMENT": TableEntry(
            "l2_fwd", {"hdr.ethernet.dst": Exact(1)}, "MyIngress.forward", {}
        ),
    }
    for code, entity in cases.items():
        with pytest.raises(TargetError) as info:
            target.write([entity])
        assert info.value.code == code, (entity, info.value)
    assert target.server.pipeline.switch.table_entries("MyIngress.l2_fwd") == []


def test_server_side_refusals_keep_their_code(target) -> None:
    entry = TableEntry("l2_fwd", {"hdr.ethernet.dst": Exact(1)}, "MyIngress.forward", {"port": 1})
    target.write([entry])
    with pytest.raises(TargetError) as info:
        target.write([entry])
    assert info.value.code == "ALREADY_EXISTS"
    with pytest.raises(TargetError) as info:
        target.write([CounterCell("port_rx", 512, 1, 1)])  # one past the end
    assert info.value.code == "OUT_OF_RANGE"
