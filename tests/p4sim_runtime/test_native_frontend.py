"""The native (grpc++) front end against grpc-python, the reference: the same requests,
hostile ones included, get the same status codes, messages, trailers and response bytes
from both; the native one stays bounded and up when clients misbehave. The whole P4Runtime
suite runs on it in the default (fast) run, and on grpc-python with `make test-reference`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import grpc
import p4rt_helpers
import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, Names, RawClient
from test_p4rt_pipeline import MAC2, MAC3, U, frame, table_entry, upd

from p4rtproto import code_pb2, p4runtime_pb2
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer, make_device_config, native

needs_native = pytest.mark.skipif(
    bool(native.unavailable_reason()), reason=f"native front end: {native.unavailable_reason()}"
)

P = p4runtime_pb2
DETAILS = "grpc-status-details-bin"


def _server(frontend: str, max_streams: int = 16) -> P4RuntimeServer:
    ports = PortSet()
    for n in range(1, 5):
        ports.add_inprocess(n)
    srv = P4RuntimeServer(
        device_id=1, cpu_port=CPU_PORT, ports=ports, frontend=frontend, max_streams=max_streams
    )
    srv.start("127.0.0.1:0")
    return srv


@pytest.fixture
def pair() -> Iterator[dict]:
    """{front end: (server, primary client, Names)} with l2_cpu.p4 committed on each."""
    out = {}
    try:
        for fe in ("grpc", "native"):
            srv = _server(fe)
            c = RawClient(f"127.0.0.1:{srv.port}")
            out[fe] = (srv, c, None)
            c.arbitrate((0, 1))
            assert c.get("arbitration").arbitration.status.code == code_pb2.OK
            c.set_pipeline(make_device_config(L2_PROGRAM))
            cfg = c.stub.GetForwardingPipelineConfig(
                P.GetForwardingPipelineConfigRequest(device_id=1)
            )
            out[fe] = (srv, c, Names(cfg.config.p4info))
        assert type(out["native"][0]._grpc).__name__ == "NativeServer"
        yield out
    finally:
        for srv, c, _ in out.values():
            c.close()
            srv.stop(grace=0)


def _raw(c: RawClient, method: str, data: bytes, streaming: bool = False) -> tuple:
    """(code, details, trailing status details, response bytes) of one raw call."""
    path = f"/p4.v1.P4Runtime/{method}" if "/" not in method else method
    try:
        if streaming:
            call = c.channel.unary_stream(
                path, request_serializer=None, response_deserializer=None
            )(data, timeout=10)
            body = tuple(call)
        else:
            body, call = c.channel.unary_unary(
                path, request_serializer=None, response_deserializer=None
            ).with_call(data, timeout=10)
        return call.code(), call.details() or "", _trailer(call), body
    except grpc.RpcError as exc:
        return exc.code(), exc.details(), _trailer(exc), None


def _trailer(call: object) -> bytes:
    return next((v for k, v in call.trailing_metadata() or () if k == DETAILS), b"")  # type: ignore[attr-defined]


def _cases(n: Names) -> list[tuple[str, bytes, bool]]:
    """(method, request bytes, server-streaming) sent to both front ends, in order."""
    good = table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "forward", {"port": b"\x02"})
    write = P.WriteRequest(device_id=1, election_id=P.Uint128(high=0, low=1))
    write.updates.append(upd(U.INSERT, good))
    twice = P.WriteRequest()
    twice.CopyFrom(write)
    twice.updates.append(upd(U.INSERT, good))  # after `write`: both ALREADY_EXISTS
    bad_table = P.WriteRequest(device_id=1, election_id=P.Uint128(low=1))
    bad_table.updates.add(type=U.INSERT).entity.table_entry.table_id = 12345
    read_all = P.ReadRequest(device_id=1)
    read_all.entities.add().table_entry.SetInParent()
    read_bad = P.ReadRequest(device_id=1)
    read_bad.entities.add().table_entry.table_id = 12345
    return [
        ("Capabilities", P.CapabilitiesRequest().SerializeToString(), False),
        ("Write", b"\xff\xff\xff", False),  # malformed: INVALID_ARGUMENT
        ("Write", write.SerializeToString(), False),  # OK
        ("Write", twice.SerializeToString(), False),  # UNKNOWN + per-update p4.v1.Error details
        ("Write", bad_table.SerializeToString(), False),
        ("Write", P.WriteRequest(device_id=7).SerializeToString(), False),  # NOT_FOUND
        ("Read", read_all.SerializeToString(), True),
        ("Read", read_bad.SerializeToString(), True),
        ("Read", b"\x0a\x05\x01", True),  # truncated: INVALID_ARGUMENT
        (
            "GetForwardingPipelineConfig",
            P.GetForwardingPipelineConfigRequest(device_id=9).SerializeToString(),
            False,
        ),
        ("SetForwardingPipelineConfig", b"\x12\x05ab", False),  # truncated
        (
            "SetForwardingPipelineConfig",
            P.SetForwardingPipelineConfigRequest(device_id=1).SerializeToString(),
            False,
        ),  # not primary
        ("NoSuchMethod", b"", False),  # UNIMPLEMENTED, "Method not found!"
        ("/other.Service/Write", b"", False),
    ]


def _outcomes(pair: dict) -> dict[str, list[tuple]]:
    out = {}
    for fe, (_, c, n) in pair.items():
        out[fe] = [_raw(c, m, d, s) for m, d, s in _cases(n)]
    return out


@needs_native
def test_every_unary_and_read_answer_is_the_reference_one(pair) -> None:
    got = _outcomes(pair)
    ref = got["grpc"]
    codes = [r[0] for r in ref]
    # the reference answers what each case is about (a case that tests nothing fails here)
    assert codes == [
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.OK,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.OK,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.UNIMPLEMENTED,
    ]
    assert ref[3][2] and ref[6][3], "batch error details and a non-empty Read answer"
    for i, (a, b) in enumerate(zip(ref, got["native"], strict=True)):
        assert a == b, (i, a, b)


@needs_native
def test_a_planted_adapter_bug_is_caught(pair, monkeypatch) -> None:
    """Negative control: a native adapter that drops trailing metadata differs from the reference."""
    monkeypatch.setattr(native._Context, "set_trailing_metadata", lambda self, md: None)
    got = _outcomes(pair)
    assert got["grpc"][3] != got["native"][3]


@needs_native
def test_oversize_message_is_resource_exhausted_on_both(pair) -> None:
    big = (
        b"\x0a" + b"\x80\x80\x80\x21" + bytes(65 << 20)
    )  # one 64+ MiB field: over the 64 MiB limit
    codes = {fe: _raw(c, "Write", big)[0] for fe, (_, c, _) in pair.items()}
    assert codes == {
        "grpc": grpc.StatusCode.RESOURCE_EXHAUSTED,
        "native": grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
    srv, c, _ = pair["native"]
    assert _raw(c, "Capabilities", b"")[0] == grpc.StatusCode.OK  # and it still serves


@needs_native
def test_stream_answers_are_the_reference_ones(pair) -> None:
    """Per-message StreamErrors keep the stream open; a bad arbitration ends it with the same status."""
    seen = {}
    for fe, (srv, c, n) in pair.items():
        out_md = n.metadata["packet_out"]
        c.packet_out(
            b"\x00" * 20, {99: b"\x01"}
        )  # unknown metadata id: a StreamError naming the packet
        err = c.get("error").error
        raw = P.StreamMessageRequest()
        c.stream_send(raw)  # an empty update: UNIMPLEMENTED StreamError
        err2 = c.get("error").error
        payload = frame(MAC2, MAC3, ethertype=0x88B5)
        c.packet_out(payload, {out_md["egress_port"]: b"\x03", out_md["pad"]: b"\x00"})
        assert srv.ports.ports[3].wait_output(2.0) == payload
        c.write(upd(U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "to_cpu")))
        f = frame(MAC3, MAC2, size=80)
        srv.ports.ports[2].inject(f)
        pin = c.get("packet").packet
        other = RawClient(f"127.0.0.1:{srv.port}")
        other.arbitrate((0, 5), device_id=3)  # wrong device: the stream ends NOT_FOUND
        closed = other.get("closed", timeout=5)
        other.close()
        seen[fe] = (
            err.SerializeToString(),
            err2.SerializeToString(),
            pin.SerializeToString(),
            closed.code(),
            closed.details(),
        )
    assert seen["grpc"][0] and seen["grpc"][3] == grpc.StatusCode.NOT_FOUND
    assert seen["grpc"] == seen["native"]


@needs_native
def test_stream_limit_and_disconnects_leave_the_native_server_clean() -> None:
    srv = _server("native", max_streams=3)
    clients: list[RawClient] = []
    try:
        for i in range(5):  # 2 more than max_streams: the surplus is refused, as on grpc-python
            c = RawClient(f"127.0.0.1:{srv.port}")
            clients.append(c)
            c.arbitrate((0, 10 + i))
        refused = [_answer(c) for c in clients]
        refused = [r for r in refused if isinstance(r, grpc.RpcError)]
        assert [e.code() for e in refused] == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
        assert "at most 3 StreamChannels" in refused[0].details()
        # the live ones go away abruptly, one mid-flood of PacketOuts it never reads back
        for _ in range(500):
            clients[0].packet_out(b"\x00" * 64, {})
        for c in clients:
            c.channel.close()
        deadline = time.monotonic() + 10
        while (srv._open_streams or srv._grpc._running) and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.05)
        assert srv._open_streams == 0 and not srv._grpc._running  # type: ignore[union-attr]
        c = RawClient(f"127.0.0.1:{srv.port}")  # the next client is served
        clients.append(c)
        c.arbitrate((0, 99))
        assert c.get("arbitration", timeout=5).arbitration.status.code == code_pb2.OK
    finally:
        for c in clients:
            c.close()
        srv.stop(grace=0)


def _answer(c: RawClient, timeout: float = 5.0) -> object:
    """The stream's first answer: an arbitration message, or the RpcError that ended it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for kind in ("arbitration", "closed"):
            if not c.inbox[kind].empty():
                return c.inbox[kind].get()
        time.sleep(0.01)
    raise AssertionError("no answer on the stream")


@needs_native
def test_read_cancelled_mid_answer_frees_the_call() -> None:
    """A Read whose client leaves after the first chunk: the call ends, the server serves on."""
    srv = _server("native")
    c = RawClient(f"127.0.0.1:{srv.port}")
    try:
        c.arbitrate((0, 1))
        c.get("arbitration")
        c.set_pipeline(make_device_config(L2_PROGRAM))
        srv.READ_CHUNK_BYTES = 64  # many small chunks (instance attribute: this server only)
        n = Names(
            c.stub.GetForwardingPipelineConfig(
                P.GetForwardingPipelineConfigRequest(device_id=1)
            ).config.p4info
        )
        c.write(
            *(
                upd(
                    U.INSERT,
                    table_entry(
                        n,
                        "l2_fwd",
                        {"hdr.ethernet.dst": i.to_bytes(6, "big")},
                        "forward",
                        {"port": b"\x01"},
                    ),
                )
                for i in range(1, 200)
            )
        )
        req = P.ReadRequest(device_id=1)
        req.entities.add().table_entry.SetInParent()
        it = c.stub.Read(req, timeout=10)
        assert next(it).entities
        it.cancel()
        deadline = time.monotonic() + 10
        while len(srv._grpc._running) > 1 and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.05)
        assert len(srv._grpc._running) == 1  # type: ignore[union-attr]  # only the StreamChannel
        assert len(c.read(req.entities[0])) == 199
    finally:
        c.close()
        srv.stop(grace=0)


@needs_native
def test_concurrent_rpc_limit_and_coexistence_with_grpc_python() -> None:
    """Past max_concurrent calls the native server answers RESOURCE_EXHAUSTED at once (as
    grpc-python's maximum_concurrent_rpcs); a grpc-python server runs in the same process."""
    release = threading.Event()
    inside = threading.Semaphore(0)  # one release per call that reached the handler

    def hold(req: bytes, ctx) -> bytes:
        inside.release()
        release.wait(30)
        return req[::-1]

    handler = grpc.method_handlers_generic_handler(
        "t.T", {"H": grpc.unary_unary_rpc_method_handler(hold)}
    )
    srv = native.serve(handler, "127.0.0.1:0", 1 << 20, 2)
    ref = grpc.server(__import__("concurrent.futures").futures.ThreadPoolExecutor(2))
    ref.add_generic_rpc_handlers((handler,))
    ref_port = ref.add_insecure_port("127.0.0.1:0")
    ref.start()
    try:
        ch = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
        call = ch.unary_unary("/t.T/H", request_serializer=None, response_deserializer=None)
        held = [call.future(b"ab", timeout=30) for _ in range(2)]
        # both held calls are inside the handler (not a sleep: under load they may take long)
        assert inside.acquire(timeout=30) and inside.acquire(timeout=30)
        with pytest.raises(grpc.RpcError) as exc:
            call(b"x", timeout=5)
        assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert exc.value.details() == "Concurrent RPC limit exceeded!"
        release.set()
        assert [f.result() for f in held] == [b"ba", b"ba"]
        # a slot is free once gRPC is done with the call (OnDone), which may trail the answer
        deadline = time.monotonic() + 30
        while srv._server.active and time.monotonic() < deadline:
            time.sleep(0.01)
        assert call(b"xyz", timeout=5) == b"zyx"
        rch = p4rt_helpers.channel(f"127.0.0.1:{ref_port}")
        assert (
            rch.unary_unary("/t.T/H", request_serializer=None, response_deserializer=None)(b"12")
            == b"21"
        )
        rch.close()
        ch.close()
    finally:
        release.set()
        srv.stop(0)
        ref.stop(0)


def test_missing_compiler_or_grpc_is_one_clear_line(monkeypatch, tmp_path) -> None:
    """No C++ compiler, or no pkg-config/libgrpc++: NativeUnavailable with one line saying
    what to install, from the library and from `p4sim-switch --frontend native`."""
    import subprocess
    import sys

    from p4sim.server.native import build

    monkeypatch.setattr(build, "_loaded", None)
    monkeypatch.setenv("CXX", "no-such-c++")
    assert (
        build.unavailable_reason()
        == "no C++ compiler ('no-such-c++' not found; apt-get install g++)"
    )
    with pytest.raises(native.NativeUnavailable, match="no C\\+\\+ compiler"):
        build.load()
    monkeypatch.delenv("CXX")
    monkeypatch.setenv("PKG_CONFIG_PATH", str(tmp_path))
    monkeypatch.setenv("PKG_CONFIG_LIBDIR", str(tmp_path))  # pkg-config finds no grpc++.pc
    assert (
        build.unavailable_reason()
        == "libgrpc++ not found by pkg-config (apt-get install libgrpc++-dev)"
    )
    env = {"PATH": "/usr/bin:/bin", "CXX": "no-such-c++", "HOME": str(tmp_path)}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "p4sim.server_cli",
            "--no-p4",
            "--frontend",
            "native",
            "--grpc-server-addr",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "p4sim-switch: --frontend native: no C++ compiler ('no-such-c++' not found; apt-get install g++)"
    ]
    with pytest.raises(ValueError, match="frontend 'nope'"):
        P4RuntimeServer(frontend="nope")


@needs_native
def test_read_ahead_is_bounded_while_a_handler_does_not_read() -> None:
    """A client streaming 1 MiB messages to a handler that is not reading: at most
    READ_AHEAD_BYTES (+ one message) wait in the server; the rest is held by HTTP/2 flow
    control on the wire. Then every message arrives, none lost."""
    seen: list[int] = []
    go = threading.Event()

    def sink(requests, ctx):
        go.wait(10)
        seen.append(ctx._call.buffered)  # what the read-ahead holds before the handler reads
        return str(sum(len(r) for r in requests)).encode()

    handler = grpc.method_handlers_generic_handler(
        "t.T", {"U": grpc.stream_unary_rpc_method_handler(sink)}
    )
    srv = native.serve(handler, "127.0.0.1:0", 4 << 20, 2)
    limit = native.load().READ_AHEAD_BYTES
    try:
        ch = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
        call = ch.stream_unary("/t.T/U", request_serializer=None, response_deserializer=None)
        n, size = 24, 1 << 20
        fut = call.future(iter([bytes(size)] * n), timeout=30)
        time.sleep(1.5)  # the client sends until flow control holds it
        go.set()
        assert fut.result() == str(n * size).encode()
        assert limit <= seen[0] <= limit + size, (
            seen,
            limit,
        )  # it did read ahead, and stopped at the bound
        ch.close()
    finally:
        go.set()
        srv.stop(0)
