"""Fixtures for the p4sim runtime tests: a real P4Runtime server on a free port with
in-process ports, raw gRPC clients, and the test program committed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, LiveSwitch, Names, RawClient

from p4rtproto import p4runtime_pb2
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer, make_device_config


@pytest.fixture
def server() -> Iterator[P4RuntimeServer]:
    """A server with in-process ports 1..4, virtual clock, CPU port 255, no pipeline yet."""
    ports = PortSet()
    for n in range(1, 5):
        ports.add_inprocess(n)
    srv = P4RuntimeServer(device_id=1, cpu_port=CPU_PORT, ports=ports)
    srv.start("127.0.0.1:0")
    yield srv
    srv.stop(grace=0)


@pytest.fixture
def live_switch(tmp_path) -> Iterator[LiveSwitch]:
    """A p4sim-switch process (device 1, CPU port 255, no program, no data ports)."""
    sw = LiveSwitch(tmp_path)
    yield sw
    sw.close()


@pytest.fixture
def live_switch_ports(tmp_path) -> Iterator[LiveSwitch]:
    """A p4sim-switch process whose ports 1..4 are veths the test holds (needs root)."""
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root for veth pairs and AF_PACKET")
    sw = LiveSwitch(tmp_path, data_ports=4)
    yield sw
    sw.close()


@pytest.fixture
def connect(server: P4RuntimeServer) -> Iterator:
    """connect() -> a new RawClient to the test server (closed at teardown)."""
    made: list[RawClient] = []

    def make(device_id: int = 1) -> RawClient:
        c = RawClient(f"127.0.0.1:{server.port}", device_id)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def l2(server: P4RuntimeServer, connect):
    """(primary client, Names) with l2_cpu.p4 committed on the server."""
    c = connect()
    c.arbitrate((0, 1))
    assert c.get("arbitration").arbitration.status.code == 0
    c.set_pipeline(make_device_config(L2_PROGRAM), cookie=77)
    resp = c.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
    )
    return c, Names(resp.config.p4info)
