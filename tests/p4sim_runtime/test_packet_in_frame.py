"""PacketIn without a metadata dict: Switch.on_packet_in_frame hands the server the packet_in
header's bytes, and the server caches the serialized metadata per header bytes
(service._on_packet_in_frame). Checked against references that do not share its code: the
header bits decoded by a bit string, the PacketIn built by protobuf from P4Info ids, and
the switch's own on_packet_in on the same traffic. Negative controls: a decoder that reads
the fields in the wrong order and a cache keyed by part of the header are each caught."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM

from p4rtproto import codec, p4runtime_pb2
from p4sim.model import Exact, TableEntry, Ternary
from p4sim.runtime.ports import PortSet
from p4sim.runtime.switch import Switch
from p4sim.server import P4RuntimeServer
from p4sim.server import stream as stream_mod

P = p4runtime_pb2
ROOT = Path(__file__).resolve().parents[2]
FRAME = bytes.fromhex(
    "0200000000020200000000010800456A003C00014000401126440A0000010A000002C00112B7002800000400"
    "FFFF00000014800000000000000000000000000000000000000022492918"
)


def _roce_switch() -> Switch:
    return Switch(
        str(ROOT / "p4src" / "roce_switch.p4"),
        include_dirs=[str(ROOT / "p4src")],
        cpu_port=CPU_PORT,
    )


def _bits_reference(sw: Switch, head: bytes) -> dict[str, int]:
    """The packet_in header's fields, MSB first, read off a string of bits."""
    bits = "".join(f"{b:08b}" for b in head)
    out, at = {}, 0
    for f in sw._pkt_in_hdr.fields:
        out[f.name] = int(bits[at : at + f.bitwidth], 2)
        at += f.bitwidth
    return out


def _decode_mismatches(sw: Switch, decode) -> int:
    rng = random.Random(7)
    heads = [bytes(3), b"\xff" * 3, b"\x80\x00\x00", b"\x00\x00\x01"] + [
        rng.randbytes(3) for _ in range(300)
    ]
    return sum(decode(h) != _bits_reference(sw, h) for h in heads)


def test_packet_in_metadata_reads_the_header_bits() -> None:
    sw = _roce_switch()  # packet_in: ingress_port 9 bits, reason 8, _pad 7
    assert [f.bitwidth for f in sw.model.controller_headers["packet_in"].fields] == [9, 8, 7]
    assert _decode_mismatches(sw, sw.packet_in_metadata) == 0


def test_negative_control_fields_read_from_the_wrong_end_are_caught() -> None:
    sw = _roce_switch()

    def lsb_first(head: bytes) -> dict[str, int]:  # planted: the first field from the low bits
        v, out = int.from_bytes(head, "big"), {}
        for f in sw._pkt_in_hdr.fields:
            out[f.name] = v & ((1 << f.bitwidth) - 1)
            v >>= f.bitwidth
        return out

    assert _decode_mismatches(sw, lsb_first) > 250


def test_frame_callback_gives_what_on_packet_in_gives() -> None:
    sw = _roce_switch()
    plain: list[tuple[bytes, dict]] = []
    frames: list[tuple[bytes, bytes]] = []
    sw.on_packet_in(lambda data, md: plain.append((data, md)))
    sw.on_packet_in_frame(lambda payload, head: frames.append((payload, head)))
    mirror = next(n for n in sw.tables if n.endswith("mirror_flow"))
    dqpn = next(k.name for k in sw.model.tables[mirror].keys if k.name.endswith("dqpn"))
    sw.table_add(
        TableEntry(
            mirror, {dqpn: Ternary(0x14, 0xFFFFFF)}, "mirror_to", {"session": 6}, priority=10
        )
    )
    l2 = next(n for n in sw.tables if n.endswith("l2_fwd"))
    sw.table_add(
        TableEntry(
            l2, {sw.model.tables[l2].keys[0].name: Exact(0x020000000002)}, "l2_forward", {"port": 2}
        )
    )
    sw.clone_session_set(6, [(CPU_PORT, 0)])
    ports = [1, 3, 7, 200, 300, 511]
    for port in ports:
        sw.send(port, FRAME)
    assert len(frames) == len(plain) == len(ports)
    for (payload, head), (data, md), port in zip(frames, plain, ports, strict=True):
        assert payload == data == FRAME  # the header is taken off
        assert len(head) == 3
        assert sw.packet_in_metadata(head) == md == _bits_reference(sw, head)
        assert md["ingress_port"] == port and md["reason"] == 3


# ------------------------------------------------------------------ the server's PacketIn bytes


def _server() -> P4RuntimeServer:
    ports = PortSet()
    for n in (1, 2, 3):
        ports.add_inprocess(n)
    srv = P4RuntimeServer(device_id=1, cpu_port=CPU_PORT, ports=ports)
    srv.load_program(str(L2_PROGRAM))
    return srv


def _protobuf_packet_in(srv: P4RuntimeServer, payload: bytes, md: dict[str, int]) -> bytes:
    want = P.StreamMessageResponse()
    want.packet.payload = payload
    ids = {
        m.name: m.id
        for c in srv.pipeline.p4info.controller_packet_metadata  # type: ignore[union-attr]
        if c.preamble.name == "packet_in"
        for m in c.metadata
    }
    for name, value in md.items():
        want.packet.metadata.add(metadata_id=ids[name], value=codec.to_bytes(value))
    return want.SerializeToString()


def _packet_in_mismatches(srv: P4RuntimeServer, monkeypatch) -> int:
    """PacketIns the frame path sends that protobuf would encode otherwise (header bytes
    repeated and varied across a small cache, so that hits, misses and clears all occur)."""
    p = srv.pipeline
    assert p is not None
    monkeypatch.setattr(p, "PACKET_CACHE", 8)
    sent: list[bytes] = []
    monkeypatch.setattr(srv, "_send_primaries", sent.append)
    sw = p.switch
    nb = sw._pkt_in_nb
    rng = random.Random(3)
    # 5 x 4 headers that differ in their last byte only (the low bit of ingress_port, pad)
    heads = [
        base[:-1] + bytes([last])
        for base in (rng.randbytes(nb) for _ in range(5))
        for last in (0, 1, 0x80, 0xFF)
    ]
    bad = 0
    for i in range(400):
        head = heads[rng.randrange(len(heads))] if i % 3 else rng.randbytes(nb)
        payload = rng.randbytes(rng.choice((0, 1, 60, 200)))
        srv._on_packet_in_frame(sw, payload, head)
        bad += sent.pop() != _protobuf_packet_in(srv, payload, _bits_reference(sw, head))
    assert srv.packet_in_count == 400
    return bad


def test_server_packet_in_from_header_bytes_is_protobufs() -> None:
    srv = _server()
    try:
        with pytest.MonkeyPatch.context() as mp:
            assert _packet_in_mismatches(srv, mp) == 0
        assert srv.pipeline.packet_in_heads  # type: ignore[union-attr]  # the cache was used
    finally:
        srv.stop(grace=0)


def test_negative_control_a_cache_keyed_by_part_of_the_header_is_caught(monkeypatch) -> None:
    srv = _server()
    try:

        class FirstByte(dict):  # planted: the cache forgets the header's last byte
            def get(self, k, d=None):
                return super().get(k[:1], d)

            def __setitem__(self, k, v):
                super().__setitem__(k[:1], v)

        monkeypatch.setattr(srv.pipeline, "packet_in_heads", FirstByte())
        assert _packet_in_mismatches(srv, monkeypatch) > 50
    finally:
        srv.stop(grace=0)


def test_packet_ins_reach_the_stream_through_the_frame_path() -> None:
    """End to end in-process: a PacketOut to the CPU port comes back as the PacketIn
    protobuf encodes, through on_packet_in_frame (the server registers no dict callback)."""
    srv = _server()
    try:
        sw = srv.pipeline.switch  # type: ignore[union-attr]
        assert sw._packet_in_frame_cbs and not sw._packet_in_cbs
        got: list = []
        st = stream_mod._Stream(1024, got.append)
        arb = P.StreamMessageRequest()
        arb.arbitration.device_id = 1
        arb.arbitration.election_id.low = 5
        assert srv._stream_request(st, arb.SerializeToString()) is None
        md = {
            m.name: m.id
            for c in srv.pipeline.p4info.controller_packet_metadata  # type: ignore[union-attr]
            if c.preamble.name == "packet_out"
            for m in c.metadata
        }
        po = P.StreamMessageRequest()
        po.packet.payload = b"\x02" * 30
        po.packet.metadata.add(metadata_id=md["egress_port"], value=bytes([CPU_PORT]))
        po.packet.metadata.add(metadata_id=md["pad"], value=b"\x00")
        for _ in range(3):
            assert srv._stream_request(st, po.SerializeToString()) is None
        pins = [x.msg for x in got if isinstance(x, stream_mod._Packet)]
        assert len(pins) == 3
        for pin in pins:
            assert pin == _protobuf_packet_in(
                srv, b"\x02" * 30, {"ingress_port": CPU_PORT, "pad": 0}
            )
    finally:
        srv.stop(grace=0)
