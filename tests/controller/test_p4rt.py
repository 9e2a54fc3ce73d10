"""p4rtproto.client: the connection (fails fast, waits for the server on close, keeps large error trailers,
TLS and mutual TLS) and the `rocelab` target flags."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.targets import from_p4
from p4rtproto import p4runtime_pb2
from p4rtproto.client import Connection, tls_credentials
from p4rtproto.errors import P4RuntimeError
from p4sim.runtime.ports import PortSet
from p4sim.server import P4RuntimeServer

# ---------------------------------------------------------------- connection and CLI

ROOT = Path(__file__).resolve().parents[2]
L2 = ROOT / "tests" / "p4sim_runtime" / "programs" / "l2_cpu.p4"
LAB = ROOT / "controller" / "examples" / "lab.yaml"
ROCELAB = [sys.executable, "-m", "controller.cli"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when we return: nobody listens there


def _start_switch(*extra: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "p4sim.server_cli",
            "--no-p4",
            "--grpc-server-addr",
            "127.0.0.1:0",
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stderr.readline()
    if "serving" not in line:
        proc.kill()
        raise AssertionError(f"p4sim-switch did not start: {line}{proc.stderr.read()}")
    return proc, int(line.split("127.0.0.1:")[1].split()[0])


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_unreachable_server_fails_fast_in_one_line():
    port = _closed_port()
    t0 = time.monotonic()
    r = subprocess.run(
        [*ROCELAB, "counters", "--grpc-addr", f"127.0.0.1:{port}", "--connect-timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"127.0.0.1:{port}" in r.stderr and "UNAVAILABLE" in r.stderr
    assert elapsed < 15  # interpreter start + 1 s, not the 10 s default nor a hang


@pytest.mark.parametrize(
    "argv",
    [
        ["--device-id", "-1"],
        ["--device-id", str(1 << 64)],
        ["--election-id", "0"],
        ["--election-id", str(1 << 128)],
        ["--port-map", "600=veth0"],
        ["--port-map", "x"],
        ["--grpc-addr", "127.0.0.1:70000"],
        ["--grpc-addr", "nohostport"],
    ],
)
def test_out_of_range_ids_and_ports_are_usage_errors(argv):
    r = subprocess.run([*ROCELAB, "counters", *argv], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (argv, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_packet_out_port_range_and_switch_flags():
    r = subprocess.run(
        [*ROCELAB, "packet-out", "--port", "512", "00"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and "0..511" in r.stderr
    for argv in (
        ["--device-id", "-2"],
        ["--cpu-port", "0"],
        ["--cpu-port", "512"],
        ["-i", "600@veth0"],
        ["--grpc-server-addr", "127.0.0.1:99999"],
        ["--grpc-server-ssl"],
        ["--grpc-server-cert", "x.pem"],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "p4sim.server_cli", "--no-p4", *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 2, (argv, r.stderr)
        assert "Traceback" not in r.stderr


def test_apply_against_a_default_started_p4sim_switch():
    # no --device-id on either side: both default to 0, as simple_switch_grpc does
    proc, port = _start_switch()
    try:
        r = subprocess.run(
            [*ROCELAB, "apply", str(LAB), "--grpc-addr", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert r.returncode == 0, r.stderr
        assert "wrote" in r.stdout
    finally:
        _stop(proc)


def test_per_update_errors_of_a_large_batch_survive():
    # 600 failing updates: their google.rpc.Status trailer is ~40 KB, beyond gRPC's
    # default 16 KiB metadata limit; the client raises grpc.max_metadata_size
    srv = P4RuntimeServer(device_id=0, ports=PortSet())
    srv.start("127.0.0.1:0")
    try:
        conn = Connection(f"127.0.0.1:{srv.port}")
        prog = from_p4(L2)
        conn.set_pipeline(prog.p4info, prog.device_config)
        ups = []
        for i in range(600):
            u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
            u.entity.table_entry.table_id = 0x02FFFF00 + (i % 7)  # no such table
            ups.append(u)
        with pytest.raises(P4RuntimeError) as info:
            conn.write(ups)
        assert len(info.value.updates) == 600
        assert {c for c, _ in info.value.updates} == {"NOT_FOUND"}
        conn.close()
    finally:
        srv.stop(grace=0)


def test_close_waits_until_the_server_dropped_the_stream():
    srv = P4RuntimeServer(device_id=0, ports=PortSet())
    srv.start("127.0.0.1:0")
    try:
        for _ in range(20):  # same election id at once after each close
            conn = Connection(f"127.0.0.1:{srv.port}", election_id=7)
            conn.close()
            assert not any(r.streams for r in srv._roles.values())
    finally:
        srv.stop(grace=0)


# ---------------------------------------------------------------- TLS


def _openssl(tmp: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    """A throw-away CA, a server certificate for 127.0.0.1 and a client certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make test certificates")
    d = tmp_path_factory.mktemp("pki")
    _openssl(
        d,
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=rocelab test CA",
    )
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for who in ("server", "client"):
        _openssl(
            d,
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{who}.key",
            "-out",
            f"{who}.csr",
            "-subj",
            f"/CN=rocelab {who}",
        )
        _openssl(
            d,
            "x509",
            "-req",
            "-in",
            f"{who}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{who}.pem",
            "-days",
            "2",
            "-extfile",
            "san.cnf",
        )
    return d


def test_tls_server_and_client(pki):
    proc, port = _start_switch(
        "--grpc-server-ssl",
        "--grpc-server-cert",
        str(pki / "server.pem"),
        "--grpc-server-key",
        str(pki / "server.key"),
    )
    try:
        conn = Connection(
            f"127.0.0.1:{port}",
            credentials=tls_credentials(str(pki / "ca.pem")),
            connect_timeout_s=10,
        )
        assert conn.stub.Capabilities(
            p4runtime_pb2.CapabilitiesRequest(), timeout=5
        ).p4runtime_api_version
        conn.close()
        with pytest.raises(P4RuntimeError) as info:  # plain text to a TLS port
            Connection(f"127.0.0.1:{port}", connect_timeout_s=1)
        assert info.value.code == "UNAVAILABLE"
        r = subprocess.run(
            [
                *ROCELAB,
                "counters",
                "--grpc-addr",
                f"127.0.0.1:{port}",
                "--no-push",
                "--grpc-ssl",
                "--grpc-ca",
                str(pki / "ca.pem"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        # connected and arbitrated over TLS; there is no pipeline yet, which is its one-line error
        assert r.returncode == 1 and "pipeline" in r.stderr and "UNAVAILABLE" not in r.stderr, (
            r.stderr
        )
    finally:
        _stop(proc)


def test_mutual_tls_refuses_a_client_without_a_certificate(pki):
    proc, port = _start_switch(
        "--grpc-server-ssl",
        "--grpc-server-cert",
        str(pki / "server.pem"),
        "--grpc-server-key",
        str(pki / "server.key"),
        "--grpc-server-cacert",
        str(pki / "ca.pem"),
        "--grpc-server-with-client-auth",
    )
    try:
        with pytest.raises(P4RuntimeError):
            Connection(
                f"127.0.0.1:{port}",
                credentials=tls_credentials(str(pki / "ca.pem")),
                connect_timeout_s=2,
            )
        conn = Connection(
            f"127.0.0.1:{port}",
            connect_timeout_s=10,
            credentials=tls_credentials(
                str(pki / "ca.pem"), str(pki / "client.pem"), str(pki / "client.key")
            ),
        )
        conn.close()
    finally:
        _stop(proc)
