"""Call.react(fn): a stream's requests handled in gRPC's own read reaction (the GIL taken
there, the response write started there), not by a woken Python thread. What it must keep:
every request handled once and in order, also those read before react() was called and
those read while react() still handles them (they wait behind; negative control: a build
whose read reacts at once answers them first); the write window bounds what a client that
does not read can make the server hold; a failing fn ends the call INTERNAL and the server
stays up; stop() while a reaction runs returns."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import grpc
import p4rt_helpers
import pytest

from p4sim.server import native

pytestmark = pytest.mark.skipif(
    bool(native.unavailable_reason()), reason=f"native front end: {native.unavailable_reason()}"
)


def _serve(
    fn: Callable[[bytes], list[bytes]], before: Callable[[], None] = lambda: None, module=None
) -> tuple:
    """A raw native server (of `module`, default the front end's) whose every call is
    reacted to with fn; `before` runs in the call's thread before react() (requests pile up
    in the read-ahead meanwhile)."""
    srv = (module or native.load()).Server("127.0.0.1:0", 4 << 20, 4)
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
    return srv, p4rt_helpers.channel(f"127.0.0.1:{srv.port}"), calls


def _stream(ch: grpc.Channel, reqs: Iterator[bytes], timeout: float = 30) -> object:
    return ch.stream_stream("/t.T/S", request_serializer=None, response_deserializer=None)(
        reqs, timeout=timeout
    )


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


def _late_requests_order(module=None) -> list[bytes]:
    """react() handles 10 requests read before it, 50 ms each (the GIL given up meanwhile);
    requests arriving while it does must wait behind them, not be reacted to at once by the
    gRPC thread that read them. Returns the answers, in the order they came."""

    def fn(b: bytes) -> list[bytes]:
        if b.startswith(b"slow"):
            time.sleep(0.05)
        return [b]

    def reqs() -> Iterator[bytes]:
        yield from (b"slow-%d" % i for i in range(10))
        time.sleep(0.45)  # the call's thread slept 0.3 s before react(): it is at about slow-3
        yield from (b"late-%d" % i for i in range(5))

    srv, ch, _ = _serve(fn, before=lambda: time.sleep(0.3), module=module)
    try:
        return [bytes(r) for r in _stream(ch, reqs())]
    finally:
        ch.close()
        srv.stop(0)


def test_requests_read_while_react_handles_earlier_ones_wait_behind_them() -> None:
    assert _late_requests_order() == [b"slow-%d" % i for i in range(10)] + [
        b"late-%d" % i for i in range(5)
    ]


def test_negative_control_a_read_that_reacts_while_react_still_handles_earlier_ones() -> None:
    from p4sim.server.native import build

    sources = build.sources()
    old = "react = ok && st_->react_fn != nullptr && !st_->reacting;"
    assert sources["transport.h"].count(old) == 1
    planted = build.load_variant(
        {
            **sources,
            "transport.h": sources["transport.h"].replace(
                old, "react = ok && st_->react_fn != nullptr;"
            ),
        }
    )
    got = _late_requests_order(planted)
    assert sorted(got) == sorted(
        [b"slow-%d" % i for i in range(10)] + [b"late-%d" % i for i in range(5)]
    )
    assert got.index(b"late-0") < got.index(b"slow-9")  # answered ahead of earlier requests


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
