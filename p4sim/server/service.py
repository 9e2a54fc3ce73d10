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

The service is cut along its RPCs; P4RuntimeServer (here: its state, lifecycle, clock,
Capabilities and the pipeline config RPCs) is made of:
- arbitration.py: arbitration and roles (Arbitration);
- write.py: Write, planning and applying (WriteService; its fast path: fastwrite.py);
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
from p4rtproto.errors import RequestError, invalid
from p4sim import profile
from p4sim.model import P4SimError, TableEntry
from p4sim.p4info import p4info_from_model
from p4sim.runtime.ports import PortSet
from p4sim.server import fastwrite
from p4sim.server.arbitration import Arbitration, _Role
from p4sim.server.packet_io import PacketIO
from p4sim.server.pipeline import (
    Pipeline,
    compile_device_config,
    compile_program,
    make_device_config,
    make_pipeline,
)
from p4sim.server.read import ReadService
from p4sim.server.sandbox import Limits
from p4sim.server.stream import StreamService
from p4sim.server.wire import (
    _error_of,
    _lenient,
    _lenient_raw,
    _Raw,
    _reject_malformed,
    _status_code,
)
from p4sim.server.write import WriteService, _replicas

log = logging.getLogger("p4sim.server")

API_VERSION = "1.4.1"
FRONTENDS = ("grpc", "native")
MAX_MESSAGE_BYTES = 64 << 20
_SFP = p4runtime_pb2.SetForwardingPipelineConfigRequest
_GFP = p4runtime_pb2.GetForwardingPipelineConfigRequest


class P4RuntimeServer(Arbitration, WriteService, ReadService, StreamService, PacketIO,
                      p4runtime_pb2_grpc.P4RuntimeServicer):
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
        # Write's fast path (fastwrite.py); False: every update decoded from the message
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
        # at start-up the first build is waited for (the start line then says what runs)
        factory = functools.partial(self._default_switch, wait=True) if self._switch_factory == self._default_switch \
            else self._switch_factory
        pipeline = make_pipeline(compiled, p4info, None, make_device_config(path), None, factory, None)
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


    GC_PAUSE_UPDATES = 64


    # Entity oneof name -> (its write handler, its read handler); extern entities
    # (counters, meters, registers, digests...) are served by their module in p4sim.externs
    _ENTITY_HANDLERS = {
        "table_entry": ("_write_table_entry", "_read_tables"),
        "packet_replication_engine_entry": ("_write_pre", "_read_pre"),
    }


    # -- Read

    READ_CHUNK_BYTES = 256 << 10  # one ReadResponse; the switch lock is held while it is built


    # an upper bound of one counter cell in a ReadResponse: entity tag + length (3), the
    # Entity's counter_entry tag + length (2), counter_id (1 + 5), index (2 + 1 + 10), data
    # (2 + 2 * (1 + 10)): chunks of READ_CHUNK_BYTES // 48 cells stay within the bound
    _COUNTER_CELL_MAX_BYTES = 48
    _ZERO_CELL = (0, 0)


    # -- StreamChannel


IDLE_TICK_S = 0.1  # the clock thread's wait while the traffic manager holds nothing


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


def _tm_idle(sw: Any) -> bool:
    """Whether the switch's traffic manager holds no packet (so no tick can release one);
    False for a switch without that question (it is ticked every tick_s, as before)."""
    idle = getattr(getattr(sw, "tm", None), "idle", None)
    return bool(idle()) if idle is not None else False


def p4info_text(p4info: p4info_pb2.P4Info) -> str:
    from google.protobuf import text_format

    return text_format.MessageToString(p4info)
