"""A bounded fuzz run (fixed seeds, CI size): malformed bytes to every RPC of the server.

Each message is a valid request with a few bytes overwritten, cut short or spliced, or
plain random bytes. The server must answer every unary/Read call with a status code the
P4Runtime spec uses for a bad request (never INTERNAL, never a hang), answer stream
messages with a StreamError (or end the stream with such a code), and stay up: after the
run the primary still writes and reads."""

from __future__ import annotations

import random

import grpc
import p4rt_helpers
import pytest
from p4rt_helpers import L2_PROGRAM
from test_p4rt_pipeline import MAC2, U, read_table, table_entry, upd, write_error

from p4rtproto import code_pb2, p4runtime_pb2

S = grpc.StatusCode
# what a bad request may get; UNKNOWN only from Write (a batch with failed updates)
ALLOWED = {
    S.INVALID_ARGUMENT,
    S.NOT_FOUND,
    S.ALREADY_EXISTS,
    S.OUT_OF_RANGE,
    S.PERMISSION_DENIED,
    S.FAILED_PRECONDITION,
    S.UNIMPLEMENTED,
    S.RESOURCE_EXHAUSTED,
}
SPEC_CODES = {code_pb2.Code.Value(s.name) for s in ALLOWED}


def mutations(seed: int, good: bytes, count: int):
    rng = random.Random(seed)
    letters = [k for k, byte in enumerate(good) if 0x61 <= byte <= 0x7A]  # likely inside strings
    for i in range(count):
        kind = i % 5
        b = bytearray(good)
        if kind == 4 and letters:  # a string that is not UTF-8
            b[rng.choice(letters)] = 0xFF
        elif kind == 0 and b:  # overwrite a few bytes
            for _ in range(rng.randrange(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 1 and b:  # cut short
            b = b[: rng.randrange(len(b))]
        elif kind == 2:  # splice random bytes in
            at = rng.randrange(len(b) + 1)
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        else:  # random bytes
            b = bytearray(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        yield bytes(b)


def good_requests(n) -> dict[str, list[bytes]]:
    """Valid requests to mutate; some carry long strings so that mutations hit UTF-8."""
    w = p4runtime_pb2.WriteRequest(device_id=1)
    w.election_id.low = 1
    w.updates.append(
        upd(
            U.INSERT,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"}),
        )
    )
    ce = p4runtime_pb2.CounterEntry(counter_id=n["MyIngress.port_rx"])
    ce.index.index = 3
    r = p4runtime_pb2.ReadRequest(device_id=1)
    r.entities.add().counter_entry.CopyFrom(ce)
    r.entities.add().table_entry.table_id = n["MyIngress.l2_fwd"]
    g = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1, response_type=1)
    sfp = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY
    )
    sfp.election_id.low = 1
    sfp.config.p4_device_config = L2_PROGRAM.read_bytes()
    w_role = p4runtime_pb2.WriteRequest(device_id=1, role="a-role-name-of-some-length")
    w_ext = p4runtime_pb2.WriteRequest(device_id=1)
    w_ext.election_id.low = 1
    ext = w_ext.updates.add(type=U.MODIFY).entity.extern_entry
    ext.extern_type_id, ext.entry.type_url = 1, "type.googleapis.com/some.Extern"
    return {
        "Write": [w.SerializeToString(), w_role.SerializeToString(), w_ext.SerializeToString()],
        "Read": [r.SerializeToString()],
        "GetForwardingPipelineConfig": [g.SerializeToString()],
        "SetForwardingPipelineConfig": [sfp.SerializeToString()],
        "Capabilities": [p4runtime_pb2.CapabilitiesRequest().SerializeToString()],
    }


# SetForwardingPipelineConfig compiles what still parses (0.5 s each): fewer of those
COUNTS = {
    "Write": 300,
    "Read": 300,
    "GetForwardingPipelineConfig": 150,
    "Capabilities": 100,
    "SetForwardingPipelineConfig": 24,
}


@pytest.mark.parametrize("method", list(COUNTS))
def test_fuzz_unary_and_read(l2, server, method) -> None:
    c, n = l2
    goods = good_requests(n)[method]
    streaming = method == "Read"
    make = c.channel.unary_stream if streaming else c.channel.unary_unary
    call = make(f"/p4.v1.P4Runtime/{method}", request_serializer=None, response_deserializer=None)
    seen = set()
    stream = (
        m
        for k, good in enumerate(goods)
        for m in mutations(len(method) * 31 + k, good, COUNTS[method] // len(goods))
    )
    for i, data in enumerate(stream):
        try:
            result = call(data, timeout=30)
            if streaming:
                list(result)
            seen.add("OK")
        except grpc.RpcError as exc:
            allowed = ALLOWED | ({S.UNKNOWN} if method == "Write" else set())
            assert exc.code() in allowed, (method, i, data.hex(), exc.code(), exc.details())
            if exc.code() == S.UNKNOWN:  # a batch: every failed update has a spec code too
                codes = {e.canonical_code for e in write_error(exc)} - {code_pb2.OK}
                assert codes and codes <= SPEC_CODES, (data.hex(), codes)
            seen.add(exc.code().name)
    if method != "Capabilities":  # every bytestring is a valid (empty-ish) CapabilitiesRequest
        assert seen - {"OK"}, f"{method}: no request was refused: the mutations do not reach it"
    # still serving, state intact
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5).p4runtime_api_version
    mac = bytes.fromhex("0000000000aa")
    c.write(
        upd(
            U.INSERT,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": mac}, "forward", {"port": b"\x02"}),
        )
    )
    assert any(
        int.from_bytes(e.match[0].exact.value, "big") == 0xAA
        for e in read_table(c, n["MyIngress.l2_fwd"])
    )


def test_fuzz_stream_channel(l2, server, connect) -> None:
    c, n = l2
    po = p4runtime_pb2.StreamMessageRequest()
    po.packet.payload = bytes(60)
    po.packet.metadata.add(metadata_id=n.metadata["packet_out"]["egress_port"], value=b"\x03")
    po.packet.metadata.add(metadata_id=n.metadata["packet_out"]["pad"], value=b"\x00")
    arb = p4runtime_pb2.StreamMessageRequest()
    arb.arbitration.device_id = 1
    arb.arbitration.election_id.low = 9
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = 1, 1
    role = p4runtime_pb2.StreamMessageRequest()
    role.arbitration.device_id = 1
    role.arbitration.role.name = "a-role-name-of-some-length"
    role.arbitration.role.config.type_url = "type.googleapis.com/some.RoleConfig"
    channel = p4rt_helpers.channel(f"127.0.0.1:{server.port}")
    stream = channel.stream_stream(
        "/p4.v1.P4Runtime/StreamChannel",
        request_serializer=None,
        response_deserializer=p4runtime_pb2.StreamMessageResponse.FromString,
    )
    answered = 0
    for seed, good in enumerate((po, arb, ack, role)):
        # one stream per message (a message that ends a stream would hide the rest): a
        # valid arbitration first, so that PacketOuts and acks reach their handlers
        for k, data in enumerate(mutations(seed, good.SerializeToString(), 60)):
            first = p4runtime_pb2.StreamMessageRequest()
            first.arbitration.device_id = 1
            first.arbitration.election_id.low = 1000 + seed * 100 + k
            try:
                for msg in stream(iter([first.SerializeToString(), data]), timeout=30):
                    kind = msg.WhichOneof("update")
                    if kind == "error":
                        assert msg.error.canonical_code in SPEC_CODES, (data.hex(), msg)
                        answered += 1
                    else:
                        assert kind == "arbitration", msg
            except grpc.RpcError as exc:  # a message that ends the stream must say why
                assert exc.code() in ALLOWED, (data.hex(), exc.code(), exc.details())
                answered += 1
    assert answered > 20  # the mutations reached the server's checks
    channel.close()
    # the fuzzing streams may have taken arbitration (and left): a new primary still works
    d = connect()
    d.arbitrate((1, 0))
    assert d.get("arbitration").arbitration.status.code == code_pb2.OK
    d.write(
        upd(
            U.INSERT,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"}),
        )
    )
