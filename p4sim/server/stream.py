"""StreamChannel: one stream's queue and bounds (_Stream; _ReactStream on the native front
end), and the loop that serves it: grpc-python's reader + response threads
(_stream_channel), or the native front end's read reaction (_stream_react). Arbitration
(arbitration.py) and PacketOut/PacketIn/digests (packet_io.py) are what its messages do."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from p4rtproto import p4runtime_pb2
from p4rtproto.errors import invalid
from p4sim.server.wire import _error_of, _lenient, _Malformed, _rpc_code, _status_code

log = logging.getLogger("p4sim.server")


class _Abort:
    def __init__(self, code: str, message: str) -> None:
        self.code, self.message = code, message


class _Stream:
    """One StreamChannel: its outgoing queue and arbitration state.

    PacketIns, digests and per-message StreamErrors wait in the queue at most
    `packet_limit` at a time: a client that does not read its stream loses the surplus
    (counted in `dropped`), it does not grow the server. Arbitration answers are not
    dropped (each says who is primary now), so a stream that leaves CONTROL_LIMIT of
    them unread (another controller flipping the primary over and over) is ended with
    RESOURCE_EXHAUSTED instead of growing; the end always goes in. Requests the reader hands to the response
    thread share the queue, at most REQUESTS at a time (`room`); `closed` tells a reader
    waiting for room that the response thread is gone."""

    REQUESTS = 64  # requests handed to the response thread and not yet handled
    CONTROL_LIMIT = 1024  # arbitration answers queued and not yet taken by the response loop

    def __init__(self, packet_limit: int = 1024, put: Callable[[Any], Any] | None = None) -> None:
        self.out: queue.SimpleQueue[Any] = queue.SimpleQueue()  # C: no Condition per put/get
        # where answers go: the queue, or (native front end, _ReactStream's end) the call's post()
        self.put = put or self.out.put
        self.room = threading.Semaphore(self.REQUESTS)
        self.closed = threading.Event()
        self.arbitrated = False
        self.election_id: int | None = None
        self.role = ""
        self.packet_limit = packet_limit
        self.pending = 0  # PacketIns/digests queued, not yet handed to gRPC
        self.dropped = 0
        self.control = 0  # arbitration answers queued, not yet taken (send_control)
        self.overflowed = False
        self._count = threading.Lock()

    def send(self, msg: Any) -> None:
        self.put(msg)

    def send_control(self, msg: Any) -> None:
        """Queue an arbitration answer; past CONTROL_LIMIT unread ones, end the stream."""
        with self._count:
            if self.overflowed:
                return
            if self.control >= self.CONTROL_LIMIT:
                self.overflowed = True
                msg = _Abort(
                    "RESOURCE_EXHAUSTED",
                    f"the stream left {self.CONTROL_LIMIT} arbitration updates unread: closed",
                )
            else:
                self.control += 1
        self.put(msg)

    def control_taken(self) -> None:
        with self._count:
            self.control -= 1

    def send_packet(self, msg: Any) -> bool:
        """Queue a PacketIn or digest; False (and counted) when the queue is full."""
        with self._count:
            if self.pending >= self.packet_limit:
                self.dropped += 1
                return False
            self.pending += 1
        self.put(_Packet(msg))
        return True

    def taken(self, n: int = 1) -> None:
        with self._count:
            self.pending -= n


_OTHER, _PACKET, _CONTROL = 0, 1, 2  # Call.push's kinds: each bounded on its own


class _ReactStream(_Stream):
    """A StreamChannel served in the native front end's read reaction (_stream_react): its
    answers go straight into the call's write queue (Call.push) from whichever thread sends
    them, in the order sent, where the front end counts them per kind until it hands them
    to gRPC: `pending` PacketIns/digests/errors (past `packet_limit`: dropped, counted in
    `dropped`) and `control` arbitration answers (past CONTROL_LIMIT: the stream ends with
    RESOURCE_EXHAUSTED), as _Stream's queue holds them. The end (None, an _Abort, or the
    exception a request raised) is posted to the call's thread, which ends the stream;
    `ended` (set under `serving`, which each reaction holds) stops further requests being
    handled and further answers being queued."""

    def __init__(self, packet_limit: int, call: Any) -> None:
        super().__init__(packet_limit, call.post)
        self._push, self._count_of = call.push, call.count
        self.serving = threading.Lock()
        self.ended = False

    # the front end counts them (these setters only take _Stream.__init__'s zeros)
    pending = property(lambda self: self._count_of(_PACKET), lambda self, _: None)
    control = property(lambda self: self._count_of(_CONTROL), lambda self, _: None)

    def end(self, item: Any) -> None:
        self.ended = True
        self.put(item)

    def send(self, msg: Any) -> None:
        if msg is None:
            self.put(None)
        elif not self.ended:
            self._push(
                msg if type(msg) is bytes else msg.SerializeToString(), _OTHER, self.packet_limit
            )

    def send_control(self, msg: Any) -> None:
        with self._count:
            if self.overflowed or self.ended:
                return
            if self._push(
                msg if type(msg) is bytes else msg.SerializeToString(), _CONTROL, self.CONTROL_LIMIT
            ):
                return  # queued (or the call is over: it goes with it)
            self.overflowed = True
        self.end(
            _Abort(
                "RESOURCE_EXHAUSTED",
                f"the stream left {self.CONTROL_LIMIT} arbitration updates unread: closed",
            )
        )

    def send_packet(self, msg: Any) -> bool:
        if self.ended or self._push(
            msg if type(msg) is bytes else msg.SerializeToString(), _PACKET, self.packet_limit
        ):
            return True  # queued (or the stream is over: it goes with it, as _Stream's queue)
        with self._count:
            self.dropped += 1
        return False

    def taken(self, n: int = 1) -> None:
        pass  # the front end counts

    def control_taken(self) -> None:
        pass


class _Request:
    """A StreamMessageRequest handed from the reader thread to the response thread."""

    __slots__ = ("msg",)

    def __init__(self, msg: Any) -> None:
        self.msg = msg


# the reader's mark for the client's half-close: every request is handled by the time the
# response loop takes it, but their answers were queued behind it, so it queues the end
# (None) again behind them (the end straight from the reader dropped the last requests'
# answers, even the arbitration answer of a stream that half-closed at once)
_REQUESTS_DONE = _Request(None)


class _Packet:
    __slots__ = ("msg",)

    def __init__(self, msg: Any) -> None:
        self.msg = msg


class _StreamAbort(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


_parse_stream_request = _lenient(p4runtime_pb2.StreamMessageRequest)


class StreamService:
    """The StreamChannel RPC of P4RuntimeServer (its state lives in the server)."""

    def StreamChannel(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> Iterator[Any]:
        with self._lock:
            if self._open_streams >= self.max_streams:
                full = True
            else:
                full = False
                self._open_streams += 1
        if full:
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"p4sim-switch serves at most {self.max_streams} StreamChannels at a time",
            )
        try:
            yield from self._stream_channel(request_iterator, context)
        finally:
            with self._lock:
                self._open_streams -= 1

    def _stream_channel(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> Iterator[Any]:
        """The response thread handles the stream's messages, in order, between the answers
        it sends; the reader thread only takes requests off gRPC and hands them over, at
        most `stream.REQUESTS` at a time. With the pipeline run by the reader instead, the
        two threads fought over the GIL: this costs about 0.75x the server CPU per
        PacketOut -> PacketIn round trip at 32 in flight (`bench p4runtime --against`,
        A/B in one run). A client that does not read its answers stops its
        own requests being handled (gRPC flow control then holds them), never the server.
        On the native front end gRPC's read reaction handles each request (_stream_react)."""
        if hasattr(request_iterator, "react"):
            self._stream_react(request_iterator, context)
            return
        stream = _Stream(self.packet_in_queue)
        context.add_callback(lambda: stream.send(None))
        reader = threading.Thread(
            target=self._stream_reader,
            args=(stream, request_iterator),
            daemon=True,
            name="p4rt-stream",
        )
        reader.start()
        stopping = False  # a request ended the stream: its _Abort is queued
        try:
            while True:
                item = stream.out.get()
                if item is None:
                    return
                if type(item) is _Request:
                    if item is _REQUESTS_DONE:
                        stream.send(None)
                        continue
                    stream.room.release()
                    if stopping:
                        continue  # after the stream's end: not handled
                    stop = self._stream_request(stream, item.msg)
                    if stop is not None:  # the end goes behind the answers already queued
                        stopping = True
                        stream.put(stop)
                    continue
                if isinstance(item, _Packet):
                    stream.taken()
                    item = item.msg
                elif isinstance(item, _Abort):
                    context.abort(_status_code(item.code), item.message)
                    return
                else:
                    stream.control_taken()
                yield item if isinstance(item, bytes) else item.SerializeToString()
        finally:
            stream.closed.set()  # a reader waiting for room gives up
            self._drop_stream(stream)

    def _stream_react(self, requests: Any, context: grpc.ServicerContext) -> None:
        """_stream_channel's work done in the native front end's read reaction (Call.react):
        the gRPC thread whose read completed takes the GIL and handles the request, and its
        answers, as every answer other threads send the stream, are queued for writing as
        they are sent (_ReactStream), so no Python thread is woken per message. This thread
        starts the writes of answers sent outside a reaction (inside take()) and ends the
        stream: at the client's half-close or cancel (None), an _Abort (a request's, or the
        arbitration bound's), or a request's exception (raised here: UNKNOWN, as from
        a loop). Same order, messages and bounds as the loop: a reaction is started
        only after the previous one is over, and once the write queue holds the front end's
        window, or an answer was refused by its bound, the next read waits until the client
        reads (flow control holds its requests). One difference: `packet_limit` counts the
        PacketIns queued until gRPC takes them, where the loops' queue also had the front
        end's write window (64) behind it: a client that does not read holds fewer."""
        stream = _ReactStream(self.packet_in_queue, requests)
        context.add_callback(lambda: stream.send(None))
        try:
            requests.react(self._reaction(stream))
            take = requests.take
            while True:
                for item in take():
                    if item is None:
                        return
                    if isinstance(item, _Abort):
                        context.abort(_status_code(item.code), item.message)
                        return
                    if isinstance(item, BaseException):
                        raise item
        finally:
            with (
                stream.serving
            ):  # a reaction still running finishes first; none handles anything after
                stream.ended = True
            requests.react(None)  # the call held the reaction, which holds the call (via stream)
            self._drop_stream(stream)

    def _reaction(self, stream: _ReactStream) -> Callable[[bytes], None]:
        """_stream_react's fn: one request handled in the gRPC thread that read it."""
        handle, serving = self._stream_request, stream.serving

        def react(data: bytes) -> None:
            with serving:
                if stream.ended:
                    return  # after the end: not handled (the loops handle nothing after it)
                try:
                    stop: Any = handle(stream, data)
                except Exception as exc:  # the server lives; the call's thread ends the stream
                    stop = exc
                if stop is not None:
                    stream.end(stop)

        return react

    def _stream_reader(self, stream: _Stream, request_iterator: Iterator[Any]) -> None:
        room, closed = stream.room, stream.closed
        try:
            for req in request_iterator:
                while not room.acquire(timeout=0.1):
                    if closed.is_set():
                        return
                if closed.is_set():
                    return
                stream.out.put(_Request(req))
        except grpc.RpcError:
            pass  # the client went away
        except Exception:
            log.exception("stream reader failed")
        stream.out.put(_REQUESTS_DONE)  # the end, once the answers already queued went

    def _stream_request(self, stream: _Stream, data: bytes) -> _Abort | None:
        """Handle one StreamMessageRequest's bytes; an _Abort ends the stream with its status."""
        if stream.arbitrated and self._packet_out_fast(stream, data):
            return None
        return self._stream_message(stream, _parse_stream_request(data), data)

    def _stream_message(
        self, stream: _Stream, req: Any, data: bytes | None = None
    ) -> _Abort | None:
        """Handle one StreamMessageRequest (`data`: its bytes); an _Abort ends the stream with its status."""
        try:
            if isinstance(req, _Malformed):
                raise invalid(
                    "malformed StreamMessageRequest (bad bytes or a string that is not UTF-8)"
                )
            which = req.WhichOneof("update")
            if which == "arbitration":
                self._arbitrate(stream, req.arbitration)
            elif not stream.arbitrated:
                return _Abort(
                    "FAILED_PRECONDITION", "the first message on a stream must be arbitration"
                )
            elif which == "packet":
                self._packet_out(stream, req.packet, data)
            elif which == "digest_ack":
                self._digest_ack(req.digest_ack)
            else:
                self._stream_error(
                    stream, "UNIMPLEMENTED", f"p4sim does not handle stream message {which}"
                )
        except _StreamAbort as exc:
            return _Abort(exc.code, exc.message)
        except Exception as exc:
            err = _error_of(exc)
            self._stream_error(stream, err.code, err.message)
        return None

    def _stream_error(self, stream: _Stream, code: str, message: str, packet: Any = None) -> None:
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.error.canonical_code = _rpc_code(code)
        msg.error.message = message
        if packet is not None:  # the offending PacketOut
            msg.error.packet_out.packet_out.CopyFrom(packet)
        stream.send_packet(msg)  # one per bad message: bounded like PacketIns
