"""Call.react(fn): a stream's requests handled in gRPC's own read reaction (the GIL taken
there, the response write started there), not by a woken Python thread. What it must keep:
every request handled once and in order, also those read before react() was called; the
write window bounds what a client that does not read can make the server hold; a failing
fn ends the call INTERNAL and the server stays up; stop() while a reaction runs returns."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest

from p4sim.server import native

pytestmark = pytest.mark.skipif(bool(native.unavailable_reason()),
                                reason=f"native front end: {native.unavailable_reason()}")


def _serve(fn: Callable[[bytes], list[bytes]], before: Callable[[], None] = lambda: None) -> tuple:
    """A raw native server whose every call is reacted to with fn; `before` runs in the
    call's thread before react() (requests pile up in the read-ahead meanwhile)."""
    srv = native.load().Server("127.0.0.1:0", 4 << 20, 4)
    calls: list = []

    def serve(call) -> None:
        calls.append(call)
        before()
        call.react(fn)
        while True:
            items = call.take()
            if items and items[-1] is None:
                break
        call.finish(0, "", ())

    def accept() -> None:
        while (call := srv.accept()) is not None:
            threading.Thread(target=serve, args=(call,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv, grpc.insecure_channel(f"127.0.0.1:{srv.port}"), calls


def _stream(ch: grpc.Channel, reqs: Iterator[bytes], timeout: float = 30) -> object:
    return ch.stream_stream("/t.T/S", request_serializer=None, response_deserializer=None)(reqs, timeout=timeout)


def test_every_request_answered_once_in_order_also_those_read_before_react() -> None:
    """Fan-out answers (one request -> 0..2 responses) come back in order; the call's
    thread waits before react(), so the first requests are handled by react() itself."""
    def fn(b: bytes) -> list[bytes]:
        n = int(b)
        return [b"%d.%d" % (n, k) for k in range(n % 3)]

    srv, ch, _ = _serve(fn, before=lambda: time.sleep(0.3))
    try:
        n = 600
        got = [bytes(r) for r in _stream(ch, iter([b"%d" % i for i in range(n)]))]
        assert got == [b"%d.%d" % (i, k) for i in range(n) for k in range(i % 3)]
        ch.close()
    finally:
        srv.stop(0)


def test_a_client_that_does_not_read_stops_its_requests_being_handled() -> None:
    """Each request makes a 64 KiB answer the client never reads: once the write window
    is full the reactions stop (the read waits), so the handled count stops growing and
    the queue stays within the window, though the client has thousands more to send."""
    handled = [0]

    def fn(b: bytes) -> list[bytes]:
        handled[0] += 1
        return [bytes(64 << 10)]

    srv, ch, calls = _serve(fn)
    window = native.load().WRITE_WINDOW
    try:
        call = _stream(ch, iter([b"x"] * 20000), timeout=60)  # never read
        deadline = time.monotonic() + 30
        last, still = -1, 0
        while time.monotonic() < deadline and still < 5:  # until it stops growing
            time.sleep(0.2)
            still = still + 1 if handled[0] == last else 0
            last = handled[0]
        assert still >= 5, handled
        assert 0 < handled[0] < 2000, handled
        assert calls[0].queued <= window
        call.cancel()
        ch.close()
    finally:
        srv.stop(0)


def test_a_failing_reaction_ends_the_call_internal_and_the_server_stays_up() -> None:
    def fn(b: bytes) -> list[bytes]:
        if b == b"boom":
            raise ValueError("planted")
        return [b] if b != b"odd" else [b, "not bytes"]  # type: ignore[list-item]

    srv, ch, _ = _serve(fn)
    try:
        for bad in (b"boom", b"odd"):
            call = _stream(ch, iter([b"a", bad, b"never"]))
            with pytest.raises(grpc.RpcError) as exc:
                list(call)
            assert exc.value.code() == grpc.StatusCode.INTERNAL
        assert [bytes(r) for r in _stream(ch, iter([b"1", b"2"]))] == [b"1", b"2"]
        ch.close()
    finally:
        srv.stop(0)


def test_stop_while_a_reaction_runs_returns_and_the_call_ends() -> None:
    inside, release = threading.Event(), threading.Event()

    def fn(b: bytes) -> list[bytes]:
        inside.set()
        release.wait(1.0)  # the GIL is released while it waits: stop() can run meanwhile
        return [b]

    srv, ch, calls = _serve(fn)
    call = _stream(ch, iter([b"a"] * 3), timeout=30)
    assert inside.wait(30)
    t0 = time.monotonic()
    srv.stop(0)
    assert time.monotonic() - t0 < 20
    release.set()
    with pytest.raises(grpc.RpcError):
        list(call)
    assert calls[0].wait_done(10)
    ch.close()
