"""`make bench` section p4runtime: a P4Runtime switch's control plane over real gRPC.

The same bench runs against p4sim-switch (default: started here, a fresh process per
trial), BMv2 `simple_switch_grpc` or a hardware switch (`--grpc-addr`). The program is
roce_switch.p4 configured by `rocelab apply controller/examples/lab.yaml`; every figure
is printed next to a baseline measured in the same run, and as a ratio to it:

- table INSERT and DELETE per second: 4,000 l2_fwd entries in WriteRequests of 500
  (issue 19's rows; issue 14's target >= 50,000/s), pre-serialized so that the figure is
  the switch's, not the pure-Python client's. Baseline: the same request bytes sent to a
  gRPC-Python unary echo that does no work (what moving the bytes costs on this stack);
- PacketOut -> PacketIn round trips per second through the pipeline (egress_port 255,
  the CPU port, loops back as a PacketIn), 1 and 32 in flight (target >= 5,000/s at 32,
  >= 90% of the echo). Baseline: a gRPC-Python StreamChannel echo doing no work, built
  like p4sim's server (sync server, one reader thread per stream handing messages to the
  response generator through a SimpleQueue), driven by the same client code and message;
- `rocelab counters`: every cell of every counter (37,888 in roce_switch.p4) through the
  controller's P4Runtime target (target <= 100 ms). Baselines: the same Read fetched as
  raw bytes (no client parse) and the same bytes streamed by the echo server.
- with a server pid (p4sim-switch started here, or `--server-pid`), its CPU time per
  operation: steadier than a rate on a loaded machine.
- where p4sim's native front end builds (libgrpc++-dev, g++): the same echo handlers
  behind it (`p4sim-switch --frontend native`'s ceiling; its stream echo has p4sim's
  native shape: one thread taking requests in batches, Call.take/write_many), and the
  echo answered in C++ alone (what grpc++ costs without Python), and the stream echo
  answered in gRPC's read reaction (Call.react: Python called from the gRPC thread that
  read the request, no Python thread woken per message: the shape of p4sim's native
  StreamChannel).

Side by side with BMv2 (issue 34): when the real toolchain is found (PATH or
ROCELAB_BMV2_PREFIX, controller/targets/toolchain.py; `make bench` passes BMV2_PREFIX), each
trial starts, in turn (rotated per trial), p4sim-switch on the fast profile, BMv2's
performance build and its default build (`--no-bmv2-default`: not), pushes roce_switch.p4
to each with rocelab apply (BMv2: p4c-bm2-ss's P4Info and JSON, build/p4) and measures them
with the same client; a table then gives every row as a ratio to the perf build of the same
trial (bench/side_by_side.py). Without the toolchain one line says why the BMv2 columns are
absent and the section runs as below (`--no-bmv2`: the same with the toolchain).

Commands (from the repository root; `.venv/bin/python -m bench p4runtime --help`):

    # side by side with BMv2's perf and default builds, 3 trials alternated
    ROCELAB_BMV2_PREFIX=../shared/refp4 .venv/bin/python -m bench p4runtime --trials 3

    # p4sim-switch, 3 trials alternated with the echo baselines; where the native front end
    # builds, each trial runs p4sim-switch on the reference profile and on the fast one
    # (bench.REFERENCE_CONFIG, bench.PERF_CONFIG; --no-perf-config: the environment's profile only)
    .venv/bin/python -m bench p4runtime --trials 3
    # this tree's p4sim-switch against another checkout's, trial by trial (A/B, then B/A)
    .venv/bin/python -m bench p4runtime --trials 4 --against /path/to/other/checkout
    # the reference profile against the fast one, same tree, one run
    P4SIM_PROFILE=reference .venv/bin/python -m bench p4runtime --trials 2 --no-perf-config \
        --against . --against-env P4SIM_PROFILE=fast
    # BMv2: compile, start, configure, then bench the pipeline already there
    make p4-bmv2
    simple_switch_grpc --device-id 0 --log-level off --no-p4 -- --cpu-port 255 \\
        --grpc-server-addr 127.0.0.1:9559 &
    .venv/bin/rocelab apply controller/examples/lab.yaml --grpc-addr 127.0.0.1:9559 \\
        --p4info build/p4/roce_switch.p4info.txt --bmv2-json build/p4/roce_switch.json
    .venv/bin/python -m bench p4runtime --grpc-addr 127.0.0.1:9559 --device-id 0 --no-push \\
        --server-pid $(pgrep -n simple_switch_grpc) --trials 3

Without `--no-push` an external switch is configured by running `rocelab apply` on it
(with `--p4info/--bmv2-json` passed through for BMv2).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from bench import PERF_CONFIG, REFERENCE_CONFIG, perf_config_available, side_by_side
from p4rtproto import p4runtime_pb2

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it)
SMOKE = ["--rtt-n", "150", "--no-perf-config", "--no-bmv2"]

ROOT = Path(__file__).resolve().parent.parent
LAB_CONFIG = ROOT / "controller" / "examples" / "lab.yaml"
WRITE_TARGET = 50_000
RTT_TARGET = 5_000
RTT_SHARE_TARGET = 0.9  # of the same-run gRPC echo ceiling
COUNTERS_TARGET_MS = 100
# issue 19: BMv2 simple_switch_grpc 1.15.5, performance build, same machine and client
BMV2_PERF = {"insert": 410_000, "delete": 373_000, "rtt1": 2_300, "rtt32": 6_600}
ENTRIES, BATCH = 4_000, 500
MAC_BASE = 0x02AB00000000  # outside lab.yaml's hosts and ports
WINDOW = 32


# ------------------------------------------------------------ clients


def _cpu_s(pid: int | None) -> float:
    """CPU seconds a process has run so far, every thread (ended ones too), 0 without a
    pid: its CPU clock (clock_getcpuclockid(3), nanoseconds), else /proc/PID/stat's
    user + system ticks (10 ms: too coarse to tell tenths of a microsecond per update)."""
    if pid is None:
        return 0.0
    clock = ctypes.c_int()
    if _libc is not None and _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
        try:
            return time.clock_gettime(clock.value)
        except OSError:
            pass
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:
    _libc = None


class _Stream:
    """A raw-bytes bidirectional stream: one feeding generator, one reader thread (the
    same code drives the switch's StreamChannel and the echo)."""

    def __init__(
        self, channel: grpc.Channel, method: str, keep: Callable[[bytes], bool] = lambda m: True
    ) -> None:
        self.out: queue.Queue = queue.Queue()
        self.back: queue.Queue = queue.Queue()
        self.other: queue.Queue = queue.Queue()

        def requests():
            while (m := self.out.get()) is not None:
                yield m

        self.call = channel.stream_stream(
            method, request_serializer=None, response_deserializer=None
        )(requests())

        def read() -> None:
            try:
                for m in self.call:
                    (self.back if keep(m) else self.other).put(m)
            except grpc.RpcError:
                pass  # cancelled at the end

        threading.Thread(target=read, daemon=True).start()

    def timed(self, msg: bytes, window: int, n: int, pid: int | None) -> tuple[float, float]:
        """(seconds, server CPU seconds) for n round trips with `window` messages in flight."""
        for _ in range(min(window, n)):
            self.out.put(msg)
        cpu0, t0 = _cpu_s(pid), time.perf_counter()
        for i in range(n):
            self.back.get(timeout=10)
            if i + window < n:
                self.out.put(msg)
        return time.perf_counter() - t0, _cpu_s(pid) - cpu0

    def warm(self, msg: bytes, n: int = 200) -> None:
        for _ in range(n):
            self.out.put(msg)
            self.back.get(timeout=10)

    def close(self) -> None:
        self.out.put(None)
        self.call.cancel()


_ECHO_SERVER = """
import queue, sys, threading, time, grpc
from concurrent import futures
def stream(requests, ctx):  # p4sim's StreamChannel shape: a reader thread, a queue, a generator
    if hasattr(requests, "take"):  # native front end: p4sim's shape there, one thread, batches
        while True:
            items = requests.take()
            out = [m for m in items if m is not None]
            if out:
                yield out
            if items and items[-1] is None:
                return
    q = queue.SimpleQueue()
    def reader():
        try:
            for m in requests:
                q.put(m)
        except grpc.RpcError:
            pass
        q.put(None)
    threading.Thread(target=reader, daemon=True).start()
    while (m := q.get()) is not None:
        yield m
chunks = []
def load(req, ctx):
    chunks[:] = [req[i:i + 256 << 10] for i in range(0, len(req), 256 << 10)]
    return b""
def read(req, ctx):
    yield from chunks
handler = grpc.method_handlers_generic_handler("echo.Echo", {
    "S": grpc.stream_stream_rpc_method_handler(stream, None, None),
    "W": grpc.unary_unary_rpc_method_handler(lambda req, ctx: b"", None, None),
    "L": grpc.unary_unary_rpc_method_handler(load, None, None),
    "R": grpc.unary_stream_rpc_method_handler(read, None, None)})
if sys.argv[1:] == ["native"]:  # the same handlers behind p4sim's native (grpc++) front end
    from p4sim.server import native
    server = native.serve(handler, "127.0.0.1:0", 64 << 20, 32)
    print(server.port, flush=True)
elif sys.argv[1:] == ["react"]:  # the stream echo handled in gRPC's read reaction (Call.react)
    from p4sim.server.native.build import load
    server = load().Server("127.0.0.1:0", 64 << 20, 32)
    def serve(call):
        call.react(lambda m: [m])
        while not (items := call.take()) or items[-1] is not None:
            pass
        call.finish(0, "", ())
    def accept():
        while (call := server.accept()) is not None:
            threading.Thread(target=serve, args=(call,), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    print(server.port, flush=True)
elif sys.argv[1:] == ["cxx"]:  # the native front end answering in C++ alone (S echoes, W answers b"")
    from p4sim.server.native.build import load
    server = load().Server("127.0.0.1:0", 64 << 20, 32, echo=True)
    print(server.port, flush=True)
else:
    server = grpc.server(futures.ThreadPoolExecutor(32), options=[
        ("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)])
    server.add_generic_rpc_handlers((handler,))
    print(server.add_insecure_port("127.0.0.1:0"), flush=True)
    server.start()
time.sleep(600)
"""

# the same StreamChannel echo on grpc.aio, its event loop in its own thread: the stack p4sim
# would move to if it were faster (the bench prints both; see the note on issue 19)
_AIO_ECHO_SERVER = """
import asyncio, threading, time, grpc
async def stream(requests, ctx):
    async for m in requests:
        yield m
async def serve():
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("echo.Echo", {
        "S": grpc.stream_stream_rpc_method_handler(stream, None, None)}),))
    print(server.add_insecure_port("127.0.0.1:0"), flush=True)
    await server.start()
    await server.wait_for_termination()
threading.Thread(target=asyncio.run, args=(serve(),), daemon=True).start()
time.sleep(600)
"""

_OPTIONS = [
    ("grpc.max_receive_message_length", 64 << 20),
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.max_metadata_size", 1 << 20),
]


# ------------------------------------------------------------ the switch


@dataclass
class Switch:
    """A P4Runtime switch to measure: its address, and its process if we started it."""

    addr: str
    device_id: int
    proc: subprocess.Popen | None = None
    pid: int | None = None
    label: str = "p4sim-switch"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_p4sim(
    tree: Path | None = None, device_id: int = 0, env_extra: dict[str, str] | None = None
) -> Switch:
    """p4sim-switch in a fresh process, as a controller meets it; `tree`: another
    checkout's p4sim (for A/B runs), else this one; `env_extra`: its environment on top
    of ours (e.g. P4SIM_PROFILE=reference)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "p4sim.server_cli",
            "--no-p4",
            "--device-id",
            str(device_id),
            "--cpu-port",
            "255",
            "--grpc-server-addr",
            "127.0.0.1:0",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tree or ROOT,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"serving P4Runtime on [\d.]+:(\d+)", line)
        if m:
            threading.Thread(
                target=proc.stderr.read, daemon=True
            ).start()  # never block its logging
            label = "p4sim-switch" if tree is None else f"p4sim-switch@{tree}"
            label += "".join(f" {k}={v}" for k, v in (env_extra or {}).items())
            return Switch(f"127.0.0.1:{m.group(1)}", device_id, proc, proc.pid, label)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("p4sim-switch did not start")


def apply_lab(sw: Switch, extra: list[str], tree: Path | None = None) -> None:
    """`rocelab apply controller/examples/lab.yaml` on the switch (pushes roce_switch.p4)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "apply",
            str(LAB_CONFIG),
            "--grpc-addr",
            sw.addr,
            "--device-id",
            str(sw.device_id),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree or ROOT,
        timeout=300,
    )
    if r.returncode != 0:
        raise RuntimeError(
            f"rocelab apply failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
        )


class Controller:
    """The bench's controller: a primary StreamChannel and pre-serialized requests."""

    def __init__(self, sw: Switch, election_id: int) -> None:
        self.sw = sw
        self.election_id = election_id
        self.channel = grpc.insecure_channel(sw.addr, options=_OPTIONS)
        # PacketIn (field 2 of StreamMessageResponse) is told apart by its first byte
        self.stream = _Stream(
            self.channel, "/p4.v1.P4Runtime/StreamChannel", keep=lambda m: m[:1] == b"\x12"
        )
        arb = p4runtime_pb2.StreamMessageRequest()
        arb.arbitration.device_id = sw.device_id
        arb.arbitration.election_id.high, arb.arbitration.election_id.low = (
            election_id >> 64,
            election_id & (2**64 - 1),
        )
        self.stream.out.put(arb.SerializeToString())
        got = p4runtime_pb2.StreamMessageResponse.FromString(self.stream.other.get(timeout=10))
        if got.arbitration.status.code != 0:
            raise RuntimeError(
                f"not primary on {sw.addr}: {got.arbitration.status.message} "
                "(give a higher --election-id)"
            )
        get = self.channel.unary_unary(
            "/p4.v1.P4Runtime/GetForwardingPipelineConfig",
            request_serializer=p4runtime_pb2.GetForwardingPipelineConfigRequest.SerializeToString,
            response_deserializer=p4runtime_pb2.GetForwardingPipelineConfigResponse.FromString,
        )
        self.p4info = get(
            p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=sw.device_id), timeout=30
        ).config.p4info
        self.write_raw = self.channel.unary_unary(
            "/p4.v1.P4Runtime/Write", request_serializer=None, response_deserializer=None
        )

    def _find(self, objs, suffix: str):
        for o in objs:
            if o.preamble.name == suffix or o.preamble.name.endswith("." + suffix):
                return o
        raise RuntimeError(f"the pipeline has no {suffix!r}: is roce_switch.p4 configured?")

    def write_batches(self, utype: int) -> list[bytes]:
        t = self._find(self.p4info.tables, "l2_fwd")
        a = self._find(self.p4info.actions, "l2_forward")
        blobs = []
        for start in range(0, ENTRIES, BATCH):
            w = p4runtime_pb2.WriteRequest(device_id=self.sw.device_id)
            w.election_id.high, w.election_id.low = (
                self.election_id >> 64,
                self.election_id & (2**64 - 1),
            )
            for i in range(start, start + BATCH):
                te = w.updates.add(type=utype).entity.table_entry
                te.table_id = t.preamble.id
                te.match.add(field_id=t.match_fields[0].id).exact.value = (MAC_BASE + i).to_bytes(
                    6, "big"
                )
                if utype != p4runtime_pb2.Update.DELETE:
                    te.action.action.action_id = a.preamble.id
                    te.action.action.params.add(param_id=a.params[0].id, value=bytes([1 + i % 3]))
            blobs.append(w.SerializeToString())
        return blobs

    def packet_out(self) -> bytes:
        hdr = next(
            c for c in self.p4info.controller_packet_metadata if c.preamble.name == "packet_out"
        )
        m = p4runtime_pb2.StreamMessageRequest()
        m.packet.payload = bytes.fromhex("02000000000102000000000208004500") + bytes(50)
        for f in hdr.metadata:  # every field: egress_port 255 (the CPU port), the rest 0
            m.packet.metadata.add(
                metadata_id=f.id, value=b"\xff" if f.name == "egress_port" else b"\x00"
            )
        return m.SerializeToString()

    def close(self) -> None:
        self.stream.close()
        self.channel.close()


SLICES = 8  # each figure and its baseline alternate this many times within a trial


def _interleaved(
    runs: dict[str, Callable[[int], tuple[float, float]]], n: int
) -> dict[str, tuple[float, float]]:
    """Run each of `runs` (n operations each) in SLICES slices, alternating between them,
    so that a load swing on a shared machine hits the figure and its baseline alike.
    Each run(k) does k operations and returns (seconds, server CPU seconds); the result
    is {name: (operations/s, server CPU us per operation)}."""
    tot = {k: [0.0, 0.0] for k in runs}
    per = max(1, n // SLICES)
    for _ in range(SLICES):
        for k, run in runs.items():
            dt, cpu = run(per)
            tot[k][0] += dt
            tot[k][1] += cpu
    ops = per * SLICES
    return {k: (ops / dt, cpu / ops * 1e6) for k, (dt, cpu) in tot.items()}


def _writes(
    write: Callable[[bytes], object], blobs: list[bytes], pid: int | None
) -> tuple[float, float]:
    """(seconds, server CPU seconds) to send the batches one after another."""
    cpu0, t0 = _cpu_s(pid), time.perf_counter()
    for b in blobs:
        write(b)
    return time.perf_counter() - t0, _cpu_s(pid) - cpu0


def _counters(sw: Switch, election_id: int, counter_ids: list[int]) -> tuple[float, float, bytes]:
    """(`rocelab counters` ms, raw-bytes Read ms, best of 3 each) and the answer's bytes."""
    from controller.targets.p4runtime import P4RuntimeTarget

    t = P4RuntimeTarget(sw.addr, device_id=sw.device_id, election_id=election_id)
    try:
        got = t.counters()  # warm up
        cells = sum(len(v) for v in got.values())
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            t.counters()
            best = min(best, time.perf_counter() - t0)
        req = p4runtime_pb2.ReadRequest(device_id=sw.device_id)
        for cid in counter_ids:
            req.entities.add().counter_entry.counter_id = cid
        raw = t.conn.channel.unary_stream(
            "/p4.v1.P4Runtime/Read", request_serializer=None, response_deserializer=None
        )
        raw_best, answer = float("inf"), b""
        for _ in range(3):
            t0 = time.perf_counter()
            parts = list(raw(req.SerializeToString(), timeout=60))
            raw_best = min(raw_best, time.perf_counter() - t0)
        answer = b"".join(parts)
        cpu0 = _cpu_s(sw.pid)  # the server's CPU per Read: the mean of 10
        for _ in range(10):
            list(raw(req.SerializeToString(), timeout=60))
        _counters.cells = cells  # type: ignore[attr-defined]
        _counters.server_cpu_ms = (_cpu_s(sw.pid) - cpu0) * 100 if sw.pid else None  # type: ignore[attr-defined]
        return best * 1e3, raw_best * 1e3, answer
    finally:
        t.close()


# ------------------------------------------------------------ baselines


class Echo:
    """The gRPC-Python ceiling on this machine: a server that does no work."""

    def __init__(self, source: str = _ECHO_SERVER, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", source, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        self.channel = grpc.insecure_channel(
            f"127.0.0.1:{int(self.proc.stdout.readline())}", options=_OPTIONS
        )
        self.write_raw = self.channel.unary_unary(
            "/echo.Echo/W", request_serializer=None, response_deserializer=None
        )

    def stream(self) -> _Stream:
        return _Stream(self.channel, "/echo.Echo/S")

    def read_ms(self, answer: bytes) -> float:
        self.channel.unary_unary(
            "/echo.Echo/L", request_serializer=None, response_deserializer=None
        )(answer)
        read = self.channel.unary_stream(
            "/echo.Echo/R", request_serializer=None, response_deserializer=None
        )
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            list(read(b""))
            best = min(best, time.perf_counter() - t0)
        return best * 1e3

    def close(self) -> None:
        self.channel.close()
        self.proc.kill()
        self.proc.wait()


def start_bmv2(exe: Path, label: str, device_id: int = 0) -> Switch:
    """BMv2's simple_switch_grpc `exe` (no interfaces: PacketOut to the CPU port loops back)."""
    from controller.targets.switches import free_port

    addr = f"127.0.0.1:{free_port()}"
    proc = side_by_side.start(exe, addr, device_id=device_id)
    side_by_side.wait_ready(addr, proc, label)
    return Switch(addr, device_id, proc, proc.pid, label)


# the side-by-side table's rows (bench.side_by_side)
TABLE_ROWS = [
    side_by_side.Row(
        f"table INSERT, {ENTRIES:,} in {BATCH}s", "insert", "/s", cpu_key="insert_cpu"
    ),
    side_by_side.Row("table DELETE", "delete", "/s", cpu_key="delete_cpu"),
    side_by_side.Row("PacketOut->PacketIn, 1 in flight", "rtt1", "/s", cpu_key="rtt1_cpu"),
    side_by_side.Row(
        f"PacketOut->PacketIn, {WINDOW} in flight", "rtt32", "/s", cpu_key="rtt32_cpu"
    ),
    side_by_side.Row(
        f"  switch CPU per round trip at {WINDOW} in flight (us)",
        "rtt32_cpu",
        "us",
        higher_better=False,
    ),
    side_by_side.Row(
        "counters, every cell (rocelab counters)", "counters_ms", "ms", higher_better=False
    ),
    side_by_side.Row(
        "counters, the Read as raw bytes", "counters_raw_ms", "ms", higher_better=False
    ),
]


# ------------------------------------------------------------ one trial


@dataclass
class Trial:
    label: str
    fig: dict[str, float] = field(default_factory=dict)


def measure(
    sw: Switch,
    echo: Echo,
    election_id: int,
    rtt_n: int,
    aio: Echo | None = None,
    native: Echo | None = None,
    cxx: Echo | None = None,
    react: Echo | None = None,
) -> Trial:
    """One trial: each switch figure interleaved, slice by slice, with its baseline."""
    tr = Trial(sw.label)
    f = tr.fig
    c = Controller(sw, election_id)
    streams: list[_Stream] = []
    try:
        ins, dels = (
            c.write_batches(p4runtime_pb2.Update.INSERT),
            c.write_batches(p4runtime_pb2.Update.DELETE),
        )
        wr = lambda b: c.write_raw(b, timeout=60)  # noqa: E731
        epid = echo.proc.pid
        # INSERT then DELETE of all the entries is one slice (the table ends as it began);
        # the echo gets the same request bytes
        wruns = {
            "insert": lambda k: _writes(wr, ins, sw.pid),
            "delete": lambda k: _writes(wr, dels, sw.pid),
            "echo_write": lambda k: _writes(echo.write_raw, ins, epid),
        }
        if native is not None:
            wruns["necho_write"] = lambda k: _writes(native.write_raw, ins, native.proc.pid)
        if cxx is not None:
            wruns["cecho_write"] = lambda k: _writes(cxx.write_raw, ins, cxx.proc.pid)
        res = _interleaved(wruns, SLICES)
        for key, (rate, cpu) in res.items():  # rates per update, not per slice
            f[key], f[key + "_cpu"] = rate * ENTRIES, cpu / ENTRIES
        msg = c.packet_out()
        es, streams = echo.stream(), []
        streams.append(es)
        runs = {
            "rtt1": lambda k: c.stream.timed(msg, 1, k, sw.pid),
            "echo1": lambda k: es.timed(msg, 1, k, epid),
        }
        c.stream.warm(msg)
        es.warm(msg)
        if native is not None:
            n_s = native.stream()
            streams.append(n_s)
            n_s.warm(msg)
            npid = native.proc.pid
            runs["necho1"] = lambda k: n_s.timed(msg, 1, k, npid)
        for key, (rate, cpu) in _interleaved(runs, rtt_n // 3).items():
            f[key], f[key + "_cpu"] = rate, cpu
        runs = {
            "rtt32": lambda k: c.stream.timed(msg, WINDOW, k, sw.pid),
            "echo32": lambda k: es.timed(msg, WINDOW, k, epid),
        }
        if aio is not None:
            a_s = aio.stream()
            streams.append(a_s)
            a_s.warm(msg)
            apid = aio.proc.pid
            runs["aio32"] = lambda k: a_s.timed(msg, WINDOW, k, apid)
        if native is not None:
            runs["necho32"] = lambda k: n_s.timed(msg, WINDOW, k, npid)
        if cxx is not None:
            c_s = cxx.stream()
            streams.append(c_s)
            c_s.warm(msg)
            cpid = cxx.proc.pid
            runs["cecho32"] = lambda k: c_s.timed(msg, WINDOW, k, cpid)
        if react is not None:
            r_s = react.stream()
            streams.append(r_s)
            r_s.warm(msg)
            rpid = react.proc.pid
            runs["recho32"] = lambda k: r_s.timed(msg, WINDOW, k, rpid)
        for key, (rate, cpu) in _interleaved(runs, rtt_n).items():
            f[key], f[key + "_cpu"] = rate, cpu
    finally:
        for st in streams:
            st.close()
        c.close()
    if sw.pid is None:  # an external switch without --server-pid: no CPU figures for it
        for key in ("insert", "delete", "rtt1", "rtt32"):
            f.pop(key + "_cpu", None)
    counter_ids = [ci.preamble.id for ci in c.p4info.counters]
    f["counters_ms"], f["counters_raw_ms"], answer = _counters(sw, election_id + 1, counter_ids)
    if getattr(_counters, "server_cpu_ms", None) is not None:
        f["counters_cpu_ms"] = _counters.server_cpu_ms  # type: ignore[attr-defined]
    f["counters_echo_ms"] = echo.read_ms(answer)
    if native is not None:
        f["counters_necho_ms"] = native.read_ms(answer)
    t0 = time.perf_counter()
    p4runtime_pb2.ReadResponse.FromString(answer)  # one message: the upb parse alone
    f["counters_parse_ms"] = (time.perf_counter() - t0) * 1e3
    f["counters_mb"] = len(answer) / 1e6
    return tr


# ------------------------------------------------------------ report


def _med(trials: list[Trial], key: str) -> float:
    vals = [t.fig[key] for t in trials if key in t.fig]
    return statistics.median(vals) if vals else float("nan")


def _span(trials: list[Trial], key: str) -> str:
    vals = [t.fig[key] for t in trials if key in t.fig]
    if len(vals) < 2:
        return ""
    return f" [{min(vals):,.0f}-{max(vals):,.0f}]"


def _ok(good: bool) -> str:
    return "OK" if good else "BELOW TARGET"


def report(trials: list[Trial]) -> None:
    label = trials[0].label
    m = {k: _med(trials, k) for k in trials[0].fig}
    n = len(trials)
    print(f"{label}: median of {n} trial(s) [min-max]; each figure beside its same-run baseline")
    for key, what in (("insert", "INSERT"), ("delete", "DELETE")):
        print(
            f"  table {what} ({ENTRIES:,} l2_fwd entries, batches of {BATCH}): {m[key]:,.0f}/s{_span(trials, key)}"
            f" = {m[key] / m['echo_write']:.0%} of a no-work unary echo of the same bytes ({m['echo_write']:,.0f}/s);"
            f" {m[key] / BMV2_PERF[key]:.2f}x BMv2 perf build ({BMV2_PERF[key]:,}/s, issue 19)   "
            f"target >= {WRITE_TARGET:,}/s {_ok(m[key] >= WRITE_TARGET)}"
        )
        if f"{key}_cpu" in trials[0].fig:
            print(
                f"    server CPU per update: {m[key + '_cpu']:.1f} us (BMv2 perf build: 2.1 us, issue 19)"
            )
    if "necho_write" in trials[0].fig:
        print(
            f"    the same unary echo behind p4sim's native (grpc++) front end: {m['necho_write']:,.0f}/s,"
            f" server CPU {m['necho_write_cpu']:.2f} us per update; gRPC-Python's: {m['echo_write_cpu']:.2f} us"
        )
    if "cecho_write" in trials[0].fig:
        print(
            f"    answered in C++ alone (no Python): {m['cecho_write']:,.0f}/s, server CPU"
            f" {m['cecho_write_cpu']:.2f} us per update"
        )
    share1, share32 = m["rtt1"] / m["echo1"], m["rtt32"] / m["echo32"]
    print(
        f"  PacketOut->PacketIn, 1 in flight: {m['rtt1']:,.0f}/s{_span(trials, 'rtt1')} = {share1:.0%} of the"
        f" StreamChannel echo ({m['echo1']:,.0f}/s); {m['rtt1'] / BMV2_PERF['rtt1']:.2f}x BMv2 perf build"
    )
    print(
        f"  PacketOut->PacketIn, {WINDOW} in flight: {m['rtt32']:,.0f}/s{_span(trials, 'rtt32')} = {share32:.0%} of"
        f" the echo ({m['echo32']:,.0f}/s); {m['rtt32'] / BMV2_PERF['rtt32']:.2f}x BMv2 perf build   "
        f"target >= {RTT_TARGET:,}/s {_ok(m['rtt32'] >= RTT_TARGET)}, >= {RTT_SHARE_TARGET:.0%} of the echo "
        f"{_ok(share32 >= RTT_SHARE_TARGET)}"
    )
    if "rtt32_cpu" in trials[0].fig:
        print(
            f"    server CPU per round trip at {WINDOW} in flight: {m['rtt32_cpu']:.0f} us; the echo server's:"
            f" {m['echo32_cpu']:.0f} us (gRPC-Python's own share); BMv2 perf build 109 us (issue 19)"
        )
    if "necho32" in trials[0].fig:
        print(
            f"    the same echo behind p4sim's native (grpc++) front end: {m['necho1']:,.0f}/s at 1 in flight,"
            f" {m['necho32']:,.0f}/s at {WINDOW}, {m['necho32_cpu']:.0f} us server CPU per round trip"
            f" (the native ceiling; PacketOut->PacketIn = {m['rtt32'] / m['necho32']:.0%} of it)"
        )
    if "cecho32" in trials[0].fig:
        print(
            f"    the echo in C++ alone (grpc++, no Python): {m['cecho32']:,.0f}/s at {WINDOW} in flight,"
            f" {m['cecho32_cpu']:.0f} us server CPU per round trip"
        )
    if "recho32" in trials[0].fig:
        print(
            f"    the echo in gRPC's read reaction (Call.react: Python called there, no thread woken):"
            f" {m['recho32']:,.0f}/s at {WINDOW} in flight, {m['recho32_cpu']:.0f} us server CPU per round trip"
        )
    if "aio32" in trials[0].fig:
        print(
            f"    the same echo on grpc.aio (event loop in its own thread): {m['aio32']:,.0f}/s,"
            f" {m['aio32_cpu']:.0f} us server CPU per round trip; the sync stack's: {m['echo32']:,.0f}/s,"
            f" {m['echo32_cpu']:.0f} us"
        )
    cells = getattr(_counters, "cells", 0)
    print(
        f"  rocelab counters ({cells:,} cells, {m['counters_mb']:.2f} MB): {m['counters_ms']:,.0f} ms"
        f"{_span(trials, 'counters_ms')} (best of 3)   target <= {COUNTERS_TARGET_MS} ms "
        f"{_ok(m['counters_ms'] <= COUNTERS_TARGET_MS)}"
    )
    cpu = (
        f" (server CPU {m['counters_cpu_ms']:,.0f} ms per Read)"
        if "counters_cpu_ms" in trials[0].fig
        else ""
    )
    necho = (
        f" (native front end: {m['counters_necho_ms']:,.0f} ms)"
        if "counters_necho_ms" in trials[0].fig
        else ""
    )
    print(
        f"    the same Read as raw bytes: {m['counters_raw_ms']:,.0f} ms{cpu}; the echo server streaming those bytes:"
        f" {m['counters_echo_ms']:,.0f} ms{necho}; upb parsing them: {m['counters_parse_ms']:,.0f} ms; the rest is the"
        f" client turning cells into Python values"
    )


def _ratios(a: list[Trial], b: list[Trial]) -> None:
    print(f"A/B: {a[0].label} / {b[0].label}, median of per-trial ratios (trials alternated)")
    for key in (
        "insert",
        "delete",
        "rtt1",
        "rtt32",
        "counters_ms",
        "counters_cpu_ms",
        "insert_cpu",
        "delete_cpu",
        "rtt1_cpu",
        "rtt32_cpu",
    ):
        rs = [
            x.fig[key] / y.fig[key]
            for x, y in zip(a, b, strict=False)
            if key in x.fig and y.fig.get(key)
        ]
        if rs:
            print(f"  {key}: {statistics.median(rs):.2f}x  [{min(rs):.2f}-{max(rs):.2f}]")


# the options that name or start this section's own switch: not with --bmv2
CONFLICTS = ("--grpc-addr", "--against", "--perf-config")


def parser() -> argparse.ArgumentParser:
    """This section's options (`python -m bench SECTION --help` prints them; nothing runs)."""
    ap = argparse.ArgumentParser(
        prog="python -m bench p4runtime", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--grpc-addr",
        metavar="HOST:PORT",
        help="bench this switch (default: start p4sim-switch here)",
    )
    ap.add_argument("--device-id", type=int, default=0)
    ap.add_argument(
        "--election-id", type=int, default=10, help="the bench's election id (default 10)"
    )
    ap.add_argument(
        "--no-push", action="store_true", help="use the pipeline already pushed and configured"
    )
    ap.add_argument("--p4info", help="with --bmv2-json: passed to rocelab apply (BMv2)")
    ap.add_argument("--bmv2-json")
    ap.add_argument(
        "--server-pid",
        type=int,
        help="the external switch's pid: also report its CPU per operation",
    )
    ap.add_argument(
        "--against",
        metavar="DIR",
        type=Path,
        help="A/B: alternate with another checkout's p4sim-switch",
    )
    ap.add_argument(
        "--against-env",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="environment of the --against switch (repeatable); with --against . an A/B of one "
        "tree, e.g. P4SIM_PROFILE=fast",
    )
    ap.add_argument(
        "--native-echo",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also measure the echo behind p4sim's native (grpc++) front end (default: when it"
        " can be built here)",
    )
    ap.add_argument(
        "--perf-config",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="alternate p4sim-switch with itself in its performance configuration ("
        + " ".join(f"{k}={v}" for k, v in PERF_CONFIG.items())
        + ") in the same run"
        " (default: when p4sim-switch runs here without --against and it builds)",
    )
    side_by_side.add_options(ap, "every row", CONFLICTS)
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--rtt-n", type=int, default=6000, help="round trips at 32 in flight per trial")
    return ap


def run(argv: list[str]) -> None:
    ap = parser()
    first_opt = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    args, _ = ap.parse_known_args(argv[first_opt:])  # other sections' options are theirs
    extra = ["--p4info", args.p4info, "--bmv2-json", args.bmv2_json] if args.p4info else []
    if args.against_env and not args.against:
        ap.error("--against-env needs --against")
    bad = [e for e in args.against_env if "=" not in e]
    if bad:
        ap.error(f"--against-env takes NAME=VALUE, not {bad[0]!r}")
    against_env = dict(e.split("=", 1) for e in args.against_env)
    given = (args.grpc_addr, args.against, args.perf_config)  # CONFLICTS' values
    bmv2 = side_by_side.choose(ap, args.bmv2, dict(zip(CONFLICTS, given, strict=True)))
    if bmv2 is not None:
        args.perf_config = False
    if args.perf_config is None:
        args.perf_config = not args.grpc_addr and not args.against and perf_config_available()
    if args.perf_config:
        if args.grpc_addr or args.against:
            ap.error(
                "--perf-config runs this tree's p4sim-switch: not with --grpc-addr or --against"
            )
        args.against, against_env = ROOT, dict(PERF_CONFIG)
    base_env = (
        dict(REFERENCE_CONFIG) if args.perf_config else None
    )  # this side: the reference profile
    if (
        args.native_echo is None
    ):  # the native ceilings: not in the side-by-side run (its time goes to the switches)
        from p4sim.server.native import unavailable_reason

        args.native_echo = bmv2 is None and not unavailable_reason()
    echo, aio = Echo(), (Echo(_AIO_ECHO_SERVER) if bmv2 is None else None)
    native = Echo(_ECHO_SERVER, "native") if args.native_echo else None
    cxx = Echo(_ECHO_SERVER, "cxx") if args.native_echo else None
    react = Echo(_ECHO_SERVER, "react") if args.native_echo else None
    results: dict[str, list[Trial]] = {}
    by_trial: list[dict[str, dict[str, float]]] = []
    # what each trial runs, in turn: (start it, rocelab apply's extra options, the tree)
    if bmv2 is not None:
        sides: list[tuple[Callable[[], Switch], list[str], Path | None]] = [
            (lambda: start_p4sim(None, args.device_id, dict(PERF_CONFIG)), [], None)
        ]
        for label, exe in bmv2.builds()[: None if args.bmv2_default else 1]:
            sides.append(
                (
                    lambda label=label, exe=exe: start_bmv2(exe, label, args.device_id),
                    list(bmv2.apply_args),
                    None,
                )
            )
    elif args.grpc_addr:
        sides = [
            (
                lambda: Switch(
                    args.grpc_addr,
                    args.device_id,
                    pid=args.server_pid,
                    label=f"switch at {args.grpc_addr}",
                ),
                extra,
                None,
            )
        ]
    else:
        sides = [(lambda: start_p4sim(None, args.device_id, base_env), extra, None)]
        if args.against:
            tree = args.against.resolve()
            sides.append((lambda: start_p4sim(tree, args.device_id, against_env), extra, tree))
    try:
        for trial in range(args.trials):
            k = trial % len(sides)  # A B C, B C A, ...: no side always runs first
            by_trial.append({})
            for start, apply_extra, tree in sides[k:] + sides[:k]:
                sw = start()
                try:
                    if not args.no_push or not args.grpc_addr:
                        apply_lab(sw, apply_extra, tree)
                    tr = measure(sw, echo, args.election_id, args.rtt_n, aio, native, cxx, react)
                finally:
                    sw.stop()
                results.setdefault(tr.label, []).append(tr)
                by_trial[-1][tr.label] = tr.fig
                if args.grpc_addr:
                    args.election_id += 2  # the server keeps the highest id it has seen
    finally:
        echo.close()
        if aio is not None:
            aio.close()
        for e in (native, cxx, react):
            if e is not None:
                e.close()
    for trials in results.values():
        report(trials)
    if bmv2 is not None:
        side_by_side.table(TABLE_ROWS, by_trial, list(results))
    elif len(results) == 2:
        _ratios(*results.values())


if __name__ == "__main__":
    run(sys.argv[1:])
