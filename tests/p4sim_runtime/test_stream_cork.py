"""StreamChannel's PacketIns with many in flight, on both front ends: every PacketIn
arrives, in the order its PacketOut (or its port's frame) came, and none is left in a
buffer: the last of a burst arrives with no traffic after it. The native front end corks
the stream (grpc++'s buffer hint on a write with more queued behind it: one sendmsg for
the lot, not one each; `Call.corked` counts them). gRPC flushes a corked write when the
stream's own reads make it send a window update, so only a burst to an idle stream (a
port's PacketIns, the client silent) shows a cork that is never lifted.

Negative controls, planted in the native front end's C++ (built at -O0 and served for the
one test): every write corked (the idle stream's burst stays in gRPC's buffer), the last
response of a burst dropped (one PacketIn missing), no write ever corked (the counter
stays 0)"""

from __future__ import annotations

import queue
import threading

import grpc
import p4rt_helpers
import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, Names
from test_stream_handoff import NATIVE, PATHS, _arbitration

from p4rtproto import p4runtime_pb2, p4runtime_pb2_grpc
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer, native
from p4sim.server.native import build

IN_FLIGHT = 32
ROUNDS = 600  # PacketOuts per run, IN_FLIGHT of them outstanding at any time
# a deadline for a PacketIn, not a measurement: a held one never comes
WAIT_S = 10.0
SOURCES = {} if native.unavailable_reason() else build.sources()


def _server(frontend: str) -> tuple[P4RuntimeServer, Names]:
    ports = PortSet()
    ports.add_inprocess(1)
    srv = P4RuntimeServer(device_id=1, cpu_port=CPU_PORT, ports=ports, frontend=frontend)
    srv.start("127.0.0.1:0")
    srv.load_program(str(L2_PROGRAM))
    return srv, Names(srv.pipeline.p4info)  # type: ignore[union-attr]


def _packet_out(n: Names, seq: int) -> p4runtime_pb2.StreamMessageRequest:
    """A PacketOut the program sends back to the CPU port: its PacketIn carries `seq`.
    Small (the 64 KiB of gRPC's write buffer would flush a corked tail on its own)."""
    md = n.metadata["packet_out"]
    m = p4runtime_pb2.StreamMessageRequest()
    m.packet.payload = b"seq-%06d" % seq + b"\x00" * 40
    m.packet.metadata.add(metadata_id=md["egress_port"], value=bytes([CPU_PORT]))
    m.packet.metadata.add(metadata_id=md["pad"], value=b"\x00")
    return m


def _seq(resp: p4runtime_pb2.StreamMessageResponse) -> int:
    assert resp.WhichOneof("update") == "packet", resp
    return int(resp.packet.payload[4:10])


class _Primary:
    """The primary's StreamChannel: requests with put(), answers collected by a thread."""

    def __init__(self, srv: P4RuntimeServer) -> None:
        self.channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
        self.out: queue.Queue = queue.Queue()
        self.got: queue.Queue = queue.Queue()
        self.call = p4runtime_pb2_grpc.P4RuntimeStub(self.channel).StreamChannel(
            iter(self.out.get, None)
        )
        self.out.put(_arbitration(5))
        threading.Thread(target=self._read, daemon=True).start()
        assert self.next().arbitration.status.code == 0

    def _read(self) -> None:
        try:
            for msg in self.call:
                self.got.put(msg)
        except grpc.RpcError as exc:
            self.got.put(exc)

    def put(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self.out.put(msg)

    def next(self) -> p4runtime_pb2.StreamMessageResponse:
        try:
            return self.got.get(timeout=WAIT_S)
        except queue.Empty:
            raise AssertionError(f"no answer in {WAIT_S:.0f} s: held in a buffer or lost") from None

    def close(self) -> None:
        self.out.put(None)
        self.call.cancel()
        self.channel.close()


def _round_trips(srv: P4RuntimeServer, n: Names, c: _Primary) -> list[int]:
    """ROUNDS PacketOuts, IN_FLIGHT outstanding (one sent per PacketIn received), then none:
    the sequence numbers of the PacketIns, in arrival order."""
    sent = 0
    for _ in range(IN_FLIGHT):
        c.put(_packet_out(n, sent))
        sent += 1
    seen = []
    while len(seen) < ROUNDS:
        seen.append(_seq(c.next()))
        if sent < ROUNDS:
            c.put(_packet_out(n, sent))
            sent += 1
    return seen


def _burst(n: Names, c: _Primary, first: int) -> list[int]:
    """IN_FLIGHT PacketOuts at once, then nothing: their PacketIns' sequence numbers."""
    for i in range(IN_FLIGHT):
        c.put(_packet_out(n, first + i))
    return [_seq(c.next()) for _ in range(IN_FLIGHT)]


def _port_burst(srv: P4RuntimeServer, n: Names, c: _Primary, first: int) -> list[int]:
    """IN_FLIGHT frames a port sends to the CPU port (injected from this thread) while the
    client sends nothing at all: their PacketIns' sequence numbers. No read on the stream,
    so nothing but the front end's own last, uncorked write sends the tail."""
    md = n.metadata["packet_out"]
    header = srv._packet_out_header(
        srv.pipeline, ((md["egress_port"], bytes([CPU_PORT])), (md["pad"], b"\x00"))
    )
    for i in range(IN_FLIGHT):
        srv.inject(CPU_PORT, header + _packet_out(n, first + i).packet.payload)
    return [_seq(c.next()) for _ in range(IN_FLIGHT)]


def _check(frontend: str) -> int:
    """Round trips, bursts of PacketOuts, bursts of a port's PacketIns to an idle stream;
    returns the writes the native front end corked."""
    srv, n = _server(frontend)
    c = _Primary(srv)
    try:
        assert _round_trips(srv, n, c) == list(range(ROUNDS))
        first = ROUNDS
        for burst in (_burst, _burst, _burst):
            assert burst(n, c, first) == list(range(first, first + IN_FLIGHT))
            first += IN_FLIGHT
        for _ in range(3):
            assert _port_burst(srv, n, c, first) == list(range(first, first + IN_FLIGHT))
            first += IN_FLIGHT
        assert c.got.empty()  # nothing more than was sent
        (stream,) = [s for r in srv._roles.values() for s in r.streams]
        return stream._push.__self__.corked if frontend == "native" else 0
    finally:
        c.close()
        srv.stop(grace=0)


@pytest.mark.parametrize(("frontend", "mode"), PATHS)
def test_every_packet_in_arrives_in_order_and_none_is_held(frontend: str, mode: str) -> None:
    corked = _check(frontend)
    if frontend == "native":
        # bursts queue PacketIns behind a running write: those are corked. The call's first
        # write (the arbitration answer, with the initial metadata) never is.
        assert corked > 0


def _plant(monkeypatch, old: str, new: str) -> None:
    """Serve this test's native servers with the front end's sources where `old` became `new`."""
    where = [name for name, text in SOURCES.items() if old in text]
    assert len(where) == 1 and SOURCES[where[0]].count(old) == 1, old
    planted = {**SOURCES, where[0]: SOURCES[where[0]].replace(old, new)}
    monkeypatch.setattr(build, "_loaded", build.load_variant(planted))


CORK_RULE = "if (out.empty() || first) return Write::flush;"


@NATIVE
def test_negative_control_every_write_corked_holds_the_tail(monkeypatch) -> None:
    _plant(monkeypatch, CORK_RULE, "if (first) return Write::flush;")
    with pytest.raises(AssertionError, match="held in a buffer or lost"):
        _check("native")


@NATIVE
def test_negative_control_the_last_of_a_burst_dropped(monkeypatch) -> None:
    # planted: the response that empties the queue is taken off it and never written
    _plant(
        monkeypatch,
        "    if (!can_write()) return Write::none;\n",
        "    if (!can_write()) return Write::none;\n"
        "    if (out.size() == 1 && wrote) { out_kind[out.front().kind]--; out.pop_front(); return Write::none; }\n",
    )
    with pytest.raises(AssertionError, match="held in a buffer or lost"):
        _check("native")


@NATIVE
def test_negative_control_never_corked(monkeypatch) -> None:
    _plant(monkeypatch, CORK_RULE, "return Write::flush;")
    assert _check("native") == 0  # what the test above asserts is > 0
