"""StreamChannel's hand-off: the reader thread passes requests to the response thread, at
most _Stream.REQUESTS at a time (grpc-python); on the native front end gRPC's read reaction
handles each request and queues its answers (_stream_react). A client that floods PacketOuts and never reads its PacketIns holds up
its own requests (flow control), not the server: the hand-off and the PacketIn queue stay
bounded, the threads end and the call is freed when the client goes, and the next
controller is served. Negative controls: a planted reader that waits for room without
watching the stream close hangs; the same checks see it."""

from __future__ import annotations

import queue
import threading
import time

import grpc
import p4rt_helpers
import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, Names

from p4rtproto import p4runtime_pb2, p4runtime_pb2_grpc
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer, native
from p4sim.server import stream as stream_mod

FLOOD = 20_000
PAYLOAD = b"\x02" * 1000
NATIVE = pytest.mark.skipif(
    bool(native.unavailable_reason()), reason=f"native front end: {native.unavailable_reason()}"
)
# (front end, its stream loop): every path a StreamChannel can take
PATHS = [
    pytest.param("grpc", "reader", id="grpc"),
    pytest.param("native", "react", id="native-react", marks=NATIVE),
]


def _stream_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "p4rt-stream" and t not in before]


def _arbitration(election: int) -> p4runtime_pb2.StreamMessageRequest:
    arb = p4runtime_pb2.StreamMessageRequest()
    arb.arbitration.device_id = 1
    arb.arbitration.election_id.low = election
    return arb


def _packet_out(n: Names) -> p4runtime_pb2.StreamMessageRequest:
    md = n.metadata["packet_out"]
    m = p4runtime_pb2.StreamMessageRequest()
    m.packet.payload = PAYLOAD
    m.packet.metadata.add(
        metadata_id=md["egress_port"], value=bytes([CPU_PORT])
    )  # back as a PacketIn
    m.packet.metadata.add(metadata_id=md["pad"], value=b"\x00")
    return m


def _flood_and_leave(srv: P4RuntimeServer, n: Names) -> tuple[list[threading.Thread], int, object]:
    """A primary that sends FLOOD PacketOuts, never reads, then cancels. Returns its
    stream threads left 3 s after the cancel, the PacketOuts handled before it, and the
    server's stream."""
    before = set(threading.enumerate())
    channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    out: queue.Queue = queue.Queue()
    out.put(_arbitration(5))
    call = stub.StreamChannel(iter(out.get, None))  # its answers are never read
    deadline = time.monotonic() + 5
    while not any(r.primary for r in srv._roles.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    msg = _packet_out(n)
    for _ in range(FLOOD):
        out.put(msg)
    last, still = -1, time.monotonic()
    while time.monotonic() - still < 1.0 and time.monotonic() < deadline + 30:
        time.sleep(0.1)
        if srv.packet_out_count != last:
            last, still = srv.packet_out_count, time.monotonic()
    (stream,) = [s for r in srv._roles.values() for s in r.streams]
    assert 0 <= stream.room._value <= stream.REQUESTS  # type: ignore[attr-defined]
    assert stream.pending <= srv.packet_in_queue
    handled = srv.packet_out_count
    call.cancel()
    out.put(None)
    channel.close()
    deadline = time.monotonic() + 3  # the stream's threads end and its call is freed
    while (_stream_threads(before) or srv._open_streams) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _stream_threads(before), handled, stream


def _served(srv: P4RuntimeServer, n: Names) -> bool:
    """A new controller (higher election id) gets a PacketIn for its PacketOut."""
    channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    out: queue.Queue = queue.Queue()
    out.put(_arbitration(9))
    out.put(_packet_out(n))
    # a deadline: a server that never makes it primary (or never answers) fails the test, not hangs it
    call = stub.StreamChannel(iter(out.get, None), timeout=30)
    try:
        for resp in call:
            if resp.WhichOneof("update") == "packet":
                return resp.packet.payload == PAYLOAD
    except grpc.RpcError:
        return False
    finally:
        out.put(None)
        call.cancel()
        channel.close()
    return False


def _server(frontend: str | None = None, mode: str = "") -> tuple[P4RuntimeServer, Names]:
    """`mode`: the front end's stream loop, "reader" (grpc-python: the reader + response
    threads) or "react" (native: _stream_react); named in the test ids, checked here."""
    ports = PortSet()
    ports.add_inprocess(1)
    srv = P4RuntimeServer(
        device_id=1, cpu_port=CPU_PORT, ports=ports, packet_in_queue=32, frontend=frontend
    )
    assert mode in ("", {"grpc": "reader", "native": "react"}[srv.frontend])
    srv.start("127.0.0.1:0")
    srv.load_program(str(L2_PROGRAM))
    return srv, Names(srv.pipeline.p4info)  # type: ignore[union-attr]


@pytest.mark.parametrize(("frontend", "mode"), PATHS)
def test_a_flooding_client_that_never_reads_holds_up_only_itself(frontend: str, mode: str) -> None:
    srv, n = _server(frontend, mode)
    try:
        left, handled, _ = _flood_and_leave(srv, n)
        assert handled < FLOOD  # flow control held the rest: nothing queued without bound
        assert left == []
        assert srv._open_streams == 0
        assert _served(srv, n)
    finally:
        srv.stop(grace=0)


def test_negative_control_a_reader_that_ignores_the_close_hangs(monkeypatch) -> None:
    def stubborn(self, stream, request_iterator) -> None:  # planted: waits for room forever
        try:
            for req in request_iterator:
                stream.room.acquire()
                if stream.closed.is_set():
                    return
                stream.out.put(stream_mod._Request(req))
        except grpc.RpcError:
            pass

    monkeypatch.setattr(P4RuntimeServer, "_stream_reader", stubborn)
    srv, n = _server("grpc", "reader")
    try:
        left, _, stream = _flood_and_leave(srv, n)
        assert len(left) == 1
        stream.closed.set()
        for _ in range(
            stream.REQUESTS
        ):  # let the planted reader run into the cancelled call and end
            stream.room.release()
    finally:
        srv.stop(grace=0)
