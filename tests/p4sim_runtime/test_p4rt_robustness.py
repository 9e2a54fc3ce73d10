"""The server survives malformed requests (answering with a status code), the wall-clock
mode moves packets on its own, and p4sim-switch's command line behaves."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import grpc
import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, RawClient

from p4rtproto import code_pb2, p4runtime_pb2
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer, make_device_config, parse_device_config


def test_garbage_never_kills_the_server(l2, server) -> None:
    c, n = l2
    raw_write = c.channel.unary_unary(
        "/p4.v1.P4Runtime/Write", request_serializer=None, response_deserializer=None
    )
    rng = random.Random(1)
    good = p4runtime_pb2.WriteRequest(device_id=1)
    good.election_id.low = 1
    u = good.updates.add(type=p4runtime_pb2.Update.INSERT)
    u.entity.table_entry.table_id = n["MyIngress.l2_fwd"]
    u.entity.table_entry.match.add(field_id=1).exact.value = b"\x01"
    u.entity.table_entry.action.action.action_id = n["MyIngress.drop"]
    blob = good.SerializeToString()
    codes = set()
    for i in range(300):
        mutated = bytearray(blob)
        for _ in range(rng.randrange(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        data = (
            bytes(mutated)
            if i % 3
            else bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60)))
        )
        try:
            raw_write(data, timeout=5)
            codes.add("OK")
        except grpc.RpcError as exc:
            codes.add(exc.code().name)
            assert exc.code() != grpc.StatusCode.INTERNAL, exc.details()
    assert "INVALID_ARGUMENT" in codes or "UNKNOWN" in codes
    # still serving, state intact
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version
    raw_stream_msg = p4runtime_pb2.StreamMessageRequest()
    raw_stream_msg.packet.payload = b"\x00" * 20
    raw_stream_msg.packet.metadata.add(metadata_id=1, value=b"\x01\x02\x03")  # wider than 9 bits
    c.stream_send(raw_stream_msg)
    assert c.get("error").error.canonical_code == code_pb2.OUT_OF_RANGE


def test_wall_clock_mode_forwards_without_being_asked(tmp_path) -> None:
    ports = PortSet(pcap_dir=tmp_path)
    for p in (1, 2):
        ports.add_inprocess(p)
    srv = P4RuntimeServer(device_id=1, cpu_port=CPU_PORT, ports=ports, clock="wall")
    srv.start("127.0.0.1:0")
    try:
        srv.load_program(str(L2_PROGRAM))
        sw = srv.pipeline.switch
        sw.tm.set_port_rate(2, pps=1000)  # 1 ms per packet on port 2: only the ticker releases them
        from p4sim.model import Exact, TableEntry

        sw.table_add(
            TableEntry(
                "MyIngress.l2_fwd", {"hdr.ethernet.dst": Exact(2)}, "MyIngress.forward", {"port": 2}
            )
        )
        frame = bytes.fromhex("000000000002000000000001") + b"\x88\xb5" + bytes(50)
        t0 = time.monotonic()
        for _ in range(5):
            ports.ports[1].inject(frame)
        got = [ports.ports[2].wait_output(2.0) for _ in range(5)]
        elapsed = time.monotonic() - t0
        assert got == [frame] * 5
        assert elapsed >= 0.004  # five packets at 1000 pps take at least 4 ms of wall time
    finally:
        srv.stop(grace=0)
    from scapy.utils import rdpcap

    assert len(rdpcap(str(tmp_path / "port2_out.pcap"))) == 5
    assert len(rdpcap(str(tmp_path / "port1_in.pcap"))) == 5


def test_cli_usage_and_device_config() -> None:
    cli = [sys.executable, "-m", "p4sim.server_cli"]
    r = subprocess.run(cli, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--no-p4" in r.stderr
    r = subprocess.run(cli + ["--no-p4", "-i", "veth0"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "PORT@IFNAME" in r.stderr
    r = subprocess.run(
        cli + ["--print-device-config", str(L2_PROGRAM)], capture_output=True, timeout=30
    )
    assert r.returncode == 0
    main, files = parse_device_config(r.stdout)
    assert main == "l2_cpu.p4" and files[main] == L2_PROGRAM.read_text()
    assert r.stdout == make_device_config(L2_PROGRAM)
    bad = subprocess.run(
        cli + [str(L2_PROGRAM.with_name("missing.p4")), "--grpc-server-addr", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    # refused while parsing, before any compile: one line, bad usage
    assert bad.returncode == 2 and "missing.p4" in bad.stderr and len(bad.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "action", [p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT]
)
def test_plain_p4_text_device_config(connect, action) -> None:
    c: RawClient = connect()
    c.arbitrate((0, 1))
    c.get("arbitration")
    c.set_pipeline(L2_PROGRAM.read_bytes(), action=action)
    cfg = c.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
    )
    assert any(t.preamble.name == "MyIngress.l2_fwd" for t in cfg.config.p4info.tables)


def test_cli_rates() -> None:
    from p4sim.server_cli import _port_rate, _rate, build_parser

    assert (
        _rate("10G") == 10e9
        and _rate("100m") == 100e6
        and _rate("25Gbps") == 25e9
        and _rate("1500") == 1500
    )
    assert _port_rate("3=25G") == (3, 25e9)
    args = build_parser().parse_args(["--no-p4", "--line-rate", "10G", "--port-rate", "2=1G"])
    assert args.line_rate == 10e9 and args.port_rate == [(2, 1e9)]
    r = subprocess.run(
        [sys.executable, "-m", "p4sim.server_cli", "--no-p4", "--line-rate", "fast"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "not a bit rate" in r.stderr


def test_cli_priority_queues() -> None:
    # simple_switch_grpc's --priority-queues; BMv2 needs 8 for roce_switch.p4 (classes 0..7)
    from p4sim.server_cli import build_parser

    assert build_parser().parse_args(["--no-p4"]).priority_queues == 8
    assert build_parser().parse_args(["--no-p4", "--priority-queues", "1"]).priority_queues == 1
    r = subprocess.run(
        [sys.executable, "-m", "p4sim.server_cli", "--no-p4", "--priority-queues", "9"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "--priority-queues" in r.stderr


@pytest.mark.parametrize(
    "method,streaming",
    [
        ("Read", True),
        ("SetForwardingPipelineConfig", False),
        ("GetForwardingPipelineConfig", False),
        ("Capabilities", False),
    ],
)
def test_unparseable_request_is_invalid_argument(l2, method, streaming) -> None:
    # bytes that are no protobuf message (a truncated length-delimited field): gRPC alone
    # would answer INTERNAL before the handler runs
    c, _ = l2
    make = c.channel.unary_stream if streaming else c.channel.unary_unary
    call = make(f"/p4.v1.P4Runtime/{method}", request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.RpcError) as info:
        result = call(b"\x0a\x7f\x01", timeout=10)
        if streaming:
            list(result)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    assert "malformed" in info.value.details()
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version
