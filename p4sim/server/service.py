"""The P4Runtime 1.4 service over grpcio, driving one p4sim switch.

Time: with `clock="virtual"` each frame (PacketOut or a frame from a port) is sent into
the switch and the switch runs until idle (queues empty) before the next one; with
`clock="wall"` a ticker thread keeps the switch's clock on the wall clock (every
`tick_s`) so rates, queueing and PFC timers happen in real time. `clock="auto"` (the
default) picks wall when real interfaces are attached, else virtual.

Errors follow the spec: a bad request gets its status code (INVALID_ARGUMENT,
NOT_FOUND, ALREADY_EXISTS, OUT_OF_RANGE, PERMISSION_DENIED, FAILED_PRECONDITION,
UNIMPLEMENTED); a Write batch with failures answers UNKNOWN with one `p4.v1.Error` per
update in the `google.rpc.Status` details (trailer `grpc-status-details-bin`). Nothing a
client sends stops the server: unexpected exceptions become INTERNAL.
"""

from __future__ import annotations

import functools
import gc
import itertools
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from p4rtproto import code_pb2, codec, errors, p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc
from p4rtproto.errors import RequestError, invalid
from p4sim import externs
from p4sim.model import P4SimError, TableEntry
from p4sim.p4info import p4info_from_model
from p4sim.runtime.ports import PortSet
from p4sim.server import fastwrite
from p4sim.server.pipeline import (
    Pipeline,
    compile_device_config,
    compile_program,
    make_device_config,
    make_pipeline,
)
from p4sim.server.sandbox import Limits

log = logging.getLogger("p4sim.server")

API_VERSION = "1.4.1"
FRONTENDS = ("grpc", "native")
MAX_MESSAGE_BYTES = 64 << 20
_SFP = p4runtime_pb2.SetForwardingPipelineConfigRequest
_GFP = p4runtime_pb2.GetForwardingPipelineConfigRequest
_UPDATE = p4runtime_pb2.Update


class _Malformed:
    """A request whose bytes did not parse. gRPC alone answers INTERNAL ("Exception
    deserializing request!") before any handler runs; P4Runtime wants INVALID_ARGUMENT."""

    def __init__(self, kind: str, exc: Exception) -> None:
        self.message = f"malformed {kind}: {exc}"


def _lenient(cls: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except (DecodeError, ValueError) as exc:  # ValueError: bad UTF-8 in a string field
            return _Malformed(cls.__name__, exc)
    return parse


class _Raw:
    """A parsed request with its bytes (Write: the fast path decodes from the bytes).
    `plan`: a WriteRequest whose updates were all cut by shape (`WriteScanner.plan`):
    (items, number of updates); `msg` then holds the other fields only."""

    __slots__ = ("msg", "data", "plan")

    def __init__(self, msg: Any, data: bytes, plan: tuple | None = None) -> None:
        self.msg, self.data, self.plan = msg, data, plan


def _lenient_raw(cls: Any, planner: Callable[[bytes], Any] | None = None) -> Callable[[bytes], Any]:
    """The request parsed, with its bytes. With `planner` (Write's fast path), a request
    whose updates all have a learned shape is not parsed whole: only its other fields are
    (a few bytes), the updates are cut from the bytes (`WriteScanner.plan`); anything
    else, malformed requests included, is parsed whole, so its answer is the reference's."""
    parse = _lenient(cls)

    def keep(data: bytes) -> Any:
        if planner is not None:
            planned = planner(data)
            if planned is not None:
                items, n, top = planned
                try:
                    return _Raw(cls.FromString(top), data, (items, n))
                except (DecodeError, ValueError):
                    pass  # parsed whole below: the reference's error
        msg = parse(data)
        return msg if isinstance(msg, _Malformed) else _Raw(msg, data)
    return keep


def _reject_malformed(fn: Any, streaming: bool = False) -> Any:
    """Wrap an RPC handler so that a _Malformed request gets INVALID_ARGUMENT."""
    if streaming:
        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            if isinstance(request, _Malformed):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
            yield from fn(request, context)
        return stream

    def unary(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, _Malformed):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
        return fn(request, context)
    return unary


_status_code = errors.grpc_code
_rpc_code = errors.rpc_code


def _error_of(exc: BaseException) -> RequestError:
    """Any exception as a RequestError (p4sim's own errors keep their code)."""
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, P4SimError):
        return RequestError(exc.code, str(exc))
    log.exception("internal error")
    return RequestError("INTERNAL", f"p4sim internal error: {type(exc).__name__}: {exc}")


def _election(msg: Any) -> int:
    return (msg.high << 64) | msg.low


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
        # where answers go: the queue, or (native front end, _stream_direct) the call's post()
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
                msg = _Abort("RESOURCE_EXHAUSTED", f"the stream left {self.CONTROL_LIMIT} arbitration "
                             "updates unread: closed")
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
            self._push(msg if type(msg) is bytes else msg.SerializeToString(), _OTHER, self.packet_limit)

    def send_control(self, msg: Any) -> None:
        with self._count:
            if self.overflowed or self.ended:
                return
            if self._push(msg if type(msg) is bytes else msg.SerializeToString(), _CONTROL, self.CONTROL_LIMIT):
                return  # queued (or the call is over: it goes with it)
            self.overflowed = True
        self.end(_Abort("RESOURCE_EXHAUSTED", f"the stream left {self.CONTROL_LIMIT} arbitration "
                        "updates unread: closed"))

    def send_packet(self, msg: Any) -> bool:
        if self.ended or self._push(msg if type(msg) is bytes else msg.SerializeToString(), _PACKET,
                                    self.packet_limit):
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


class _Role:
    def __init__(self) -> None:
        self.streams: list[_Stream] = []
        self.highest: int | None = None  # highest election id ever seen (spec: kept after the primary leaves)
        self.primary: _Stream | None = None


class P4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """A P4Runtime server for one p4sim device.

    switch_factory(compiled) -> switch: how a compiled program becomes a running switch
    (default: `p4sim.runtime.switch.Switch` with this server's cpu_port and a traffic
    manager from `tm_factory`).
    """

    def __init__(
        self,
        device_id: int = 1,
        *,
        cpu_port: int | None = None,
        ports: PortSet | None = None,
        clock: str = "auto",
        tick_s: float = 0.001,
        switch_factory: Callable[[Any], Any] | None = None,
        tm_factory: Callable[[], Any] | None = None,
        freeze_gc: bool = False,
        limits: Limits | None = None,
        max_streams: int = 16,
        packet_in_queue: int = 1024,
        fast_write: bool | None = None,
        frontend: str | None = None,
    ) -> None:
        if clock not in ("auto", "virtual", "wall"):
            raise ValueError("clock: auto, virtual or wall")
        # the gRPC front end: grpc-python (the reference) or native (grpc++, p4sim/server/native)
        self.frontend = frontend or os.environ.get("P4SIM_FRONTEND") or "grpc"
        if self.frontend not in FRONTENDS:
            raise ValueError(f"frontend {self.frontend!r}: one of {', '.join(FRONTENDS)}")
        self.device_id = device_id
        self.limits = limits or Limits()
        # each open StreamChannel holds one gRPC worker thread: cap them below the pool
        # so that unary RPCs always find a thread (surplus streams: RESOURCE_EXHAUSTED)
        self.max_streams = max_streams
        self.packet_in_queue = packet_in_queue
        self._open_streams = 0
        self.packet_in_dropped = 0
        self._compiles = threading.Semaphore(1)  # one pushed program compiles at a time
        self.cpu_port = cpu_port
        self.ports = ports if ports is not None else PortSet()
        self.clock = ("wall" if self.ports.has_interfaces else "virtual") if clock == "auto" else clock
        self.tick_s = tick_s
        # a process of its own (p4sim-switch) moves the program's objects out of the
        # collector's way after each install: writes get ~2x faster
        self.freeze_gc = freeze_gc
        self._tm_factory = tm_factory
        self._switch_factory = switch_factory or self._default_switch
        self._lock = threading.RLock()  # the switch and pipeline state are single-threaded
        self._roles: dict[str, _Role] = {}
        self.pipeline: Pipeline | None = None
        self._saved: Pipeline | None = None  # VERIFY_AND_SAVE'd, waiting for COMMIT
        self._wall_start = time.monotonic_ns()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._tick_wake = threading.Event()  # set: the clock thread ticks now (see _tick_loop)
        self._tick_idle = False  # the clock thread's last tick found the traffic manager empty
        self._grpc: grpc.Server | None = None
        self._digest_list_id = 0
        self._digest_pending: dict[tuple[int, tuple], float] = {}  # (digest id, values) -> ack deadline
        self._digest_keys_by_list: dict[int, tuple] = {}
        self.port: int | None = None
        self.packet_in_count = 0
        self.packet_out_count = 0
        # Write's fast path (fastwrite.py); False: every update decoded from the message.
        # Default on; P4SIM_FAST_WRITE=0 turns it off in a p4sim-switch (A/B runs)
        self.fast_write = fast_write if fast_write is not None else os.environ.get("P4SIM_FAST_WRITE", "1") != "0"
        self._scanner = fastwrite.WriteScanner()
        # native front end: serve each StreamChannel from its call's thread (_stream_direct);
        # P4SIM_STREAM_DIRECT=0 keeps the reader + response threads (A/B runs)
        self.stream_direct = os.environ.get("P4SIM_STREAM_DIRECT", "1") != "0"
        # ... and there, its requests handled in gRPC's read reaction (_stream_react);
        # P4SIM_STREAM_REACT=0 keeps the call's thread taking them (_stream_direct, A/B runs)
        self.stream_react = os.environ.get("P4SIM_STREAM_REACT", "1") != "0"

    # ------------------------------------------------------------ lifecycle

    def _default_switch(self, compiled: Any) -> Any:
        from p4sim.runtime import switch as switch_mod
        from p4sim.runtime.tm import TrafficManager

        tm = self._tm_factory() if self._tm_factory else TrafficManager()
        return switch_mod.Switch(compiled, cpu_port=self.cpu_port, tm=tm)

    def _handlers(self) -> grpc.GenericRpcHandler:
        """The P4Runtime service. Requests are parsed by protobuf (upb) in our own
        deserializer, so that bytes it refuses (bad framing, a string that is not UTF-8)
        answer INVALID_ARGUMENT instead of gRPC's INTERNAL; on a stream they answer a
        StreamError and the stream stays open."""
        P = p4runtime_pb2

        def unary(fn: Any, req: Any, resp: Any) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(_reject_malformed(fn), _lenient(req), resp.SerializeToString)

        def write(raw: _Raw, context: grpc.ServicerContext) -> Any:
            return self.Write(raw.msg, context, raw.data, raw.plan)

        return grpc.method_handlers_generic_handler("p4.v1.P4Runtime", {
            "Write": grpc.unary_unary_rpc_method_handler(_reject_malformed(write),
                                                         _lenient_raw(P.WriteRequest, self._plan_write),
                                                         P.WriteResponse.SerializeToString),
            "Read": grpc.unary_stream_rpc_method_handler(_reject_malformed(self.Read, streaming=True),
                                                         _lenient(P.ReadRequest), None),
            "SetForwardingPipelineConfig": unary(self.SetForwardingPipelineConfig, P.SetForwardingPipelineConfigRequest,
                                                 P.SetForwardingPipelineConfigResponse),
            "GetForwardingPipelineConfig": unary(self.GetForwardingPipelineConfig, P.GetForwardingPipelineConfigRequest,
                                                 P.GetForwardingPipelineConfigResponse),
            # request bytes: a PacketOut whose checked header is cached skips protobuf (_stream_request)
            "StreamChannel": grpc.stream_stream_rpc_method_handler(self.StreamChannel, None, None),
            "Capabilities": unary(self.Capabilities, P.CapabilitiesRequest, P.CapabilitiesResponse),
        })

    def start(self, address: str = "127.0.0.1:0", max_workers: int | None = None,
              credentials: grpc.ServerCredentials | None = None) -> int:
        """Serve on `address` ("host:port", port 0 = any free port); returns the port.

        The pool has `max_streams` threads for streams and 16 more for unary RPCs; RPCs
        beyond the pool are answered RESOURCE_EXHAUSTED by gRPC at once (never queued
        until their deadline). With `credentials` the port speaks TLS."""
        workers = max_workers or self.max_streams + 16
        if self.frontend == "native":  # same handlers, limits and pool size (credentials: native.Tls)
            from p4sim.server import native

            self._grpc = native.serve(self._handlers(), address, MAX_MESSAGE_BYTES, workers, credentials)  # type: ignore[assignment]
            port = self._grpc.port  # type: ignore[union-attr]
        else:
            self._grpc = grpc.server(
                futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
                options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                         ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)],
                maximum_concurrent_rpcs=workers,
            )
            self._grpc.add_generic_rpc_handlers((self._handlers(),))
            if credentials is not None:
                port = self._grpc.add_secure_port(address, credentials)
            else:
                port = self._grpc.add_insecure_port(address)
            if port == 0:
                raise OSError(f"cannot listen on {address}")
            self._grpc.start()
        self.port = port
        self.ports.start(self.inject, self.inject_many)
        if self.clock == "wall":
            self._ticker = threading.Thread(target=self._tick_loop, name="p4sim-clock", daemon=True)
            self._ticker.start()
        log.info("P4Runtime server for device %d on %s (clock %s)", self.device_id, address.rsplit(":", 1)[0] + f":{port}", self.clock)
        return port

    def stop(self, grace: float | None = 0.5) -> None:
        self._stop.set()
        self._tick_wake.set()
        with self._lock:
            for role in self._roles.values():
                for s in role.streams:
                    s.send(None)
        if self._grpc is not None:
            self._grpc.stop(grace).wait()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        self.ports.close()
        with self._lock:
            for p in (self.pipeline, self._saved):
                if p is not None and p.workdir is not None:
                    p.workdir.cleanup()

    def wait(self) -> None:
        if self._grpc is not None:
            self._grpc.wait_for_termination()

    def load_program(self, path: str) -> None:
        """Compile and commit a program from disk (what `p4sim-switch PROGRAM.p4` does)."""
        compiled, p4info = compile_program(path)
        pipeline = make_pipeline(compiled, p4info, None, make_device_config(path), None, self._switch_factory, None)
        with self._lock:
            self._install(pipeline)

    # ------------------------------------------------------------ packets and time

    def _wall_ns(self) -> int:
        return time.monotonic_ns() - self._wall_start

    def inject(self, port: int, frame: bytes) -> None:
        """A frame arrives on `port` (from an interface, an in-process port, or PacketOut)."""
        with self._lock:
            p = self.pipeline
            if p is None:
                return  # no program: BMv2 drops too
            sw = p.switch
            if self.clock == "wall":
                self._catch_up(sw)
                sw.send(port, frame)
                sw.advance(0)
                if self._tick_idle:
                    self._wake_ticker(sw)
            else:
                sw.send(port, frame)
                sw.run_until_idle()
            outs = sw.receive()
        self._emit(outs)

    def inject_many(self, port: int, frames: list[bytes]) -> None:
        """Frames that arrived together on `port`, in order: as `inject` of each, with the
        lock taken and (wall clock) the clock caught up once for the batch; the frames
        were all waiting already, so they enter at one instant. A frame the switch refuses
        is logged and the rest of the batch goes on, as with one `inject` per frame."""
        if self.clock != "wall":
            for frame in frames:
                try:
                    self.inject(port, frame)
                except Exception:
                    log.exception("port %d: processing a received frame failed", port)
            return
        with self._lock:
            p = self.pipeline
            if p is None:
                return
            sw = p.switch
            self._catch_up(sw)
            send = sw.send
            for frame in frames:
                try:
                    send(port, frame)
                except Exception:
                    log.exception("port %d: processing a received frame failed", port)
            sw.advance(0)
            if self._tick_idle:
                self._wake_ticker(sw)
            outs = sw.receive()
        self._emit(outs)

    def _catch_up(self, sw: Any) -> None:
        target = self._wall_ns()
        now = sw.now()
        if target > now:
            sw.advance(target - now)

    def _tick_loop(self) -> None:
        """Wall clock: every tick_s, time moves on and what the traffic manager released
        leaves. While the traffic manager holds nothing, nothing can fall due before the
        next packet arrives (and each arrival catches the clock up itself), so the thread
        then waits IDLE_TICK_S, or until an arrival leaves something queued (_wake_ticker):
        1,000 wake-ups a second cost the forwarding path a whole GIL hand-over each."""
        wake, wait = self._tick_wake, self.tick_s
        while not self._stop.is_set():
            if wake.wait(wait):
                wake.clear()
            if self._stop.is_set():
                return
            try:
                with self._lock:
                    idle = True
                    outs: list = []
                    if self.pipeline is not None:
                        sw = self.pipeline.switch
                        self._catch_up(sw)
                        outs = sw.receive()
                        idle = _tm_idle(sw)
                    self._tick_idle = idle
                self._emit(outs)
                wait = IDLE_TICK_S if idle else self.tick_s
            except Exception:
                log.exception("clock tick failed")
                wait = self.tick_s

    def _wake_ticker(self, sw: Any) -> None:
        """Under the lock, after packets went in: the clock thread, if it waits the long
        idle wait, ticks again when the traffic manager now holds something."""
        if not _tm_idle(sw):
            self._tick_idle = False
            self._tick_wake.set()

    def _emit(self, outs: list) -> None:
        # PacketIn (the CPU port) travels through the switch's on_packet_in hook
        if outs:
            self.ports.transmit_many(outs, self.cpu_port)

    def _on_packet_in_frame(self, sw: Any, payload: bytes, head: bytes) -> None:
        """A PacketIn from `sw` with its packet_in header's bytes: as _on_packet_in with
        sw.packet_in_metadata(head), the serialized metadata cached per header bytes."""
        p = self.pipeline
        if p is None:
            return
        meta = p.packet_in_heads.get(head)
        if meta is None:
            meta = self._packet_in_meta(p, sw.packet_in_metadata(head))
            if sw is p.switch:  # (a switch being replaced: not cached for the new pipeline)
                if len(p.packet_in_heads) >= p.PACKET_CACHE:
                    p.packet_in_heads.clear()
                p.packet_in_heads[head] = meta
        self.packet_in_count += 1
        self._send_primaries(packet_in_frame(meta, payload))

    def _on_packet_in(self, data: bytes, metadata: dict[str, int]) -> None:
        p = self.pipeline
        if p is None:
            return
        self.packet_in_count += 1
        self._send_primaries(packet_in_frame(self._packet_in_meta(p, metadata), data))

    @staticmethod
    def _packet_in_meta(p: Pipeline, metadata: dict[str, int]) -> bytes:
        """The serialized PacketIn metadata of a packet_in header's values (cached per values)."""
        hdr = p.maps.packet_in
        key = tuple(metadata.get(f.name) for f in hdr.fields) if hdr is not None else ()
        meta = p.packet_in_templates.get(key)
        if meta is None:  # a new metadata combination: encode its metadata once
            pin = p4runtime_pb2.PacketIn()
            for f, value in zip(hdr.fields if hdr is not None else (), key, strict=True):
                if value is not None:
                    pin.metadata.add(metadata_id=f.id, value=codec.to_bytes(value))
            meta = pin.SerializeToString()
            if len(p.packet_in_templates) >= p.PACKET_CACHE:
                p.packet_in_templates.clear()
            p.packet_in_templates[key] = meta
        return meta

    def _on_digest(self, name: str, values: dict[str, int]) -> None:
        p = self.pipeline
        if p is None:
            return
        did = p.maps.digest_ids.get(name)
        if did is None or did not in p.digest_configs:
            return  # no DigestEntry for it: the controller has not asked for it
        fields = p.maps.digest_fields.get(did, [])
        key = (did, tuple(values.get(f.name, 0) for f in fields))
        now = time.monotonic()
        deadline = self._digest_pending.get(key)
        if deadline is not None and now < deadline:
            return  # already sent, not acked yet: the spec says do not repeat it
        cfg = p.digest_configs[did]
        ack_timeout = cfg.ack_timeout_ns / 1e9 if cfg.ack_timeout_ns else 1.0
        if len(self._digest_pending) > 4096:  # forget expired ones (never acked, never seen again)
            self._digest_pending = {k: d for k, d in self._digest_pending.items() if d > now}
            self._digest_keys_by_list = {i: k for i, k in self._digest_keys_by_list.items() if k in self._digest_pending}
        self._digest_pending[key] = now + ack_timeout
        self._digest_list_id += 1
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.digest.digest_id = did
        msg.digest.list_id = self._digest_list_id
        msg.digest.timestamp = time.time_ns()
        data = msg.digest.data.add()
        for f in fields:
            data.struct.members.add(bitstring=codec.to_bytes(values.get(f.name, 0)))
        self._digest_keys_by_list[self._digest_list_id] = key
        self._send_primaries(msg)

    def _send_primaries(self, msg: Any) -> None:
        for role in self._roles.values():
            if role.primary is not None and not role.primary.send_packet(msg):
                if not self.packet_in_dropped:
                    log.warning("a controller does not read its stream: PacketIns dropped")
                self.packet_in_dropped += 1

    def _install(self, pipeline: Pipeline) -> None:
        old = self.pipeline
        self.pipeline = pipeline
        self._digest_keys_by_list = {}
        self._digest_pending = {}
        sw = pipeline.switch
        if hasattr(sw, "on_packet_in_frame"):  # p4sim's Switch: the header bytes, no dict per PacketIn
            sw.on_packet_in_frame(functools.partial(self._on_packet_in_frame, sw))
        else:
            sw.on_packet_in(self._on_packet_in)
        sw.on_digest(self._on_digest)
        if old is not None and old.workdir is not None and old is not self._saved:
            old.workdir.cleanup()
        if self.freeze_gc:
            gc.collect()
            gc.freeze()

    # ------------------------------------------------------------ helpers

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise RequestError("NOT_FOUND", f"device id {device_id} does not exist (this is device {self.device_id})")

    def _check_primary(self, request: Any) -> None:
        eid = _election(request.election_id) if request.HasField("election_id") else None
        self._check_primary_id(request.role, eid)

    def _check_primary_id(self, role_name: str, eid: int | None) -> None:
        role = self._roles.get(role_name)
        if role is None or role.primary is None:
            raise RequestError("PERMISSION_DENIED", "no primary controller: open a StreamChannel and win arbitration first")
        if eid != role.primary.election_id:
            raise RequestError("PERMISSION_DENIED", f"election id {eid} is not the primary's ({role.primary.election_id})")

    def _need_pipeline(self) -> Pipeline:
        # after VERIFY_AND_SAVE, requests refer to the saved config (spec 8.2)
        p = self._saved or self.pipeline
        if p is None:
            raise RequestError("FAILED_PRECONDITION", "no forwarding pipeline: send SetForwardingPipelineConfig first")
        return p

    @staticmethod
    def _abort(context: grpc.ServicerContext, err: RequestError) -> None:
        context.abort(_status_code(err.code), err.message)

    # ------------------------------------------------------------ RPCs

    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._set_pipeline(request, lambda: self._stop.is_set() or not context.is_active())
        except Exception as exc:
            self._abort(context, _error_of(exc))
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_pipeline(self, request: Any, cancelled: Callable[[], bool] = lambda: False) -> None:
        with self._lock:
            self._check_device(request.device_id)
            self._check_primary(request)
            action = request.action
        if action == _SFP.UNSPECIFIED:
            raise invalid("SetForwardingPipelineConfig: action is UNSPECIFIED")
        if action == _SFP.COMMIT:
            with self._lock:
                if self._saved is None:
                    raise RequestError("FAILED_PRECONDITION", "COMMIT without a config saved by VERIFY_AND_SAVE")
                saved, self._saved = self._saved, None
                self._install(saved)
            return
        if action not in (_SFP.VERIFY, _SFP.VERIFY_AND_SAVE, _SFP.VERIFY_AND_COMMIT, _SFP.RECONCILE_AND_COMMIT):
            raise invalid(f"SetForwardingPipelineConfig: unknown action {action}")
        if not request.HasField("config"):
            raise invalid("SetForwardingPipelineConfig: config is missing")
        cfg = request.config
        # compile outside the lock: packets keep flowing through the old pipeline meanwhile
        if not self._compiles.acquire(blocking=False):
            raise RequestError("RESOURCE_EXHAUSTED", "another SetForwardingPipelineConfig is compiling")
        try:
            same = self._installed_same(action, bytes(cfg.p4_device_config))
            if same is not None:
                # the program already running, pushed again (to start from a clean state, as
                # STF runs and test fixtures do): a fresh switch of the same compiled program,
                # without compiling it twice more (it holds no state; the switch does)
                compiled, workdir = same.compiled, same.workdir
                our_p4info = p4info_from_model(compiled.model)
            else:
                compiled, our_p4info, workdir = compile_device_config(cfg.p4_device_config, self.limits,
                                                                      cancelled)
        finally:
            self._compiles.release()
        cookie = cfg.cookie.cookie if cfg.HasField("cookie") else None
        try:
            pipeline = make_pipeline(compiled, our_p4info, cfg.p4info, bytes(cfg.p4_device_config), cookie,
                                     self._switch_factory, workdir)
        except BaseException:
            if same is None:  # the installed pipeline's files stay its own
                workdir.cleanup()
            raise
        if action == _SFP.VERIFY:
            workdir.cleanup()
            return
        with self._lock:
            if action == _SFP.VERIFY_AND_SAVE:
                if self._saved is not None and self._saved.workdir is not None:
                    self._saved.workdir.cleanup()
                self._saved = pipeline
                return
            if action == _SFP.RECONCILE_AND_COMMIT and self.pipeline is not None:
                self._reconcile(self.pipeline, pipeline)
            self._saved = None
            if same is not None and self.pipeline is same:
                same.workdir = None  # the new pipeline owns the compiled program's files now
            elif same is not None:  # replaced meanwhile: compile after all
                raise RequestError("ABORTED", "the pipeline changed during this push; push again")
            self._install(pipeline)

    def _installed_same(self, action: Any, device_config: bytes) -> Pipeline | None:
        """The installed pipeline when a commit pushes exactly its device config again."""
        if action not in (_SFP.VERIFY_AND_COMMIT, _SFP.RECONCILE_AND_COMMIT):
            return None
        with self._lock:
            p = self.pipeline
        return p if p is not None and p.device_config == device_config else None

    def _reconcile(self, old: Pipeline, new: Pipeline) -> None:
        """Carry the forwarding state into the new pipeline; refuse if it does not fit."""
        sw_old, sw_new = old.switch, new.switch
        try:
            for tname in old.maps.table_ids:
                if tname not in new.maps.table_ids:
                    if sw_old.table_entries(tname):
                        raise invalid(f"RECONCILE_AND_COMMIT: table {tname} has entries but is not in the new program")
                    continue
                if old.compiled.model.tables[tname].const_entries:
                    continue
                for e in sw_old.table_entries(tname):
                    sw_new.table_add(TableEntry(e.table, dict(e.match), e.action, dict(e.params), e.priority))
                action, params = sw_old.table_default(tname)
                if action and not new.compiled.model.tables[tname].const_default_action:
                    sw_new.table_set_default(tname, action, params)
            for gid, g in old.mc_groups.items():
                sw_new.mc_group_set(gid, _replicas(g))
            for sid, s in old.clone_sessions.items():
                sw_new.clone_session_set(sid, _replicas(s), s.packet_length_bytes)
        except P4SimError as exc:
            raise invalid(f"RECONCILE_AND_COMMIT: the forwarding state does not fit the new program: {exc}") from None
        new.entry_metadata.update(old.entry_metadata)
        new.mc_groups.update(old.mc_groups)
        new.clone_sessions.update(old.clone_sessions)
        new.digest_configs.update({k: v for k, v in old.digest_configs.items() if k in new.maps.digests})

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            with self._lock:
                self._check_device(request.device_id)
                p = self._need_pipeline()
                cfg = p4runtime_pb2.ForwardingPipelineConfig()
                rt = request.response_type
                if rt in (_GFP.ALL, _GFP.P4INFO_AND_COOKIE):
                    cfg.p4info.CopyFrom(p.p4info)
                if rt in (_GFP.ALL, _GFP.DEVICE_CONFIG_AND_COOKIE):
                    cfg.p4_device_config = p.device_config
                if p.cookie is not None:
                    cfg.cookie.cookie = p.cookie
                return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=cfg)
        except Exception as exc:
            self._abort(context, _error_of(exc))

    # -- Write

    def _plan_write(self, data: bytes) -> Any:
        """`WriteScanner.plan` of a request's bytes, or None (parse it whole): run by the
        deserializer, outside the lock (it reads the learned shapes only)."""
        if not self.fast_write:
            return None
        try:
            return self._scanner.plan(data)
        except Exception:  # a bug here must never change an answer: it only costs speed
            log.exception("fast write: cutting a request failed")
            return None

    def Write(self, request: Any, context: grpc.ServicerContext, data: bytes | None = None,
              plan: tuple | None = None) -> Any:
        """`data`: the bytes `request` was parsed from, when the transport has them:
        plain table-entry updates are then decoded from the bytes by shape
        (fastwrite.py), the rest from the message; both give the same PlainEntry to the
        same checks, and a learned shape is bound to the pipeline's own decoder.
        `plan`: (items, n) when every update was cut by shape (`_plan_write`); `request`
        then has the other fields only."""
        try:
            with self._lock:
                self._check_device(request.device_id)
                election = request.election_id
                self._check_primary_id(request.role, (election.high << 64) | election.low
                                       if request.HasField("election_id") else None)
                p = self._need_pipeline()
                if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                    raise RequestError("UNIMPLEMENTED", "p4sim supports only CONTINUE_ON_ERROR atomicity")
                # the batch is applied whole under the lock: a Read sees all of it or none. A
                # big batch holds the collector off until it is done: its new entries are
                # then looked at once, not once per 700 objects (~0.3 us per update)
                n = plan[1] if plan is not None else len(request.updates)
                pause = n >= self.GC_PAUSE_UPDATES and gc.isenabled()
                if pause:
                    gc.disable()
                try:
                    if plan is not None:
                        results, failed = self._write_planned(p, plan[0], n)
                    else:
                        results, failed = self._write_updates(p, request, data)
                finally:
                    if pause:
                        gc.enable()
        except Exception as exc:
            self._abort(context, _error_of(exc))
            return None
        if failed:
            self._abort_batch(context, results)
        return p4runtime_pb2.WriteResponse()

    GC_PAUSE_UPDATES = 64

    def _write_updates(self, p: Pipeline, request: Any, data: bytes | None) -> tuple[list, bool]:
        """Every update of a checked WriteRequest in order, each with its own result
        (CONTINUE_ON_ERROR): (results, whether one failed)."""
        updates = request.updates
        n = len(updates)
        results: list[RequestError | None] = [None] * n
        failed = False
        spans = fastwrite.update_spans(data) if data is not None and self.fast_write else None
        if spans is not None and len(spans) != n:
            spans = None
        scanner, learn = self._scanner, fastwrite.LEARN_PER_REQUEST
        write_plain, apply, plain = self._write_plain, self._apply_update, codec.plain_from_proto
        write_shaped = self._write_shaped
        i = -1
        while i < n - 1:
            i += 1
            try:
                if spans is not None:
                    start, end = spans[i]
                    hit = scanner.lookup(data, start, end)  # type: ignore[arg-type]
                    if hit is not None:
                        shape, vals = hit
                        rows = scanner.run(shape, data, spans, i) if i < n - 1 else None  # type: ignore[arg-type]
                        if rows is None:
                            write_shaped(p, shape, self._bound(p, shape), vals)
                            continue
                        if self._write_run(p, shape, rows, i, results):
                            failed = True
                        i += len(rows) - 1
                        continue
                    if learn:
                        learn -= 1
                        self._learn(updates[i], data[start:end])  # type: ignore[index]
                update = updates[i]
                entity = update.entity
                utype = update.type
                if utype and entity.WhichOneof("entity") == "table_entry":  # the bulk of a batch
                    write_plain(p, utype, plain(entity.table_entry))
                else:
                    apply(p, update)
            except Exception as exc:
                results[i] = _error_of(exc)
                failed = True
        return results, failed

    def _write_planned(self, p: Pipeline, items: list, n: int) -> tuple[list, bool]:
        """`_write_updates` of a request cut by shape (`WriteScanner.plan`): the same
        steps, in the same order, without the parsed updates."""
        results: list[RequestError | None] = [None] * n
        failed = False
        write_shaped, bound = self._write_shaped, self._bound
        for i, shape, rows, vals in items:
            try:
                if rows is None:
                    write_shaped(p, shape, bound(p, shape), vals)
                elif self._write_run(p, shape, rows, i, results):
                    failed = True
            except Exception as exc:
                results[i] = _error_of(exc)
                failed = True
        return results, failed

    @staticmethod
    def _bound(p: Pipeline, shape: Any) -> Any:
        """The shape's builder for this pipeline (bound on first use)."""
        bound = shape.bound
        if bound is None or bound[0]() is not p.maps:  # weak: no old pipeline kept
            bound = shape.bound = (weakref.ref(p.maps), fastwrite.bind(shape, p.maps, p))
        return bound[1]

    def _write_run(self, p: Pipeline, shape: Any, rows: list, i: int, results: list) -> bool:
        """Updates i, i+1, ... of one shape (`rows`: their values): in bulk when the
        builder can and none would fail, else one by one, each with its own result in
        `results`; True when one failed."""
        build = self._bound(p, shape)
        bulk = getattr(build, "bulk", None)
        if bulk is not None and bulk(rows):
            return False
        failed = False
        for j, row in enumerate(rows, i):
            try:
                self._write_shaped(p, shape, build, row)
            except Exception as exc:
                results[j] = _error_of(exc)
                failed = True
        return failed

    def _write_shaped(self, p: Pipeline, shape: Any, build: Any, vals: Any) -> None:
        """One update decoded by shape (fastwrite.py): stored by its bound builder, or
        through the reference checks (not a bound shape, or a value refused: they say why)."""
        built = build(vals) if build is not None else None
        if built is None:
            self._write_plain(p, shape.utype, shape.plain(vals))
        elif built is not fastwrite.DONE:  # DONE: stored by the table's pre-checked path
            self._apply_entry(p, shape.utype, built[0], built[1], b"", None)

    def _learn(self, update: Any, raw: bytes) -> None:
        try:
            self._scanner.learn(update, raw)
        except Exception:  # a learning bug must never change an answer: it only costs speed
            log.exception("fast write: learning a shape failed")

    def _abort_batch(self, context: grpc.ServicerContext, results: list[RequestError | None]) -> None:
        status = errors.write_status(results)
        context.set_trailing_metadata(((errors.STATUS_DETAILS_KEY, status.SerializeToString()),))
        context.abort(grpc.StatusCode.UNKNOWN, status.message)

    # Entity oneof name -> (its write handler, its read handler); extern entities
    # (counters, meters, registers, digests...) are served by their module in p4sim.externs
    _ENTITY_HANDLERS = {
        "table_entry": ("_write_table_entry", "_read_tables"),
        "packet_replication_engine_entry": ("_write_pre", "_read_pre"),
    }

    def _entity_handler(self, which: str | None, slot: int, doing: str) -> Callable[..., Any]:
        names = self._ENTITY_HANDLERS.get(which or "")
        if names is not None:
            return getattr(self, names[slot])
        ext = externs.by_entity(which) if which else None
        if ext is None:
            raise RequestError("UNIMPLEMENTED", f"p4sim does not support {doing} {which or 'an empty entity'}")
        if slot == 0:
            return lambda p, utype, msg: ext.write(self, p, utype, which, msg)
        return lambda p, req: ext.read(self, p, which, req)

    def _apply_update(self, p: Pipeline, update: Any) -> None:
        utype = update.type
        if utype == _UPDATE.UNSPECIFIED:
            raise invalid("update type is UNSPECIFIED")
        entity = update.entity
        which = entity.WhichOneof("entity")
        handler = self._entity_handler(which, 0, "writing")
        handler(p, utype, getattr(entity, which))

    def _write_table_entry(self, p: Pipeline, utype: int, te: Any) -> None:
        self._write_plain(p, utype, codec.plain_from_proto(te))

    def _write_plain(self, p: Pipeline, utype: int, te: codec.PlainEntry) -> None:
        sw, maps = p.switch, p.maps
        if te.is_default:
            meta = maps.table(te.table_id)
            if utype != _UPDATE.MODIFY:
                raise invalid(f"table {meta.name}: the default entry can only be MODIFYed")
            if te.matches or te.priority:
                raise invalid(f"table {meta.name}: the default entry has no match and no priority")
            if meta.const_default:
                raise RequestError("PERMISSION_DENIED", f"table {meta.name}: the default action is const")
            if te.action_id is not None or te.action_other is not None:
                _, entry = codec.decode_table_entry(maps, te, need_action=True)
                sw.table_set_default(meta.name, entry.action, entry.params)
            else:  # no action: back to the program's default (spec 9.1.3)
                tinfo = p.compiled.model.tables[meta.name]
                action = tinfo.default_action or "NoAction"
                ainfo = p.compiled.model.actions.get(action)
                names = [prm.name for prm in ainfo.params] if ainfo else []
                sw.table_set_default(meta.name, action, dict(zip(names, tinfo.default_params, strict=False)))
            return
        meta, entry = codec.decode_table_entry(maps, te, need_action=utype != _UPDATE.DELETE)
        if meta.const_entries:
            raise RequestError("PERMISSION_DENIED", f"table {meta.name} has const entries: it cannot be written")
        self._apply_entry(p, utype, meta, entry, te.metadata, te.counter_data)

    def _apply_entry(self, p: Pipeline, utype: int, meta: codec.TableMeta, entry: TableEntry, metadata: bytes,
                     counter_data: tuple[int, int] | None) -> None:
        """A decoded, checked entry into the table (both Write paths end here)."""
        sw = p.switch
        if utype == _UPDATE.INSERT:
            sw.table_add(entry)
        elif utype == _UPDATE.MODIFY:
            sw.table_modify(entry)
        elif utype == _UPDATE.DELETE:
            sw.table_delete(entry)
            if p.entry_metadata:
                p.entry_metadata.pop(codec.entry_key(entry), None)
            return
        else:
            raise invalid(f"unknown update type {utype}")
        if metadata or (utype == _UPDATE.MODIFY and p.entry_metadata):
            key = codec.entry_key(entry)
            if metadata:
                p.entry_metadata[key] = metadata
            else:
                p.entry_metadata.pop(key, None)
        if counter_data is not None and meta.direct_counter_id:
            sw.direct_counter_write(meta.name, entry, counter_data[0], counter_data[1])

    def _write_pre(self, p: Pipeline, utype: int, pre: Any) -> None:
        kind = pre.WhichOneof("type")
        sw = p.switch
        if kind == "multicast_group_entry":
            msg: Any = pre.multicast_group_entry
            key, store, name = msg.multicast_group_id, p.mc_groups, f"multicast group {msg.multicast_group_id}"
        elif kind == "clone_session_entry":
            msg = pre.clone_session_entry
            key, store, name = msg.session_id, p.clone_sessions, f"clone session {msg.session_id}"
        else:
            raise invalid("packet replication engine entry is empty")
        if key == 0:
            raise invalid(f"{name}: id 0 is not valid")
        if utype == _UPDATE.INSERT and key in store:
            raise RequestError("ALREADY_EXISTS", f"{name} already exists")
        if utype in (_UPDATE.MODIFY, _UPDATE.DELETE) and key not in store:
            raise RequestError("NOT_FOUND", f"{name} does not exist")
        if utype == _UPDATE.DELETE:
            if kind == "multicast_group_entry":
                sw.mc_group_delete(key)
            else:
                sw.clone_session_delete(key)
            del store[key]
            return
        self._check_replicas(msg.replicas, name)
        if kind == "multicast_group_entry":
            sw.mc_group_set(key, _replicas(msg))
        else:
            sw.clone_session_set(key, _replicas(msg), msg.packet_length_bytes)
        copy = type(msg)()
        copy.CopyFrom(msg)
        store[key] = copy

    @staticmethod
    def _check_replicas(replicas: Any, what: str) -> None:
        seen = set()
        for r in replicas:
            port = _replica_port(r)
            if (port, r.instance) in seen:
                raise invalid(f"{what}: replica (port {port}, instance {r.instance}) given twice")
            seen.add((port, r.instance))

    # -- Read

    READ_CHUNK_BYTES = 256 << 10  # one ReadResponse; the switch lock is held while it is built

    def Read(self, request: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
        """Entities are streamed in ReadResponses of about READ_CHUNK_BYTES, each built
        under the lock and serialized after it. The lock is taken per chunk, not for
        the whole answer, so a wildcard Read of every counter never stalls
        the data plane or other RPCs; and a client that stops reading stops the Read
        (gRPC flow control), it does not make the server build the rest."""
        try:
            with self._lock:
                self._check_device(request.device_id)
                p = self._need_pipeline()
                readers = []
                for ent in request.entities:  # every request error comes before any data
                    it = self._read_entity(p, ent)
                    first = next(it, None)
                    readers.append(it if first is None else itertools.chain((first,), it))
        except Exception as exc:
            self._abort(context, _error_of(exc))
            return
        items = itertools.chain.from_iterable(readers)
        sent = False
        while True:
            resp = p4runtime_pb2.ReadResponse()
            size = 0
            ready = None  # a reader's own serialized chunk (counter arrays), sent after resp
            done = True
            try:
                with self._lock:
                    for e in items:
                        if type(e) is bytes:
                            ready, done = e, False
                            break
                        resp.entities.append(e)
                        size += e.ByteSize() + 4  # + the field's tag and length
                        if size >= self.READ_CHUNK_BYTES:
                            done = False
                            break
            except Exception as exc:
                self._abort(context, _error_of(exc))
                return
            if resp.entities or (not sent and ready is None):
                yield resp.SerializeToString()
                sent = True
            if ready is not None:
                yield ready
                sent = True
            if done or not context.is_active():
                return

    def _read_entity(self, p: Pipeline, ent: Any) -> Iterator[Any]:
        which = ent.WhichOneof("entity")
        reader = self._entity_handler(which, 1, "reading")
        return reader(p, getattr(ent, which))

    def _table_entries(self, p: Pipeline, req: Any) -> list[tuple[codec.TableMeta, TableEntry | None]]:
        """The entries a (possibly wildcard) TableEntry selects; None stands for the default."""
        metas = [p.maps.table(req.table_id)] if req.table_id else list(p.maps.tables.values())
        out: list[tuple[codec.TableMeta, TableEntry | None]] = []
        for meta in metas:
            if req.is_default_action:
                out.append((meta, None))
                continue
            entries = p.switch.table_entries(meta.name)
            if req.table_id and len(req.match):
                _, want = codec.decode_table_entry(p.maps, req, need_action=False)
                wkey = codec.entry_key(want)
                entries = [e for e in entries if codec.entry_key(e) == wkey]
            elif req.table_id and req.priority:
                entries = [e for e in entries if e.priority == req.priority]
            out.extend((meta, e) for e in entries)
        return out

    def _encode_entry(self, p: Pipeline, meta: codec.TableMeta, e: TableEntry | None, with_counter: bool) -> Any:
        if e is None:
            action, params = p.switch.table_default(meta.name)
            te = p4runtime_pb2.TableEntry(table_id=meta.id, is_default_action=True)
            if action:
                te.action.action.CopyFrom(codec.encode_action(p.maps, action, params))
            return p4runtime_pb2.Entity(table_entry=te)
        counter = None
        if with_counter and meta.direct_counter_id:
            counter = p.switch.direct_counter_read(meta.name, e)
        metadata = p.entry_metadata.get(codec.entry_key(e), b"") if p.entry_metadata else b""
        ent = p4runtime_pb2.Entity()
        codec.encode_table_entry(p.maps, meta, e, metadata, counter, out=ent.table_entry)
        return ent

    def _read_tables(self, p: Pipeline, req: Any) -> Iterator[Any]:
        with_counter = req.HasField("counter_data")
        for meta, e in self._table_entries(p, req):
            yield self._encode_entry(p, meta, e, with_counter)

    # an upper bound of one counter cell in a ReadResponse: entity tag + length (3), the
    # Entity's counter_entry tag + length (2), counter_id (1 + 5), index (2 + 1 + 10), data
    # (2 + 2 * (1 + 10)): chunks of READ_CHUNK_BYTES // 48 cells stay within the bound
    _COUNTER_CELL_MAX_BYTES = 48
    _ZERO_CELL = (0, 0)

    def counter_chunks(self, p: Pipeline, info: Any) -> Iterator[bytes]:
        """Every cell of one counter array as serialized ReadResponses of at most
        READ_CHUNK_BYTES. The cells are copied under the lock in one go (a list copy, far
        cheaper than encoding them), then encoded outside it. Most cells of a telemetry
        array are zero: a chunk of zeros is answered with its cached encoding (built once
        by protobuf, see Pipeline.zero_counter_chunk); a chunk with live cells is that
        encoding parsed, its live cells set, and serialized again: C work, not a Python
        loop over every cell. The Read loop sends these bytes as they are."""
        with self._lock:
            cells = p.switch.counter_read(info.name, None)
        step = max(1, self.READ_CHUNK_BYTES // self._COUNTER_CELL_MAX_BYTES)
        zero = self._ZERO_CELL
        for start in range(0, info.size, step):
            part = cells[start:start + step]
            if part.count(zero) == len(part):  # all zero: C compares, no Python loop
                yield p.zero_counter_chunk(info.id, start, len(part))
                continue
            live = [j for j, c in enumerate(part) if c != zero]
            resp = p4runtime_pb2.ReadResponse.FromString(p.zero_counter_chunk(info.id, start, len(part)))
            ents = resp.entities
            for j in live:
                d = ents[j].counter_entry.data
                d.packet_count, d.byte_count = part[j]
            yield resp.SerializeToString()

    def _read_pre(self, p: Pipeline, req: Any) -> Iterator[Any]:
        kind = req.WhichOneof("type")
        if kind == "multicast_group_entry":
            gid = req.multicast_group_entry.multicast_group_id
            if gid and gid not in p.mc_groups:
                raise RequestError("NOT_FOUND", f"multicast group {gid} does not exist")
            for k in [gid] if gid else sorted(p.mc_groups):
                e = p4runtime_pb2.Entity()
                e.packet_replication_engine_entry.multicast_group_entry.CopyFrom(p.mc_groups[k])
                yield (e)
        elif kind == "clone_session_entry":
            sid = req.clone_session_entry.session_id
            if sid and sid not in p.clone_sessions:
                raise RequestError("NOT_FOUND", f"clone session {sid} does not exist")
            for k in [sid] if sid else sorted(p.clone_sessions):
                e = p4runtime_pb2.Entity()
                e.packet_replication_engine_entry.clone_session_entry.CopyFrom(p.clone_sessions[k])
                yield (e)
        else:
            raise invalid("packet replication engine entry is empty")

    # -- StreamChannel

    def StreamChannel(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        with self._lock:
            if self._open_streams >= self.max_streams:
                full = True
            else:
                full = False
                self._open_streams += 1
        if full:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"p4sim-switch serves at most {self.max_streams} StreamChannels at a time")
        try:
            yield from self._stream_channel(request_iterator, context)
        finally:
            with self._lock:
                self._open_streams -= 1

    def _stream_channel(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        """The response thread handles the stream's messages, in order, between the answers
        it sends; the reader thread only takes requests off gRPC and hands them over, at
        most `stream.REQUESTS` at a time. With the pipeline run by the reader instead, the
        two threads fought over the GIL: this costs about 0.75x the server CPU per
        PacketOut -> PacketIn round trip at 32 in flight (`bench p4runtime --against`,
        A/B in one run). A client that does not read its answers stops its
        own requests being handled (gRPC flow control then holds them), never the server.
        On the native front end one thread does both (_stream_direct), or gRPC's read
        reaction handles each request (_stream_react)."""
        if self.stream_direct and self.stream_react and hasattr(request_iterator, "react"):
            self._stream_react(request_iterator, context)
            return
        if self.stream_direct and hasattr(request_iterator, "take"):
            yield from self._stream_direct(request_iterator, context)
            return
        stream = _Stream(self.packet_in_queue)
        context.add_callback(lambda: stream.send(None))
        reader = threading.Thread(target=self._stream_reader, args=(stream, request_iterator), daemon=True,
                                  name="p4rt-stream")
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

    def _stream_direct(self, requests: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        """_stream_channel's loop for the native front end, in the call's one thread, no
        reader thread: `requests.take()` returns in one call what the other threads posted
        (as they would have queued it) and the requests read off the wire (bounded by the
        front end's read-ahead), then None at the end; the answers of a batch go out as one
        list (Call.write_many). Same order, messages and bounds as the two-thread loop: a
        None ends the stream before anything posted after it, and a client that does not
        read its answers blocks the write, so its requests wait on the wire."""
        stream = _Stream(self.packet_in_queue, requests.post)
        context.add_callback(lambda: stream.send(None))
        take, handle = requests.take, self._stream_request
        stopping = False  # a request ended the stream: its _Abort is posted
        try:
            while True:
                out: list[bytes] = []
                packets = 0  # PacketIns taken and not yet given back to the bound (one lock per run)
                for item in take():
                    if type(item) is bytes:
                        if packets:  # before the request's own PacketIns count against the bound
                            stream.taken(packets)
                            packets = 0
                        if stopping:
                            continue  # after the stream's end: not handled
                        stop = handle(stream, item)
                        if stop is not None:  # the end goes behind the answers already posted
                            stopping = True
                            stream.put(stop)
                        continue
                    if item is None:
                        if out:
                            yield out
                        return
                    if type(item) is _Packet:
                        packets += 1
                        item = item.msg
                    elif isinstance(item, _Abort):
                        if out:
                            yield out
                        context.abort(_status_code(item.code), item.message)
                        return
                    else:
                        stream.control_taken()
                    out.append(item if type(item) is bytes else item.SerializeToString())
                if packets:
                    stream.taken(packets)
                if out:
                    yield out
        finally:
            stream.closed.set()
            self._drop_stream(stream)

    def _stream_react(self, requests: Any, context: grpc.ServicerContext) -> None:
        """_stream_direct's work done in the native front end's read reaction (Call.react):
        the gRPC thread whose read completed takes the GIL and handles the request, and its
        answers, as every answer other threads send the stream, are queued for writing as
        they are sent (_ReactStream), so no Python thread is woken per message. This thread
        starts the writes of answers sent outside a reaction (inside take()) and ends the
        stream: at the client's half-close or cancel (None), an _Abort (a request's, or the
        arbitration bound's), or a request's exception (raised here: UNKNOWN, as from
        _stream_direct). Same order, messages and bounds as the loops: a reaction is started
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
            with stream.serving:  # a reaction still running finishes first; none handles anything after
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

    def _stream_message(self, stream: _Stream, req: Any, data: bytes | None = None) -> _Abort | None:
        """Handle one StreamMessageRequest (`data`: its bytes); an _Abort ends the stream with its status."""
        try:
            if isinstance(req, _Malformed):
                raise invalid("malformed StreamMessageRequest (bad bytes or a string that is not UTF-8)")
            which = req.WhichOneof("update")
            if which == "arbitration":
                self._arbitrate(stream, req.arbitration)
            elif not stream.arbitrated:
                return _Abort("FAILED_PRECONDITION", "the first message on a stream must be arbitration")
            elif which == "packet":
                self._packet_out(stream, req.packet, data)
            elif which == "digest_ack":
                self._digest_ack(req.digest_ack)
            else:
                self._stream_error(stream, "UNIMPLEMENTED", f"p4sim does not handle stream message {which}")
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

    def _arbitrate(self, stream: _Stream, arb: Any) -> None:
        with self._lock:
            if arb.device_id != self.device_id:
                raise _StreamAbort("NOT_FOUND", f"device id {arb.device_id} does not exist (this is device {self.device_id})")
            if arb.HasField("role") and arb.role.HasField("config"):
                raise _StreamAbort("UNIMPLEMENTED", "p4sim does not support role configs")
            role_name = arb.role.name if arb.HasField("role") else ""
            if stream.arbitrated and role_name != stream.role:
                raise _StreamAbort("FAILED_PRECONDITION", "a stream cannot change its role")
            eid = _election(arb.election_id) if arb.HasField("election_id") else None
            role = self._roles.setdefault(role_name, _Role())
            if eid is not None and any(s is not stream and s.election_id == eid for s in role.streams):
                raise _StreamAbort("INVALID_ARGUMENT", f"election id {eid} is already used by another controller")
            stream.role, stream.election_id = role_name, eid
            if not stream.arbitrated:
                stream.arbitrated = True
                role.streams.append(stream)
            old_primary = role.primary
            if eid is not None and (role.highest is None or eid >= role.highest):
                role.highest = eid
            role.primary = next((s for s in role.streams if s.election_id is not None and s.election_id == role.highest), None)
            if role.primary is not old_primary:
                for s in role.streams:
                    s.send_control(self._arbitration_msg(role, s, role_name))
            else:
                stream.send_control(self._arbitration_msg(role, stream, role_name))

    def _arbitration_msg(self, role: _Role, stream: _Stream, role_name: str) -> Any:
        msg = p4runtime_pb2.StreamMessageResponse()
        a = msg.arbitration
        a.device_id = self.device_id
        if role_name:
            a.role.name = role_name
        if role.highest is not None:
            a.election_id.high, a.election_id.low = role.highest >> 64, role.highest & ((1 << 64) - 1)
        if role.primary is stream:
            a.status.code, a.status.message = code_pb2.OK, "you are the primary"
        elif role.primary is not None:
            a.status.code, a.status.message = code_pb2.ALREADY_EXISTS, "another controller is the primary"
        else:
            a.status.code, a.status.message = code_pb2.NOT_FOUND, "there is no primary"
        return msg

    def _drop_stream(self, stream: _Stream) -> None:
        with self._lock:
            role = self._roles.get(stream.role)
            if role is None or stream not in role.streams:
                return
            role.streams.remove(stream)
            if role.primary is stream:
                role.primary = None
                for s in role.streams:
                    s.send_control(self._arbitration_msg(role, s, stream.role))

    def _packet_out_fast(self, stream: _Stream, data: bytes) -> bool:
        """True when `data` is a PacketOut whose metadata bytes are a key _packet_out cached
        (checked already) and it was sent as _packet_out would; False: nothing was done, the
        reference path handles it (errors included)."""
        split = split_packet_out(data)
        if split is None:
            return False
        payload, meta = split
        with self._lock:
            p = self.pipeline
            if p is None or self.cpu_port is None:
                return False
            header = p.packet_out_headers.get(meta)
            if header is None:
                return False
            role = self._roles.get(stream.role)
            if role is None or role.primary is not stream:
                return False
            self.packet_out_count += 1
        self.inject(self.cpu_port, header + payload)
        return True

    def _packet_out(self, stream: _Stream, packet: Any, data: bytes | None = None) -> None:
        key = tuple((m.metadata_id, m.value) for m in packet.metadata)
        with self._lock:
            role = self._roles.get(stream.role)
            if role is None or role.primary is not stream:
                self._stream_error(stream, "PERMISSION_DENIED", "only the primary controller may send PacketOut", packet)
                return
            p = self.pipeline
            if p is None:
                self._stream_error(stream, "FAILED_PRECONDITION", "no forwarding pipeline", packet)
                return
            if self.cpu_port is None:
                self._stream_error(stream, "FAILED_PRECONDITION", "no CPU port: start p4sim-switch with --cpu-port", packet)
                return
            # the header a metadata list makes is cached per pipeline: only lists that
            # passed every check are kept, so a cache hit is a list already checked
            header = p.packet_out_headers.get(key)
            if header is None:
                try:
                    header = self._packet_out_header(p, key)
                except RequestError as exc:
                    self._stream_error(stream, exc.code, exc.message, packet)
                    return
                if len(p.packet_out_headers) >= p.PACKET_CACHE:
                    p.packet_out_headers.clear()
                p.packet_out_headers[key] = header
            if data is not None:  # the same metadata bytes again: _packet_out_fast
                split = split_packet_out(data)
                if split is not None and split[0] == packet.payload and metadata_only(split[1]):
                    if len(p.packet_out_headers) >= p.PACKET_CACHE:
                        p.packet_out_headers.clear()
                    p.packet_out_headers[split[1]] = header  # bytes: never equal to a tuple key
            self.packet_out_count += 1
        self.inject(self.cpu_port, header + packet.payload)

    @staticmethod
    def _packet_out_header(p: Pipeline, metadata: tuple[tuple[int, bytes], ...]) -> bytes:
        """The packet_out controller header a PacketOut's metadata makes (RequestError if
        a field is unknown, repeated, out of range or missing)."""
        hdr = p.maps.packet_out
        values = codec.decode_packet_metadata(hdr, metadata, "packet_out")
        return codec.pack_header(hdr.fields, values) if hdr is not None else b""

    def _digest_ack(self, ack: Any) -> None:
        with self._lock:
            key = self._digest_keys_by_list.pop(ack.list_id, None)
            if key is not None:
                self._digest_pending.pop(key, None)


_parse_stream_request = _lenient(p4runtime_pb2.StreamMessageRequest)


def _length_at(data: bytes, i: int) -> tuple[int, int] | None:
    """(value, next index) of the minimal varint at data[i] of at most 4 bytes; None for
    anything else (an overlong varint, which protobuf may read otherwise, takes protobuf)."""
    value = shift = 0
    for j in range(i, min(i + 4, len(data))):
        b = data[j]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value, j + 1) if b or j == i else None
        shift += 7
    return None


def split_packet_out(data: bytes) -> tuple[bytes, bytes] | None:
    """(payload, metadata bytes) of a serialized StreamMessageRequest that is one field 2
    (packet) whose PacketOut starts with its payload (field 1) or has none; None for any
    other shape. The metadata bytes are everything after the payload: only after
    `metadata_only` accepted them once may they stand for the metadata list protobuf read."""
    n = len(data)
    if 4 <= n <= 129 and data[0] == 0x12 and data[1] == n - 2 and data[2] == 0x0A:
        # a message under 130 bytes: both lengths are one byte (what _length_at reads there)
        end = data[3] + 4
        if data[3] and end <= n:
            return data[4:end], data[end:]
    if data[:1] != b"\x12":
        return None
    got = _length_at(data, 1)
    if got is None or got[0] + got[1] != len(data):
        return None
    i = got[1]
    if i < len(data) and data[i] == 0x0A:
        got = _length_at(data, i + 1)
        if got is None or got[0] + got[1] > len(data):
            return None
        end = got[0] + got[1]
        return data[got[1]:end], data[end:]
    return b"", data[i:]


def metadata_only(meta: bytes) -> bool:
    """Whether `meta` is a run of field-2 (PacketMetadata) entries and nothing else: then
    a PacketOut's metadata list depends on these bytes alone, not on its payload."""
    i = 0
    while i < len(meta):
        if meta[i] != 0x12:
            return False
        got = _length_at(meta, i + 1)
        if got is None or got[0] + got[1] > len(meta):
            return False
        i = got[0] + got[1]
    return True


class _StreamAbort(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


IDLE_TICK_S = 0.1  # the clock thread's wait while the traffic manager holds nothing


def _tm_idle(sw: Any) -> bool:
    """Whether the switch's traffic manager holds no packet (so no tick can release one);
    False for a switch without that question (it is ticked every tick_s, as before)."""
    idle = getattr(getattr(sw, "tm", None), "idle", None)
    return bool(idle()) if idle is not None else False


def packet_in_frame(metadata: bytes, payload: bytes) -> bytes:
    """A serialized StreamMessageResponse carrying a PacketIn: `metadata` is the
    PacketIn's serialized metadata (cached per value combination), the payload goes in
    front as field 1, as protobuf orders fields. Byte concatenation, no message: the
    test compares it with protobuf's own encoding."""
    if type(payload) is not bytes:
        payload = bytes(payload)
    n = len(payload)
    body = (b"\x0a" + (_VARINT[n] if n < _VARINTS else fastwrite.varint_bytes(n)) + payload + metadata
            if n else metadata)
    n = len(body)
    return b"\x12" + (_VARINT[n] if n < _VARINTS else fastwrite.varint_bytes(n)) + body


_VARINTS = 1 << 14  # lengths up to 16 KiB: their varints looked up, not built
_VARINT = [fastwrite.varint_bytes(n) for n in range(_VARINTS)]


_replica_port = codec.replica_port
_replicas = codec.replicas


def p4info_text(p4info: p4info_pb2.P4Info) -> str:
    from google.protobuf import text_format

    return text_format.MessageToString(p4info)
