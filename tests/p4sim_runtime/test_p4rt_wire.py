"""The hand-written protobuf wire paths agree with the generated classes, byte for byte."""

from __future__ import annotations

import random

import pytest
from p4.v1 import p4runtime_pb2
from p4rt_helpers import L2_PROGRAM

from p4sim.model import Exact, Lpm, Optional_, Range, TableEntry, Ternary
from p4sim.server import codec, wire
from p4sim.server.pipeline import compile_program


@pytest.fixture(scope="module")
def maps():
    compiled, p4info = compile_program(L2_PROGRAM)
    return codec.build_id_maps(p4info, compiled.model)


def _entries() -> list[TableEntry]:
    rng = random.Random(3)
    out = []
    for _ in range(50):
        out.append(TableEntry("MyIngress.l2_fwd", {"hdr.ethernet.dst": Exact(rng.randrange(1 << 48))},
                              "MyIngress.forward", {"port": rng.randrange(512)}))
        out.append(TableEntry("MyIngress.acl", {"hdr.ethernet.ether_type": Ternary(0x0800, 0xFFFF),
                                                "hdr.ethernet.src": Ternary(rng.randrange(256), 0xFF)},
                              "MyIngress.drop", {}, priority=rng.randrange(1, 1 << 31)))
        lo = rng.randrange(1 << 15)
        out.append(TableEntry("MyIngress.classify", {"hdr.ethernet.ether_type": Range(lo, lo + 5),
                                                     "sm.ingress_port": Optional_(rng.randrange(512))},
                              "MyIngress.set_prio", {"prio": rng.randrange(8)}, priority=7))
        out.append(TableEntry("MyIngress.dst_prefix", {"hdr.ethernet.dst": Lpm(0x0A0000000000, 8)}, "NoAction", {}))
    return out


def test_read_encoding_matches_protobuf(maps) -> None:
    for e in _entries():
        meta = maps.tables[maps.table_ids[e.table]]
        for metadata, counter in ((b"", None), (b"\x01\x02", (3, 300))):
            ref = codec.encode_table_entry(maps, meta, e, metadata)
            if counter is not None:
                ref.counter_data.packet_count, ref.counter_data.byte_count = counter
            assert codec.encode_table_entry_bytes(maps, meta, e, metadata, counter) == ref.SerializeToString()
    ref = p4runtime_pb2.Entity()
    ref.counter_entry.counter_id, ref.counter_entry.index.index = 7, 0
    ref.counter_entry.data.SetInParent()
    assert wire.counter_entity(7, 0, 0, 0) == ref.SerializeToString()
    ref.counter_entry.index.index, ref.counter_entry.data.packet_count, ref.counter_entry.data.byte_count = 9, 2, 3000
    assert wire.counter_entity(7, 9, 2, 3000) == ref.SerializeToString()


def test_write_parsing_matches_protobuf(maps) -> None:
    req = p4runtime_pb2.WriteRequest(device_id=3, role="r")
    req.election_id.high, req.election_id.low = 1, 2
    for e in _entries():
        meta = maps.tables[maps.table_ids[e.table]]
        u = req.updates.add(type=p4runtime_pb2.Update.INSERT)
        u.entity.table_entry.CopyFrom(codec.encode_table_entry(maps, meta, e, b"\x09"))
    buf = req.SerializeToString()
    head, spans = wire.write_request(buf)
    assert (head.device_id, head.role, head.election_id) == (3, "r", (1 << 64) | 2)
    assert len(spans) == len(req.updates)
    for (_, s, e), u in zip(spans, req.updates, strict=True):
        utype, plain = wire.update(buf, s, e)
        assert utype == u.type and plain == codec.plain_from_proto(u.entity.table_entry)
    # outside the fast subset (a counter entry): no plain entry, the caller uses protobuf
    other = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    other.entity.counter_entry.counter_id = 5
    blob = other.SerializeToString()
    assert wire.update(blob, 0, len(blob)) == (p4runtime_pb2.Update.MODIFY, None)


def test_packet_io_encoding_matches_protobuf() -> None:
    msg = p4runtime_pb2.StreamMessageResponse()
    msg.packet.payload = b"\x01" * 300
    msg.packet.metadata.add(metadata_id=1, value=b"\x02")
    msg.packet.metadata.add(metadata_id=2, value=b"\x00")
    assert wire.packet_in(b"\x01" * 300, [(1, b"\x02"), (2, b"\x00")]) == msg.SerializeToString()
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = b"abc"
    req.packet.metadata.add(metadata_id=1, value=b"\x03")
    assert wire.packet_out(req.SerializeToString()) == (b"abc", [(1, b"\x03")])
    arb = p4runtime_pb2.StreamMessageRequest()
    arb.arbitration.device_id = 1
    assert wire.packet_out(arb.SerializeToString()) is None
    with pytest.raises(wire.WireError):
        wire.fields(b"\x0a\x05ab")  # length runs past the end
    # a packet plus another field, or a packet whose payload runs past it: protobuf or an error decides
    both = req.SerializeToString() + p4runtime_pb2.StreamMessageRequest(digest_ack={"list_id": 1}).SerializeToString()
    assert wire.packet_out(both) is None
    with pytest.raises(wire.WireError):
        wire.packet_out(b"\x12\x05\x0a\x09abc")
    big = p4runtime_pb2.StreamMessageRequest()
    big.packet.payload = bytes(range(256)) * 3  # multi-byte lengths
    big.packet.metadata.add(metadata_id=300, value=b"\x01\x02")
    assert wire.packet_out(big.SerializeToString()) == (big.packet.payload, [(300, b"\x01\x02")])
    pin = p4runtime_pb2.StreamMessageResponse()
    pin.packet.payload = big.packet.payload
    pin.packet.metadata.add(metadata_id=300, value=b"\x01\x02")
    assert wire.packet_in(big.packet.payload, [(300, b"\x01\x02")]) == pin.SerializeToString()
