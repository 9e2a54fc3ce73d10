"""Hostile clients on a session: idle streams cannot starve unary RPCs, a client that never
reads cannot grow the server, Reads come in bounded chunks, and malformed strings,
metadata and full tables get their spec status codes."""

from __future__ import annotations

import json
import queue
import time

import grpc
import p4rt_helpers
import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, Names, RawClient
from test_p4rt_pipeline import MAC2, MAC3, U, expect_codes, frame, table_entry, upd

from p4rtproto import code_pb2, p4runtime_pb2, p4runtime_pb2_grpc
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer

MARK = b"MARK"
BAD_UTF8 = b"\xff\xfe\xfd\xfc"  # same length as MARK: the framing stays valid


def test_idle_streams_do_not_starve_unary_rpcs(l2, server, connect) -> None:
    c, n = l2
    idle = [connect() for _ in range(40)]  # never arbitrate, never send
    deadline = time.monotonic() + 10
    refused = 0
    for s in idle:
        try:
            exc = s.inbox["closed"].get(timeout=max(0.05, deadline - time.monotonic()))
        except queue.Empty:
            continue
        if exc is not None and exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
            refused += 1
    assert refused >= 40 + 1 - server.max_streams
    t0 = time.monotonic()
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=2).p4runtime_api_version
    c.write(
        upd(
            U.INSERT,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"}),
        )
    )
    assert time.monotonic() - t0 < 2


def test_packet_in_queue_is_bounded_when_the_client_never_reads() -> None:
    ports = PortSet()
    for p in (1, 2):
        ports.add_inprocess(p)
    srv = P4RuntimeServer(device_id=1, cpu_port=CPU_PORT, ports=ports, packet_in_queue=32)
    srv.start("127.0.0.1:0")
    try:
        srv.load_program(str(L2_PROGRAM))
        channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        out: queue.Queue = queue.Queue()
        arb = p4runtime_pb2.StreamMessageRequest()
        arb.arbitration.device_id = 1
        arb.arbitration.election_id.low = 1
        out.put(arb)
        call = stub.StreamChannel(iter(out.get, None))  # its answers are never read
        deadline = time.monotonic() + 5
        while not any(r.primary for r in srv._roles.values()) and time.monotonic() < deadline:
            time.sleep(0.02)
        from p4sim.model import Exact, TableEntry

        srv.pipeline.switch.table_add(
            TableEntry("MyIngress.l2_fwd", {"hdr.ethernet.dst": Exact(3)}, "MyIngress.to_cpu", {})
        )
        f = frame(MAC3, MAC2, size=1000)
        for _ in range(3000):  # 3 MB of PacketIns: more than gRPC's window holds
            ports.ports[1].inject(f)
        assert srv.packet_in_count == 3000
        assert srv.packet_in_dropped > 0
        streams = [s for r in srv._roles.values() for s in r.streams]
        assert streams and all(s.pending <= 32 for s in streams)
        assert sum(s.dropped for s in streams) == srv.packet_in_dropped
        out.put(None)
        call.cancel()
        channel.close()
    finally:
        srv.stop(grace=0)


def test_read_is_streamed_in_bounded_chunks(l2, server) -> None:
    c, n = l2
    server.READ_CHUNK_BYTES = 2048  # instance override: small chunks for a small program
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().counter_entry.counter_id = 0  # every cell of every counter
    responses = c.stub.Read(req, timeout=10)
    first = next(responses)
    # the server paused between chunks: the switch lock is free for a Write meanwhile
    t0 = time.monotonic()
    c.write(
        upd(
            U.INSERT,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"}),
        )
    )
    assert time.monotonic() - t0 < 2
    rest = list(responses)
    sizes = [r.ByteSize() for r in [first, *rest]]
    assert len(sizes) >= 4 and max(sizes) < 2048 + 200
    cells = [e.counter_entry for r in [first, *rest] for e in r.entities]
    assert sorted(ce.index.index for ce in cells) == list(range(512))  # port_rx: all 512, once each


def test_read_errors_come_before_any_data(l2) -> None:
    c, n = l2
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().counter_entry.counter_id = 0
    bad = req.entities.add().counter_entry
    bad.counter_id = n["MyIngress.port_rx"]
    bad.index.index = 4096
    got = []
    with pytest.raises(grpc.RpcError) as info:
        for r in c.stub.Read(req, timeout=10):
            got.append(r)
    assert info.value.code() == grpc.StatusCode.OUT_OF_RANGE
    assert got == []


def test_table_full_is_resource_exhausted(connect) -> None:
    c = connect()
    c.arbitrate((0, 1))
    c.get("arbitration")
    src = L2_PROGRAM.read_text().replace("size = 65536;", "size = 4;")
    c.set_pipeline(
        json.dumps({"format": "p4sim-source/1", "main": "l2.p4", "files": {"l2.p4": src}}).encode()
    )
    resp = c.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
    )
    n = Names(resp.config.p4info)
    ups = [
        upd(
            U.INSERT,
            table_entry(
                n,
                "l2_fwd",
                {"hdr.ethernet.dst": bytes([0, 0, 0, 0, 0, i + 1])},
                "forward",
                {"port": b"\x02"},
            ),
        )
        for i in range(6)
    ]
    assert expect_codes(c, *ups) == [code_pb2.OK] * 4 + [code_pb2.RESOURCE_EXHAUSTED] * 2


def _raw_stream(server: P4RuntimeServer):
    channel = p4rt_helpers.channel(f"127.0.0.1:{server.port}")
    out: queue.Queue = queue.Queue()
    call = channel.stream_stream(
        "/p4.v1.P4Runtime/StreamChannel",
        request_serializer=None,
        response_deserializer=p4runtime_pb2.StreamMessageResponse.FromString,
    )(iter(out.get, None))
    return channel, out, call


@pytest.mark.parametrize("field", ["role_name", "type_url"])
def test_bad_utf8_in_arbitration_is_invalid_argument(server, field) -> None:
    req = p4runtime_pb2.StreamMessageRequest()
    req.arbitration.device_id = 1
    req.arbitration.election_id.low = 5
    if field == "role_name":
        req.arbitration.role.name = MARK.decode()
    else:
        req.arbitration.role.config.type_url = MARK.decode()
    raw = req.SerializeToString().replace(MARK, BAD_UTF8)
    channel, out, call = _raw_stream(server)
    out.put(raw)
    got = next(call)
    assert got.WhichOneof("update") == "error", got
    assert got.error.canonical_code == code_pb2.INVALID_ARGUMENT
    out.put(None)
    channel.close()
    # the server is still there
    assert RawClient(f"127.0.0.1:{server.port}").stub.Capabilities(
        p4runtime_pb2.CapabilitiesRequest(), timeout=5
    )


def test_bad_utf8_in_write_is_invalid_argument(l2) -> None:
    c, n = l2
    raw_write = c.channel.unary_unary(
        "/p4.v1.P4Runtime/Write", request_serializer=None, response_deserializer=None
    )
    req = p4runtime_pb2.WriteRequest(device_id=1, role=MARK.decode())
    req.election_id.low = 1
    with pytest.raises(grpc.RpcError) as info:
        raw_write(req.SerializeToString().replace(MARK, BAD_UTF8), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    # an Any's type_url inside an update
    req = p4runtime_pb2.WriteRequest(device_id=1)
    req.election_id.low = 1
    u = req.updates.add(type=U.MODIFY)
    u.entity.extern_entry.extern_type_id = 1
    u.entity.extern_entry.entry.type_url = MARK.decode()
    with pytest.raises(grpc.RpcError) as info:
        raw_write(req.SerializeToString().replace(MARK, BAD_UTF8), timeout=5)
    assert info.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNKNOWN)
    if info.value.code() == grpc.StatusCode.UNKNOWN:  # per-update error
        from test_p4rt_pipeline import write_error

        assert [e.canonical_code for e in write_error(info.value)] == [code_pb2.INVALID_ARGUMENT]


@pytest.mark.parametrize("how", ["missing", "repeated"])
def test_packet_out_metadata_must_be_complete_and_unique(l2, server, how) -> None:
    c, n = l2
    md = n.metadata["packet_out"]
    payload = frame(MAC2, MAC3, ethertype=0x88B5)
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = payload
    req.packet.metadata.add(metadata_id=md["egress_port"], value=b"\x03")
    if how == "repeated":
        req.packet.metadata.add(metadata_id=md["pad"], value=b"\x00")
        req.packet.metadata.add(metadata_id=md["egress_port"], value=b"\x04")
    c.stream_send(req)
    err = c.get("error").error
    assert err.canonical_code == code_pb2.INVALID_ARGUMENT
    assert ("missing" if how == "missing" else "twice") in err.message
    assert (
        server.ports.ports[3].wait_output(0.3) is None
        and server.ports.ports[4].wait_output(0.1) is None
    )
    # the complete one goes out
    c.packet_out(payload, {md["egress_port"]: b"\x03", md["pad"]: b"\x00"})
    assert server.ports.ports[3].wait_output(1.0) == payload


def test_stream_errors_are_bounded_too(l2, server) -> None:
    # a client that floods bad PacketOuts gets one error each while it keeps up; the rest
    # are dropped and counted, never queued without bound
    c, n = l2
    server_stream = next(s for r in server._roles.values() for s in r.streams)
    server_stream.packet_limit = 8
    for _ in range(200):
        c.packet_out(b"\x00" * 20, {99: b"\x01"})
    deadline = time.monotonic() + 5
    while c.inbox["error"].qsize() + server_stream.dropped < 200 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert c.inbox["error"].qsize() + server_stream.dropped == 200
    assert server_stream.pending <= 8
