"""The native (grpc++) front end of the P4Runtime server: the fast profile's (p4sim.profile);
grpc-python is the reference.

`serve(handler, ...)` runs a grpc++ server (frontend.cc, built on first use) whose
generic service hands every call to Python worker threads. Each call is served by the
same grpc.GenericRpcHandler the grpc-python server uses (P4RuntimeServer._handlers():
its methods, request deserializers and response serializers) through `_Context`, which
implements what the servicer uses of grpc.ServicerContext. Statuses follow
grpc-python's: abort's code and message, "Method not found!" (UNIMPLEMENTED), "Exception
calling application: ..." (UNKNOWN), "Concurrent RPC limit exceeded!"
(RESOURCE_EXHAUSTED, answered in C++ past `max_concurrent` calls).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import grpc

from p4sim.server.native.build import NativeUnavailable, load, unavailable_reason

__all__ = ["NativeServer", "NativeUnavailable", "Tls", "load", "serve", "unavailable_reason"]

log = logging.getLogger("p4sim.server.native")

_OK = grpc.StatusCode.OK.value[0]
_UNKNOWN = grpc.StatusCode.UNKNOWN.value[0]
_INTERNAL = grpc.StatusCode.INTERNAL.value[0]
_UNIMPLEMENTED = grpc.StatusCode.UNIMPLEMENTED.value[0]
_CANCELLED = grpc.StatusCode.CANCELLED.value[0]

_Metadatum = collections.namedtuple("_Metadatum", ("key", "value"))


class Tls(NamedTuple):
    """TLS for the native front end, as PEM text (grpc.ServerCredentials are opaque)."""

    key: str
    cert: str
    ca: str | None = None
    client_auth: bool = False


class _Aborted(Exception):
    """What `_Context.abort` raises (grpc-python raises a bare Exception)."""


class _Details(NamedTuple):  # grpc.HandlerCallDetails
    method: str
    invocation_metadata: tuple


class _Context:
    """What the servicer uses of grpc.ServicerContext, over one native call."""

    def __init__(self, call: Any) -> None:
        self._call = call
        self.code: grpc.StatusCode | None = None
        self.details = ""
        self.trailers: tuple = ()
        self._callbacks: list[Callable[[], None]] | None = []
        self._lock = threading.Lock()

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        if code == grpc.StatusCode.OK:  # as grpc-python: aborting with OK is an error
            log.error("abort() called with StatusCode.OK; returning UNKNOWN")
            code, details = grpc.StatusCode.UNKNOWN, ""
        self.code, self.details = code, details
        raise _Aborted(details)

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def set_trailing_metadata(self, metadata: Any) -> None:
        self.trailers = tuple(
            (k, v if isinstance(v, bytes) else str(v).encode()) for k, v in metadata
        )

    def is_active(self) -> bool:
        return self._call.is_active()

    def add_callback(self, callback: Callable[[], None]) -> bool:
        with self._lock:
            if self._callbacks is None:
                return False
            self._callbacks.append(callback)
            return True

    def invocation_metadata(self) -> tuple:
        return tuple(_Metadatum(k, v) for k, v in self._call.metadata)

    def peer(self) -> str:
        return self._call.peer

    def time_remaining(self) -> float | None:
        return None  # the native call does not carry the client's deadline

    def run_callbacks(self) -> None:
        with self._lock:
            callbacks, self._callbacks = self._callbacks or [], None
        for cb in callbacks:
            try:
                cb()
            except Exception:
                log.exception("RPC termination callback failed")

    def status(self) -> tuple[int, str]:
        code = self.code or grpc.StatusCode.OK
        return code.value[0], self.details if code != grpc.StatusCode.OK else ""


class NativeServer:
    """A running native front end: `port`, `stop(grace)`, `wait_for_termination()`."""

    def __init__(
        self,
        handler: grpc.GenericRpcHandler,
        address: str,
        max_message: int,
        max_concurrent: int,
        tls: Tls | None = None,
    ) -> None:
        mod = load()
        args: tuple = (address, max_message, max_concurrent)
        if tls is not None:
            args += (tls.key, tls.cert, tls.ca, tls.client_auth)
        self._handler = handler
        self._server = mod.Server(*args)
        self.port: int = self._server.port
        self._running: dict[int, _Context] = {}
        self._stopped = threading.Event()
        # one worker per admitted call: a call past max_concurrent never reaches Python
        self._threads = [
            threading.Thread(target=self._work, name=f"p4rt-native-{i}", daemon=True)
            for i in range(max_concurrent)
        ]
        self._threads.append(
            threading.Thread(target=self._reap, name="p4rt-native-cancel", daemon=True)
        )
        for t in self._threads:
            t.start()

    # -- lifecycle (what P4RuntimeServer uses of grpc.Server)

    def stop(self, grace: float | None) -> threading.Event:
        self._server.stop(float(grace or 0))
        for t in self._threads:
            t.join(timeout=2)
        self._stopped.set()
        return self._stopped

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    # -- calls

    def _work(self) -> None:
        accept = self._server.accept
        while (call := accept()) is not None:
            ctx = _Context(call)
            self._running[call.id] = ctx
            try:
                self._serve(call, ctx)
            except Exception:  # the adapter's own bug: the call still ends, the worker lives
                log.exception("native front end: serving %s failed", call.method)
                call.finish(_INTERNAL, "p4sim native front end error", ())
            finally:
                self._running.pop(call.id, None)
                ctx.run_callbacks()

    def _reap(self) -> None:
        """Run the termination callbacks of calls their client cancelled, at once."""
        while (call := self._server.next_cancelled()) is not None:
            ctx = self._running.get(call.id)
            if ctx is not None:
                ctx.run_callbacks()

    def _serve(self, call: Any, ctx: _Context) -> None:
        h = self._handler.service(_Details(call.method, ctx.invocation_metadata()))
        if h is None:
            call.finish(_UNIMPLEMENTED, "Method not found!", ())
            return
        deser = h.request_deserializer
        if h.request_streaming:
            requests: Any = _Requests(call, deser)
            fn = h.stream_stream if h.response_streaming else h.stream_unary
        else:
            data = call.read()
            if data is None:  # cancelled, or a client that half-closed without a request
                call.finish(
                    _CANCELLED if not call.is_active() else _INTERNAL, "no request message", ()
                )
                return
            try:
                requests = deser(data) if deser is not None else data
            except Exception:
                call.finish(_INTERNAL, "Exception deserializing request!", ())
                return
            fn = h.unary_stream if h.response_streaming else h.unary_unary
        ser = h.response_serializer
        if h.response_streaming:
            self._stream(call, ctx, fn, requests, ser)
            return
        try:
            resp = fn(requests, ctx)
        except Exception as exc:
            self._failed(call, ctx, exc, "Exception calling application")
            return
        code, details = ctx.status()
        if code == _OK:
            try:
                data = ser(resp) if ser is not None else resp
            except Exception:
                call.finish(_INTERNAL, "Failed to serialize response!", ctx.trailers)
                return
            call.write(data)
        call.finish(code, details, ctx.trailers)

    def _stream(self, call: Any, ctx: _Context, fn: Any, requests: Any, ser: Any) -> None:
        responses: Iterator[Any] = fn(requests, ctx)
        write, write_many = call.write, call.write_many
        try:
            for resp in responses:
                if type(resp) is list:  # serialized responses, in order (_Requests)
                    if not write_many(resp):
                        return
                elif not write(ser(resp) if ser is not None else resp):
                    return  # the call is over (client gone): close the handler's generator
        except Exception as exc:
            self._failed(call, ctx, exc, "Exception iterating responses")
            return
        finally:
            close = getattr(responses, "close", None)
            if close is not None:
                close()
        code, details = ctx.status()
        call.finish(code, details, ctx.trailers)

    @staticmethod
    def _failed(call: Any, ctx: _Context, exc: Exception, what: str) -> None:
        if ctx.code is not None:
            code, details = ctx.status()
            call.finish(code, details, ctx.trailers)
            return
        if not isinstance(exc, _Aborted):
            log.exception("%s", what)
        call.finish(_UNKNOWN, f"{what}: {exc}", ctx.trailers)


class _Requests:
    """A native call's request iterator (each request deserialized, as grpc-python's).

    A stream handler may instead serve the call in gRPC's read reaction
    (StreamService._stream_react): `react(fn)`, with its answers queued by
    `push(data, kind, limit)` (bounded per kind, `count(kind)`); its own thread then
    `take()`s everything waiting in one call (objects it `post`ed from any thread, then
    None at the end). `deserialize` turns request bytes into a request; a response a
    handler yields may be a list of serialized responses (Call.write_many)."""

    __slots__ = ("_read", "deserialize", "take", "post", "take_ready", "react", "push", "count")

    def __init__(self, call: Any, deser: Any) -> None:
        self._read = call.read
        self.deserialize = deser if deser is not None else _same
        self.take = call.take
        self.post = call.post
        self.take_ready = call.take_ready
        self.react = call.react
        self.push = call.push
        self.count = call.count

    def __iter__(self) -> _Requests:
        return self

    def __next__(self) -> Any:
        data = self._read()
        if data is None:
            raise StopIteration
        return self.deserialize(data)


def _same(data: bytes) -> bytes:
    return data


def serve(
    handler: grpc.GenericRpcHandler,
    address: str,
    max_message: int,
    max_concurrent: int,
    tls: Tls | None = None,
) -> NativeServer:
    """Start the native front end on `address` with `handler` (OSError if it cannot listen,
    NativeUnavailable if it cannot be built)."""
    return NativeServer(handler, address, max_message, max_concurrent, tls)
