"""StreamChannel in the native front end's read reaction (_stream_react, the native
default): what is new against the loops it replaces. Answers other threads send (a port's
PacketIn) reach a stream that sends nothing (no request comes to start their write); a
stream's own answers and those sent to it from elsewhere keep the order they were sent in;
a client that does not read its answers holds up its own requests and leaves at most
`packet_in_queue` PacketIns queued; nothing after a stream's end is handled; a request
that raises ends only its stream, UNKNOWN as from the loops.

Negative controls, each a plausible slip the same check must catch: planted in the front
end's C++ (built at -O0 and served for the one test), a push() that does not wake the
call's thread and a read that is not held after a refused push; planted in Python, a
PacketIn queue pushed without its bound, a reaction that ignores the end, a reaction that
lets a request's exception out to the front end."""

from __future__ import annotations

import gc
import queue
import threading
import time

import grpc
import p4rt_helpers
import pytest
import test_stream_handoff
from p4rt_helpers import CPU_PORT
from test_stream_handoff import FLOOD, NATIVE, _arbitration, _flood_and_leave, _packet_out, _server

from p4rtproto import p4runtime_pb2, p4runtime_pb2_grpc
from p4sim.server import P4RuntimeServer, native
from p4sim.server import stream as stream_mod
from p4sim.server import wire as wire_mod
from p4sim.server.native import build

pytestmark = NATIVE
SOURCES = build.sources()


def _plant(monkeypatch, old: str, new: str) -> None:
    """Serve this test's native servers with the front end's sources where `old` became `new`."""
    where = [name for name, text in SOURCES.items() if old in text]
    assert len(where) == 1 and SOURCES[where[0]].count(old) == 1, old
    planted = {**SOURCES, where[0]: SOURCES[where[0]].replace(old, new)}
    monkeypatch.setattr(build, "_loaded", build.load_variant(planted))


class _Client:
    """A StreamChannel whose answers a thread collects (`got`), requests sent with put()."""

    def __init__(self, srv: P4RuntimeServer, election: int = 5) -> None:
        self.channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
        self.out: queue.Queue = queue.Queue()
        self.got: queue.Queue = queue.Queue()
        self.call = p4runtime_pb2_grpc.P4RuntimeStub(self.channel).StreamChannel(
            iter(self.out.get, None)
        )
        self.out.put(_arbitration(election))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for msg in self.call:
                self.got.put(msg)
        except grpc.RpcError as exc:
            self.got.put(exc)
        else:
            self.got.put(None)

    def put(self, msg) -> None:
        self.out.put(msg)

    def next(self, timeout: float = 5.0):
        return self.got.get(timeout=timeout)

    def close(self) -> None:
        self.out.put(None)
        self.call.cancel()
        self.channel.close()


def _inject_packet_in(srv: P4RuntimeServer, n, payload: bytes) -> None:
    """A frame the pipeline sends to the CPU port, injected from this (not a stream's) thread:
    as a port's packet, its PacketIn is sent to the primary from outside any reaction."""
    md = n.metadata["packet_out"]
    p = srv.pipeline
    header = srv._packet_out_header(
        p, ((md["egress_port"], bytes([CPU_PORT])), (md["pad"], b"\x00"))
    )
    srv.inject(CPU_PORT, header + payload)


def _primary(srv: P4RuntimeServer, n) -> _Client:
    c = _Client(srv)
    assert c.next().arbitration.status.code == 0
    return c


# ------------------------------------------------------------------ async answers, idle stream


def _idle_packet_ins(srv: P4RuntimeServer, n, k: int = 5, wait: float = 5.0) -> list[bytes]:
    c = _primary(srv, n)
    time.sleep(0.3)  # the arbitration answer's write is over (its completion would write them)
    try:
        for i in range(k):
            _inject_packet_in(srv, n, b"async-%d" % i)
        got = []
        deadline = time.monotonic() + wait
        while len(got) < k and time.monotonic() < deadline:
            try:
                got.append(c.next(timeout=0.2).packet.payload)
            except queue.Empty:
                pass
        return got
    finally:
        c.close()


def test_packet_ins_from_other_threads_reach_an_idle_stream() -> None:
    srv, n = _server("native", "react")
    try:
        assert _idle_packet_ins(srv, n) == [b"async-%d" % i for i in range(5)]
    finally:
        srv.stop(grace=0)


def test_negative_control_a_push_that_does_not_wake_the_call_thread(monkeypatch) -> None:
    _plant(monkeypatch, "      if (!st.writing && !st.reacting) st.take_cv.notify_all();\n", "")
    srv, n = _server("native", "react")
    try:
        assert _idle_packet_ins(srv, n, wait=1.5) == []  # queued, never written
    finally:
        srv.stop(grace=0)


# ------------------------------------------------------------------ order


def test_own_and_other_threads_answers_keep_the_order_they_were_sent_in() -> None:
    """Each round: a port's PacketIn is sent (this thread, before anything below), then the
    client's PacketOut (its PacketIn: the stream's own answer) and a malformed request (its
    StreamError). The client must see every round's port PacketIn before that round's own
    answers, its own answers in request order, and the port's in injection order."""
    srv, n = _server("native", "react")
    c = _primary(srv, n)
    rounds = 60
    try:
        for r in range(rounds):
            _inject_packet_in(srv, n, b"port-%d" % r)
            own = _packet_out(n)
            own.packet.payload = b"own-%d" % r
            c.put(own)
            bad = p4runtime_pb2.StreamMessageRequest()
            bad.packet.payload = b"bad-%d" % r  # no metadata: a StreamError, not a PacketIn
            c.put(bad)
            if r % 10 == 9:  # let the stream catch up (the PacketIn queue holds 32)
                time.sleep(0.05)
        seq = []
        while len(seq) < 3 * rounds:
            m = c.next()
            seq.append(
                m.packet.payload
                if m.WhichOneof("update") == "packet"
                else m.error.packet_out.packet_out.payload
            )
        pos = {p: i for i, p in enumerate(seq)}
        assert [p for p in seq if p.startswith(b"port")] == [b"port-%d" % r for r in range(rounds)]
        own_order = [b"%s-%d" % (k, r) for r in range(rounds) for k in (b"own", b"bad")]
        assert [p for p in seq if not p.startswith(b"port")] == own_order
        assert all(pos[b"port-%d" % r] < pos[b"own-%d" % r] for r in range(rounds))
    finally:
        c.close()
        srv.stop(grace=0)


# ------------------------------------------------------------------ bounds


def test_negative_control_a_packet_in_queue_pushed_without_its_bound(monkeypatch) -> None:
    def unbounded(self, msg) -> bool:  # planted: the limit passed is not packet_limit
        self._push(
            msg if type(msg) is bytes else msg.SerializeToString(), stream_mod._PACKET, 1 << 30
        )
        return True

    monkeypatch.setattr(stream_mod._ReactStream, "send_packet", unbounded)
    srv, n = _server("native", "react")
    try:
        with pytest.raises(AssertionError, match="pending"):
            _flood_and_leave(srv, n)  # its `stream.pending <= srv.packet_in_queue` fails
    finally:
        srv.stop(grace=0)


def test_negative_control_a_read_not_held_after_a_refused_push(monkeypatch) -> None:
    # planted: only a full write window holds the read; the 32 PacketIns the test's
    # queue holds never fill it, so the whole flood is read and handled
    _plant(monkeypatch, " && !(st.refused && !st.out.empty())", "")
    monkeypatch.setattr(test_stream_handoff, "FLOOD", FLOOD // 2)  # a shorter flood is enough
    srv, n = _server("native", "react")
    try:
        _, handled, _ = _flood_and_leave(srv, n)
        assert handled == FLOOD // 2  # what test_stream_handoff's `handled < FLOOD` refuses
    finally:
        srv.stop(grace=0)


# ------------------------------------------------------------------ the end


def _after_the_end(srv: P4RuntimeServer, n, monkeypatch) -> tuple[grpc.StatusCode, int]:
    """A stream whose first message is a PacketOut (FAILED_PRECONDITION: arbitration must
    come first), then an arbitration and 300 PacketOuts: none of them may be handled. The
    call's thread is slowed down (0.3 s) as it starts to end the stream: the reads go on
    until the call is finished, and what they read meanwhile must not be handled."""
    code_of = wire_mod._status_code

    def slow_code(code: str) -> grpc.StatusCode:
        time.sleep(0.3)
        return code_of(code)

    monkeypatch.setattr(stream_mod, "_status_code", slow_code)
    channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
    msgs = [_packet_out(n), _arbitration(7)] + [_packet_out(n)] * 300
    call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(msgs))
    try:
        with pytest.raises(grpc.RpcError) as err:
            list(call)
        time.sleep(0.5)
        return err.value.code(), srv.packet_out_count
    finally:
        channel.close()


def test_nothing_after_the_end_is_handled(monkeypatch) -> None:
    srv, n = _server("native", "react")
    try:
        assert _after_the_end(srv, n, monkeypatch) == (grpc.StatusCode.FAILED_PRECONDITION, 0)
        assert srv._open_streams == 0 and not any(r.streams for r in srv._roles.values())
    finally:
        srv.stop(grace=0)


def test_negative_control_a_reaction_that_ignores_the_end(monkeypatch) -> None:
    def heedless(self, stream):  # planted: the reaction handles whatever it reads
        def react(data: bytes) -> None:
            stop = self._stream_request(stream, data)
            if stop is not None:
                stream.end(stop)

        return react

    monkeypatch.setattr(P4RuntimeServer, "_reaction", heedless)
    srv, n = _server("native", "react")
    try:
        code, handled = _after_the_end(srv, n, monkeypatch)
        assert code == grpc.StatusCode.FAILED_PRECONDITION and handled > 0
    finally:
        srv.stop(grace=0)


def _raising(srv: P4RuntimeServer, n, monkeypatch) -> tuple[grpc.StatusCode, str]:
    def boom(self, stream, data) -> None:
        raise RuntimeError("planted failure")

    channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
    try:
        with monkeypatch.context() as mp:
            mp.setattr(P4RuntimeServer, "_stream_request", boom)
            call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter([_arbitration(3)]))
            with pytest.raises(grpc.RpcError) as err:
                list(call)
        return err.value.code(), err.value.details()
    finally:
        channel.close()


def test_a_request_that_raises_ends_its_stream_unknown_and_the_server_serves_on(
    monkeypatch,
) -> None:
    srv, n = _server("native", "react")
    try:
        code, details = _raising(srv, n, monkeypatch)
        assert code == grpc.StatusCode.UNKNOWN and "planted failure" in details  # as grpc-python
        c = _primary(srv, n)  # the next controller is served
        c.put(_packet_out(n))
        assert c.next().packet.payload == _packet_out(n).packet.payload
        c.close()
    finally:
        srv.stop(grace=0)


def test_negative_control_an_exception_let_out_to_the_front_end(monkeypatch) -> None:
    def leaky(self, stream):  # planted: the reaction does not catch
        def react(data: bytes) -> None:
            stop = self._stream_request(stream, data)
            if stop is not None:
                stream.end(stop)

        return react

    monkeypatch.setattr(P4RuntimeServer, "_reaction", leaky)
    srv, n = _server("native", "react")
    try:
        code, _ = _raising(srv, n, monkeypatch)
        assert code == grpc.StatusCode.INTERNAL  # the front end's, not the loops' UNKNOWN
    finally:
        srv.stop(grace=0)


# ------------------------------------------------------------------ cleanup


def _streams_left(srv: P4RuntimeServer, n) -> int:
    for _ in range(3):
        _primary(srv, n).close()
    deadline = time.monotonic() + 5
    while srv._open_streams and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv._open_streams == 0
    time.sleep(0.2)
    gc.collect()
    return sum(type(o) is stream_mod._ReactStream for o in gc.get_objects())


def test_an_ended_stream_is_freed() -> None:
    srv, n = _server("native", "react")
    try:
        assert _streams_left(srv, n) == 0
    finally:
        srv.stop(grace=0)


def test_negative_control_a_stream_that_keeps_its_reaction(monkeypatch) -> None:
    init = native._Requests.__init__

    def keeping(self, call, deser) -> None:  # planted: react(None) does not let fn go
        init(self, call, deser)
        react = call.react
        self.react = lambda fn: None if fn is None else react(fn)

    monkeypatch.setattr(native._Requests, "__init__", keeping)
    srv, n = _server("native", "react")
    try:
        assert _streams_left(srv, n) > 0  # the call holds fn, fn the stream, the stream the call
    finally:
        srv.stop(grace=0)
