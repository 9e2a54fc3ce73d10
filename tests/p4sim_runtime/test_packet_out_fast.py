"""PacketOut's fast path (service._packet_out_fast): a PacketOut whose metadata bytes were
checked once is sent without protobuf. It must do what the reference path does, byte for
byte: the splitter against protobuf on generated and mutated messages, and two servers
(fast path on / off) fed the same stream messages, hostile ones included. Negative
controls: a splitter that lets a second payload field hide in the metadata bytes, and a
fast path that skips the primary check, are each caught by the same comparisons."""

from __future__ import annotations

import random

import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, Names

from p4rtproto import p4runtime_pb2
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer
from p4sim.server import packet_io as packet_io_mod
from p4sim.server import stream as stream_mod
from p4sim.server.fastwrite import varint_bytes

P = p4runtime_pb2


def _field(tag: int, body: bytes) -> bytes:
    return bytes([tag]) + varint_bytes(len(body)) + body


def _metadata(mid: int, value: bytes) -> bytes:
    """One PacketMetadata as field 2 of a PacketOut."""
    return _field(0x12, b"\x08" + varint_bytes(mid) + _field(0x12, value))


def _messages(rng: random.Random) -> list[bytes]:
    """Serialized StreamMessageRequests: protobuf's own PacketOuts, then hand-made shapes
    protobuf also reads (fields out of order, a payload twice, overlong lengths,
    unknown fields) and mutations of all of them."""
    out = []
    for size in (0, 1, 60, 127, 128, 300, 16_383, 16_384):
        for n_md in range(4):
            m = P.StreamMessageRequest()
            m.packet.payload = rng.randbytes(size)
            for i in range(n_md):
                m.packet.metadata.add(metadata_id=i + 1, value=rng.randbytes(rng.randrange(3)))
            out.append(m.SerializeToString())
    md = _metadata(1, b"\x03") + _metadata(2, b"\x00")
    pay = _field(0x0A, b"\x02" * 20)
    crafted = [
        md + pay,  # metadata before the payload
        pay + md + _field(0x0A, b"\x07" * 5),  # a second payload after the metadata: the last wins
        pay + md + b"\x18\x01",  # an unknown varint field
        b"\x0a\x81\x00" + b"\x05",  # an overlong payload length (1 in two bytes)
        pay + md + _field(0x12, b"\x08"),  # a truncated PacketMetadata
        pay,
        md,
    ]
    for body in crafted:
        out.append(_field(0x12, body))
    out.append(b"\x12\x80\x00")  # an overlong outer length
    out.append(_field(0x0A, b"\x08\x01"))  # arbitration, not a packet
    out.append(_field(0x12, pay + md) + _field(0x1A, b""))  # a packet, then a digest ack
    for data in list(out):
        for _ in range(12):
            b = bytearray(data)
            op = rng.randrange(3)
            if op == 0 and b:
                b[rng.randrange(len(b))] = rng.randrange(256)
            elif op == 1 and b:
                del b[rng.randrange(len(b)) :]
            else:
                b.insert(rng.randrange(len(b) + 1), rng.choice((0x0A, 0x12, 0x80, 0x00)))
            out.append(bytes(b))
    return out


def _disagreements(messages: list[bytes]) -> list[bytes]:
    """Messages the splitter accepts (metadata bytes checked) where protobuf reads
    another packet: another payload, other metadata, or no packet at all."""
    bad = []
    for data in messages:
        split = packet_io_mod.split_packet_out(data)
        if split is None or not packet_io_mod.metadata_only(split[1]):
            continue
        payload, meta = split
        try:
            ref = P.StreamMessageRequest.FromString(data)
        except Exception:
            ref = None
        try:
            alone = list(P.PacketOut.FromString(meta).metadata)
        except Exception:
            alone = None
        if ref is None or alone is None:
            if (ref is None) != (
                alone is None
            ):  # the metadata bytes alone must fail exactly when the message does
                bad.append(data)
            continue
        if (
            ref.WhichOneof("update") != "packet"
            or ref.packet.payload != payload
            or list(ref.packet.metadata) != alone
        ):
            bad.append(data)
    return bad


def test_the_splitter_reads_what_protobuf_reads() -> None:
    messages = _messages(random.Random(19))
    accepted = sum(
        1
        for d in messages
        if (s := packet_io_mod.split_packet_out(d)) and packet_io_mod.metadata_only(s[1])
    )
    assert accepted > 100  # the fast path has work: protobuf's own encoding always splits
    assert _disagreements(messages) == []


def test_negative_control_a_splitter_that_trusts_any_tail_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(
        packet_io_mod, "metadata_only", lambda meta: True
    )  # planted: a payload may hide in the tail
    assert _disagreements(_messages(random.Random(19)))


# ------------------------------------------------------------ two servers, one stream each


def _server() -> tuple[P4RuntimeServer, Names]:
    ports = PortSet()
    for n in (1, 2, 3):
        ports.add_inprocess(n)
    srv = P4RuntimeServer(device_id=1, cpu_port=CPU_PORT, ports=ports)
    srv.load_program(str(L2_PROGRAM))
    return srv, Names(srv.pipeline.p4info)  # type: ignore[union-attr]


def _arbitration(election: int) -> bytes:
    m = P.StreamMessageRequest()
    m.arbitration.device_id = 1
    m.arbitration.election_id.low = election
    return m.SerializeToString()


def _script(n: Names) -> list[tuple[str, bytes]]:
    """(which stream, message bytes): stream "a" is primary until "b" arbitrates higher."""
    md = n.metadata["packet_out"]
    port, pad = md["egress_port"], md["pad"]

    def po(payload: bytes, *fields: tuple[int, bytes]) -> bytes:
        m = P.StreamMessageRequest()
        m.packet.payload = payload
        for mid, value in fields:
            m.packet.metadata.add(metadata_id=mid, value=value)
        return m.SerializeToString()

    to_cpu = po(b"\x02" * 30, (port, bytes([CPU_PORT])), (pad, b"\x00"))
    to_3 = po(b"\x03" * 40, (port, b"\x03"), (pad, b"\x00"))
    body_md = _metadata(port, bytes([CPU_PORT])) + _metadata(pad, b"\x00")
    twice = _field(0x12, _field(0x0A, b"\x05" * 30) + body_md + _field(0x0A, b"\x06" * 31))
    return [
        ("a", _arbitration(5)),
        ("a", to_cpu),
        ("a", to_cpu),
        ("a", to_cpu),  # the first is checked, the rest take the fast path
        ("a", to_3),
        ("a", to_3),
        (
            "a",
            po(b"\x04" * 50, (port, bytes([CPU_PORT])), (pad, b"\x00")),
        ),  # same metadata, another payload
        (
            "a",
            po(b"\x04" * 50, (pad, b"\x00"), (port, bytes([CPU_PORT]))),
        ),  # reordered: another key
        ("a", twice),
        ("a", twice),  # a second payload field: protobuf sends the last one
        ("a", _field(0x12, body_md + _field(0x0A, b"\x07" * 20))),  # metadata before the payload
        ("a", po(b"\x08" * 20, (port, b"\x01"), (99, b"\x01"))),  # unknown metadata id: an error
        ("a", po(b"\x08" * 20, (port, b"\x01"), (99, b"\x01"))),  # still an error (never cached)
        ("a", po(b"\x08" * 20, (port, b"\x02\x00"))),  # out of range
        ("a", to_cpu[:-1]),  # truncated
        ("a", b"\x12\x80\x00"),  # overlong outer length
        ("a", to_cpu),
        ("b", _arbitration(9)),  # b is primary now
        ("a", to_cpu),
        ("a", to_3),  # not primary: PERMISSION_DENIED, nothing sent
        ("b", to_cpu),
        ("b", to_3),
        ("b", to_cpu),
    ]


def _run(srv: P4RuntimeServer, script: list[tuple[str, bytes]]) -> list[tuple]:
    """What each message did: answers on each stream, frames out of each port, count."""
    got: dict[str, list] = {"a": [], "b": []}
    streams = {k: stream_mod._Stream(1024, got[k].append) for k in got}
    trace = []
    for who, data in script:
        stop = srv._stream_request(streams[who], data)
        answers = {
            k: [x.msg if isinstance(x, stream_mod._Packet) else x for x in v]
            for k, v in got.items()
        }
        for v in got.values():
            v.clear()
        frames = {n: list(p.output) for n, p in srv.ports.ports.items()}
        for p in srv.ports.ports.values():
            p.output.clear()
        trace.append(
            (
                who,
                stop and (stop.code, stop.message),
                {
                    k: [x if isinstance(x, bytes) else x.SerializeToString() for x in v]
                    for k, v in answers.items()
                },
                frames,
                srv.packet_out_count,
            )
        )
    return trace


def _fast_hits(srv: P4RuntimeServer) -> list[bool]:
    hits: list[bool] = []
    real = srv._packet_out_fast

    def counted(stream, data) -> bool:
        hit = real(stream, data)
        hits.append(hit)
        return hit

    srv._packet_out_fast = counted  # type: ignore[method-assign]
    return hits


@pytest.fixture
def servers():
    (fast, n), (ref, _) = _server(), _server()
    ref._packet_out_fast = lambda stream, data: False  # type: ignore[method-assign]
    yield fast, ref, n
    fast.stop(grace=0)
    ref.stop(grace=0)


def test_fast_and_reference_paths_do_the_same(servers) -> None:
    fast, ref, n = servers
    script = _script(n)
    hits = _fast_hits(fast)
    want = _run(ref, script)
    assert _run(fast, script) == want
    # a's to_cpu (2nd, 3rd, last), to_3 (2nd), same metadata; b's three
    assert sum(hits) == 8
    kinds = [
        [P.StreamMessageResponse.FromString(x).WhichOneof("update") for x in step[2]["a"]]
        for step in want
    ]
    assert sum(k.count("packet") for k in kinds) == 9  # the script does what it says
    assert sum(k.count("error") for k in kinds) == 7
    assert want[-1][4] == 14 and want[5][3][3]  # packets sent; to_3 came out of port 3


def test_negative_control_a_fast_path_without_the_primary_check_is_caught(
    servers, monkeypatch
) -> None:
    fast, ref, n = servers

    def lax(stream, data) -> bool:  # planted: any arbitrated stream may send
        split = packet_io_mod.split_packet_out(data)
        header = split and fast.pipeline.packet_out_headers.get(split[1])  # type: ignore[union-attr]
        if not header:
            return False
        fast.packet_out_count += 1
        fast.inject(CPU_PORT, header + split[0])
        return True

    fast._packet_out_fast = lax  # type: ignore[method-assign]
    script = _script(n)
    assert _run(fast, script) != _run(ref, script)
