"""Hostile SetForwardingPipelineConfig pushes: a bundle is a closed world, compiles are
bounded in time, memory and declared sizes, cancelled when the client goes away, and a
push never leaks. Each test here failed on the server before it compiled in a sandbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from p4rt_helpers import CPU_PORT, L2_PROGRAM, RawClient

from p4rtproto import p4runtime_pb2
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer, make_device_config
from p4sim.server.sandbox import Limits

SECRET = "TOPSECRET_4711 planted;"
VERIFY = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY
L2 = L2_PROGRAM.read_text()


def bundle(files: dict[str, str], main: str = "main.p4") -> bytes:
    return json.dumps({"format": "p4sim-source/1", "main": main, "files": files}).encode()


def primary(server: P4RuntimeServer) -> RawClient:
    c = RawClient(f"127.0.0.1:{server.port}", server.device_id)
    c.arbitrate((0, 1))
    assert c.get("arbitration").arbitration.status.code == 0
    return c


def refused(c: RawClient, config: bytes, timeout: float = 30) -> grpc.RpcError:
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=c.device_id, action=VERIFY)
    req.election_id.low = 1
    req.config.p4_device_config = config
    with pytest.raises(grpc.RpcError) as info:
        c.stub.SetForwardingPipelineConfig(req, timeout=timeout)
    return info.value


def no_server_path(details: str, client_named_a_path: bool = False) -> None:
    assert "p4sim-pipeline" not in details and "p4sim-verify" not in details, details
    assert "p4sim/arch" not in details, details
    if not client_named_a_path:  # else the client's own words come back, and that is fine
        assert "/tmp" not in details and str(Path(__file__).parent) not in details, details


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.p4"
    path.write_text(SECRET + "\n")
    return path


@pytest.mark.parametrize("how", ["absolute", "absolute_angle", "dotdot", "dotdot_nested"])
def test_include_outside_the_bundle_is_refused(server, secret, how) -> None:
    c = primary(server)
    rel = os.path.relpath(secret, "/tmp/x/y")  # '..' enough to climb out of a temp dir
    inc = {
        "absolute": f'"{secret}"',
        "absolute_angle": f"<{secret}>",
        "dotdot": f'"{rel}"',
        "dotdot_nested": f'"sub/../../{rel}"',
    }[how]
    err = refused(c, bundle({"main.p4": f"#include {inc}\n" + L2}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TOPSECRET" not in err.details() and "planted" not in err.details(), err.details()
    assert "refused" in err.details()
    no_server_path(err.details(), client_named_a_path=True)


def test_line_directive_cannot_quote_a_server_file(server, secret) -> None:
    # #line renames the file an error is reported in: the server must not read it back
    c = primary(server)
    err = refused(c, bundle({"main.p4": f'#line 1 "{secret}"\n@@@ syntax error\n'}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TOPSECRET" not in err.details(), err.details()


def test_include_inside_the_bundle_works_and_errors_are_relative(server) -> None:
    c = primary(server)
    c.set_pipeline(
        bundle(
            {"main.p4": '#include "inc/defs.p4"\n' + L2, "inc/defs.p4": "const bit<8> X = 1;\n"}
        ),
        action=VERIFY,
    )
    err = refused(
        c,
        bundle({"main.p4": '#include "inc/defs.p4"\n' + L2, "inc/defs.p4": "const bit<8> X = ;\n"}),
    )
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("the P4 program does not compile: inc/defs.p4:1:"), (
        err.details()
    )
    assert "const bit<8> X = ;" in err.details()  # the bundle's own line is quoted
    no_server_path(err.details())
    err = refused(c, bundle({"main.p4": '#include "nothere.p4"\n'}))
    assert "nothere.p4" in err.details()
    no_server_path(err.details())


def test_a_bundle_larger_than_a_pipe_goes_through_the_sandbox(server) -> None:
    # the child reads its bundle from a pipe (64 KiB): a larger one must not stall
    c = primary(server)
    t0 = time.monotonic()
    c.set_pipeline(bundle({"main.p4": "// " + "x" * (2 << 20) + "\n" + L2}), action=VERIFY)
    assert time.monotonic() - t0 < 15


def test_doubling_defines_are_bounded(server) -> None:
    c = primary(server)
    lines = ["#define A0 x x"] + [f"#define A{i} A{i - 1} A{i - 1}" for i in range(1, 41)] + ["A40"]
    t0 = time.monotonic()
    err = refused(c, bundle({"main.p4": "\n".join(lines) + "\n"}), timeout=30)
    assert err.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED), (
        err.details()
    )
    assert "tokens" in err.details()
    assert time.monotonic() - t0 < 25


def fan_out(depth: int = 40) -> bytes:
    """Each file includes the next twice: 2**depth includes, no output token at all."""
    files = {f"f{i}.p4": f'#include "f{i + 1}.p4"\n#include "f{i + 1}.p4"\n' for i in range(depth)}
    files[f"f{depth}.p4"] = "\n"
    return bundle(files, main="f0.p4")


@pytest.fixture
def tight_server():
    srv = P4RuntimeServer(
        device_id=1,
        cpu_port=CPU_PORT,
        ports=PortSet(),
        limits=Limits(compile_timeout_s=8, compile_memory_mb=512),
    )
    srv.start("127.0.0.1:0")
    yield srv
    srv.stop(grace=0)


def test_compile_time_is_bounded(tight_server) -> None:
    c = primary(tight_server)
    t0 = time.monotonic()
    err = refused(c, fan_out(), timeout=30)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.details()
    assert 7 < time.monotonic() - t0 < 30  # the limit, not something else, ended it
    # and a good program still goes in afterwards
    c.set_pipeline(make_device_config(L2_PROGRAM))


def _sandbox_children(parent: int) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"p4sim.server.sandbox" in cmd:
            pids.append(int(d))
    return pids


def test_compile_is_cancelled_when_the_client_goes_away(server) -> None:
    c = primary(server)
    err = refused(c, fan_out(), timeout=1.0)
    assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    deadline = time.monotonic() + 5
    while _sandbox_children(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sandbox_children(os.getpid()) == []
    # the server takes the next push at once (the compile slot was freed)
    c.set_pipeline(make_device_config(L2_PROGRAM), action=VERIFY)


@pytest.mark.parametrize(
    "edit,what",
    [
        (
            ("register<bit<32>>(16) last_len;", "register<bit<32>>(32w0xFFFFFFFF) last_len;"),
            "register",
        ),
        (
            (
                "counter(512, CounterType.packets_and_bytes) port_rx;",
                "counter(32w0xFFFFFFF0, CounterType.packets_and_bytes) port_rx;",
            ),
            "counter",
        ),
        (
            (
                "    ethernet_t   ethernet;\n",
                "    ethernet_t   ethernet;\n    ethernet_t[100000000] stack;\n",
            ),
            "header stack",
        ),
        (("size = 65536;", "size = 1073741824;"), "table"),
    ],
)
def test_declared_sizes_are_bounded(server, edit, what) -> None:
    assert edit[0] in L2
    c = primary(server)
    err = refused(c, bundle({"main.p4": L2.replace(*edit)}))
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.details()
    assert what in err.details() and "at most" in err.details()


def test_verify_pushes_do_not_leak(server) -> None:
    """Each push compiles in a new temp dir: nothing keyed by its paths may stay behind
    (the preprocessor's token cache did: 2.3 MB per push of roce_switch.p4). The bundle:
    the l2 program including 20 files of #defines (many tokens, quick to compile)."""
    import gc
    import tracemalloc

    c = primary(server)
    files = {
        f"d{i}.p4": "".join(f"#define D{i}_{k} ({k} + {i})\n" for k in range(100))
        for i in range(20)
    }
    files["main.p4"] = "".join(f'#include "d{i}.p4"\n' for i in range(20)) + L2
    cfg = bundle(files)
    tracemalloc.start()  # before the warm-up: what a push replaces counts as freed
    try:
        c.set_pipeline(cfg, action=VERIFY)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            c.set_pipeline(cfg, action=VERIFY)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000, f"{grown} bytes kept after 3 VERIFY pushes"


def test_sigterm_stops_the_switch_during_a_compile() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "p4sim.server_cli",
            "--no-p4",
            "--device-id",
            "1",
            "--grpc-server-addr",
            "127.0.0.1:0",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        port = int(line.split("127.0.0.1:")[1].split()[0])
        c = RawClient(f"127.0.0.1:{port}", 1)
        c.arbitrate((0, 1))
        c.get("arbitration", timeout=10)
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=1, action=VERIFY)
        req.election_id.low = 1
        req.config.p4_device_config = fan_out()
        fut = c.stub.SetForwardingPipelineConfig.future(req, timeout=60)
        time.sleep(1.5)
        assert proc.poll() is None and not fut.done()
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - t0 < 5
        c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
