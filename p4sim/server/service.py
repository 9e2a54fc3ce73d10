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

The service is cut along its RPCs; P4RuntimeServer (here: its state, lifecycle and
Capabilities) is made of:
- clock.py: frames in and the switch's time (Clock);
- pipeline_config.py: Set/GetForwardingPipelineConfig (PipelineConfigService);
- arbitration.py: arbitration and roles (Arbitration);
- write.py: Write, planning and applying (WriteService; its fast path: fastwrite/);
- read.py: Read (ReadService);
- stream.py: StreamChannel, one loop per front end (StreamService);
- packet_io.py: PacketOut, PacketIn and digests (PacketIO);
- wire.py: request parsing and error codes, shared by all of them.
"""

from __future__ import annotations

import functools
import gc
import logging
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from p4rtproto import p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc
from p4rtproto.errors import RequestError
from p4sim import profile
from p4sim.runtime.ports import PortSet
from p4sim.server import fastwrite
from p4sim.server.arbitration import Arbitration, _Role
from p4sim.server.clock import Clock
from p4sim.server.packet_io import PacketIO
from p4sim.server.pipeline import (
    Pipeline,
    compile_program,
    make_device_config,
    make_pipeline,
)
from p4sim.server.pipeline_config import PipelineConfigService
from p4sim.server.read import ReadService
from p4sim.server.sandbox import Limits
from p4sim.server.stream import StreamService
from p4sim.server.wire import (
    _lenient,
    _lenient_raw,
    _Raw,
    _reject_malformed,
    _status_code,
)
from p4sim.server.write import WriteService

log = logging.getLogger("p4sim.server")

API_VERSION = "1.4.1"
FRONTENDS = ("grpc", "native")
MAX_MESSAGE_BYTES = 64 << 20


class P4RuntimeServer(
    Arbitration,
    Clock,
    PipelineConfigService,
    WriteService,
    ReadService,
    StreamService,
    PacketIO,
    p4runtime_pb2_grpc.P4RuntimeServicer,
):
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
        fast_write: bool = True,
        frontend: str | None = None,
    ) -> None:
        if clock not in ("auto", "virtual", "wall"):
            raise ValueError("clock: auto, virtual or wall")
        # the gRPC front end: grpc-python (the reference) or native (grpc++, p4sim/server/native);
        # default: the profile's (native when fast and it builds here)
        self.frontend = frontend or profile_frontend()
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
        self.clock = (
            ("wall" if self.ports.has_interfaces else "virtual") if clock == "auto" else clock
        )
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
        self._digest_pending: dict[
            tuple[int, tuple], float
        ] = {}  # (digest id, values) -> ack deadline
        self._digest_keys_by_list: dict[int, tuple] = {}
        self.port: int | None = None
        self.packet_in_count = 0
        self.packet_out_count = 0
        # Write's fast path (fastwrite/); False: every update decoded from the message
        # (the reference the fast path's tests compare with)
        self.fast_write = fast_write
        self._scanner = fastwrite.WriteScanner()

    # ------------------------------------------------------------ lifecycle

    def _default_switch(self, compiled: Any, wait: bool = False) -> Any:
        """A pushed program's switch; on the fast profile its compiled module, when not built
        yet, is built in the background and this pipeline runs Python (a push must answer
        within its deadline; gcc on roce_switch.p4 takes minutes): the next push loads it."""
        from p4sim.runtime import switch as switch_mod
        from p4sim.runtime.tm import TrafficManager

        tm = self._tm_factory() if self._tm_factory else TrafficManager()
        return switch_mod.Switch(compiled, cpu_port=self.cpu_port, tm=tm, wait_for_build=wait)

    def _handlers(self) -> grpc.GenericRpcHandler:
        """The P4Runtime service. Requests are parsed by protobuf (upb) in our own
        deserializer, so that bytes it refuses (bad framing, a string that is not UTF-8)
        answer INVALID_ARGUMENT instead of gRPC's INTERNAL; on a stream they answer a
        StreamError and the stream stays open."""
        P = p4runtime_pb2

        def unary(fn: Any, req: Any, resp: Any) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(
                _reject_malformed(fn), _lenient(req), resp.SerializeToString
            )

        def write(raw: _Raw, context: grpc.ServicerContext) -> Any:
            return self.Write(raw.msg, context, raw.data, raw.plan)

        return grpc.method_handlers_generic_handler(
            "p4.v1.P4Runtime",
            {
                "Write": grpc.unary_unary_rpc_method_handler(
                    _reject_malformed(write),
                    _lenient_raw(P.WriteRequest, self._plan_write),
                    P.WriteResponse.SerializeToString,
                ),
                "Read": grpc.unary_stream_rpc_method_handler(
                    _reject_malformed(self.Read, streaming=True), _lenient(P.ReadRequest), None
                ),
                "SetForwardingPipelineConfig": unary(
                    self.SetForwardingPipelineConfig,
                    P.SetForwardingPipelineConfigRequest,
                    P.SetForwardingPipelineConfigResponse,
                ),
                "GetForwardingPipelineConfig": unary(
                    self.GetForwardingPipelineConfig,
                    P.GetForwardingPipelineConfigRequest,
                    P.GetForwardingPipelineConfigResponse,
                ),
                # request bytes: a PacketOut whose checked header is cached skips protobuf (_stream_request)
                "StreamChannel": grpc.stream_stream_rpc_method_handler(
                    self.StreamChannel, None, None
                ),
                "Capabilities": unary(
                    self.Capabilities, P.CapabilitiesRequest, P.CapabilitiesResponse
                ),
            },
        )

    def start(
        self,
        address: str = "127.0.0.1:0",
        max_workers: int | None = None,
        credentials: grpc.ServerCredentials | None = None,
    ) -> int:
        """Serve on `address` ("host:port", port 0 = any free port); returns the port.

        The pool has `max_streams` threads for streams and 16 more for unary RPCs; RPCs
        beyond the pool are answered RESOURCE_EXHAUSTED by gRPC at once (never queued
        until their deadline). With `credentials` the port speaks TLS."""
        workers = max_workers or self.max_streams + 16
        if (
            self.frontend == "native"
        ):  # same handlers, limits and pool size (credentials: native.Tls)
            from p4sim.server import native

            self._grpc = native.serve(
                self._handlers(), address, MAX_MESSAGE_BYTES, workers, credentials
            )  # type: ignore[assignment]
            port = self._grpc.port  # type: ignore[union-attr]
        else:
            self._grpc = grpc.server(
                futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
                options=[
                    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ],
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
        log.info(
            "P4Runtime server for device %d on %s (clock %s)",
            self.device_id,
            address.rsplit(":", 1)[0] + f":{port}",
            self.clock,
        )
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
        device_config = make_device_config(
            path
        )  # bounded walk first (InputError): no compile wasted
        compiled, p4info = compile_program(path)
        # at start-up the first build is waited for (the start line then says what runs)
        factory = (
            functools.partial(self._default_switch, wait=True)
            if self._switch_factory == self._default_switch
            else self._switch_factory
        )
        pipeline = make_pipeline(compiled, p4info, None, device_config, None, factory, None)
        with self._lock:
            self._install(pipeline)

    # ------------------------------------------------------------ pipeline

    def _install(self, pipeline: Pipeline) -> None:
        old = self.pipeline
        self.pipeline = pipeline
        self._digest_keys_by_list = {}
        self._digest_pending = {}
        sw = pipeline.switch
        if hasattr(
            sw, "on_packet_in_frame"
        ):  # p4sim's Switch: the header bytes, no dict per PacketIn
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
            raise RequestError(
                "NOT_FOUND",
                f"device id {device_id} does not exist (this is device {self.device_id})",
            )

    def _need_pipeline(self) -> Pipeline:
        # after VERIFY_AND_SAVE, requests refer to the saved config (spec 8.2)
        p = self._saved or self.pipeline
        if p is None:
            raise RequestError(
                "FAILED_PRECONDITION",
                "no forwarding pipeline: send SetForwardingPipelineConfig first",
            )
        return p

    @staticmethod
    def _abort(context: grpc.ServicerContext, err: RequestError) -> None:
        context.abort(_status_code(err.code), err.message)

    # ------------------------------------------------------------ RPCs

    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)


def profile_frontend() -> str:
    """The front end the profile asks for: native (grpc++) when fast and it builds here,
    else grpc-python (the reference; one line says why when fast could not have native)."""
    if not profile.fast():
        return "grpc"
    why = _native_unavailable()
    if why:
        profile.fall_back("native front end", why)
        return "grpc"
    return "native"


@functools.cache
def _native_unavailable() -> str:
    """Why the native front end cannot run here ("" when it can), found once per process:
    built on first use (cached per user), so the build's cost is paid here, once."""
    from p4sim.server import native

    try:
        native.load()
    except native.NativeUnavailable as exc:
        return str(exc)
    return ""


def p4info_text(p4info: p4info_pb2.P4Info) -> str:
    from google.protobuf import text_format

    return text_format.MessageToString(p4info)
