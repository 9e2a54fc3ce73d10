"""Start P4Runtime switches as processes: p4sim-switch, BMv2 simple_switch_grpc (local
binary or a Docker container). Used by the pytest plugin and by the lab.

Each launcher picks free local ports, waits until the gRPC server answers, and returns a
`SwitchProcess` whose `close()` stops it. A switch that dies while starting raises
`SwitchStartError` with the tail of its log.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from .netns import stop_process

DEFAULT_CPU_PORT = 255
START_TIMEOUT_S = 60.0


class SwitchStartError(RuntimeError):
    pass


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def interface_args(ports: Mapping[int, str]) -> list[str]:
    """`-i PORT@IFACE` for each port, the syntax p4sim-switch and simple_switch share."""
    args: list[str] = []
    for port, iface in sorted(ports.items()):
        args += ["-i", f"{port}@{iface}"]
    return args


@dataclass
class SwitchProcess:
    kind: str  # "p4sim" | "bmv2" | "bmv2-docker"
    grpc_addr: str
    device_id: int
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen | None = None
    container: object | None = None  # docker.models.containers.Container
    thrift_port: int | None = None  # BMv2's runtime CLI port
    _closed: bool = field(default=False, repr=False)

    def log_tail(self, lines: int = 20) -> str:
        if self.container is not None:
            with contextlib.suppress(Exception):
                return self.container.logs(tail=lines).decode(errors="replace")  # type: ignore[attr-defined]
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        if self.container is not None:
            with contextlib.suppress(Exception):
                self.container.reload()  # type: ignore[attr-defined]
                return self.container.status == "running"  # type: ignore[attr-defined]
            return False
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.proc is not None:
            stop_process(self.proc)
        if self.container is not None:
            with contextlib.suppress(Exception):
                self.container.stop(timeout=5)  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                self.container.remove(force=True)  # type: ignore[attr-defined]

    def __enter__(self) -> SwitchProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_ready(sw: SwitchProcess, timeout: float = START_TIMEOUT_S) -> None:
    """Block until the gRPC server accepts a connection; raise if the switch dies first."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(sw.grpc_addr) as channel:
        while True:
            if not sw.alive():
                raise SwitchStartError(
                    f"{sw.kind} switch exited while starting ({' '.join(sw.argv)}):\n"
                    f"{sw.log_tail()}")
            try:
                grpc.channel_ready_future(channel).result(timeout=0.5)
                return
            except grpc.FutureTimeoutError:
                pass
            if time.monotonic() > deadline:
                sw.close()
                raise SwitchStartError(
                    f"{sw.kind} switch did not answer on {sw.grpc_addr} within {timeout:.0f} s:\n"
                    f"{sw.log_tail()}")


def _log_file(log_dir: str | os.PathLike | None, stem: str) -> Path:
    d = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="rocelab-switch-"))
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{stem}.log"


def p4sim_switch_argv(program: str | os.PathLike, ports: Mapping[int, str], grpc_addr: str,
                      device_id: int = 1, cpu_port: int = DEFAULT_CPU_PORT,
                      port_rates: Mapping[int, float] | None = None) -> list[str]:
    """`port_rates`: egress bits/s of some ports (`--port-rate PORT=RATE`)."""
    exe = shutil.which("p4sim-switch") or str(Path(sys.executable).with_name("p4sim-switch"))
    rates = [a for port, bps in sorted((port_rates or {}).items())
             for a in ("--port-rate", f"{port}={round(bps)}")]
    # --log-console: its log goes to the file we keep for failure reports.
    return [exe, str(program), "--device-id", str(device_id), *interface_args(ports),
            "--grpc-server-addr", grpc_addr, "--cpu-port", str(cpu_port), *rates, "--log-console"]


def start_p4sim_switch(program: str | os.PathLike, ports: Mapping[int, str] | None = None, *,
                       device_id: int = 1, cpu_port: int = DEFAULT_CPU_PORT,
                       grpc_addr: str | None = None, log_dir: str | os.PathLike | None = None,
                       netns: str | None = None, timeout: float = START_TIMEOUT_S,
                       port_rates: Mapping[int, float] | None = None) -> SwitchProcess:
    """`p4sim-switch PROGRAM -i P@IF ... --grpc-server-addr ADDR` as a child process."""
    addr = grpc_addr or f"127.0.0.1:{free_port()}"
    argv = p4sim_switch_argv(program, ports or {}, addr, device_id, cpu_port, port_rates)
    return _spawn("p4sim", "p4sim-switch", argv, addr, device_id, log_dir, netns, timeout)


def _spawn(kind: str, stem: str, argv: list[str], addr: str, device_id: int,
           log_dir: str | os.PathLike | None, netns: str | None, timeout: float
           ) -> SwitchProcess:
    """Start a switch process (in `netns` when given), its output in a log file, and wait
    until its P4Runtime server answers."""
    if netns is not None:
        argv = ["ip", "netns", "exec", netns, *argv]
    log = _log_file(log_dir, f"{stem}-{os.getpid()}-{addr.rsplit(':', 1)[-1]}")
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return _ready(SwitchProcess(kind, addr, device_id, argv, log, proc=proc), timeout)


def _ready(sw: SwitchProcess, timeout: float) -> SwitchProcess:
    try:
        wait_ready(sw, timeout)
    except BaseException:
        sw.close()
        raise
    return sw


def bmv2_argv(ports: Mapping[int, str], grpc_addr: str, device_id: int = 1,
              cpu_port: int = DEFAULT_CPU_PORT, thrift_port: int | None = None,
              exe: str = "simple_switch_grpc") -> list[str]:
    """simple_switch_grpc with no program: the controller pushes P4Info + BMv2 JSON over
    P4Runtime (SetForwardingPipelineConfig). Its own options come before `--`, the gRPC
    target's after it."""
    argv = [exe, "--device-id", str(device_id), *interface_args(ports), "--no-p4"]
    if thrift_port is not None:  # parallel BMv2s must not share the default 9090
        argv += ["--thrift-port", str(thrift_port)]
    # 8 priority queues: BMv2 defaults to one and drops any packet with priority >= 1,
    # and roce_switch.p4 puts each traffic class in its own priority.
    return argv + ["--", "--grpc-server-addr", grpc_addr, "--cpu-port", str(cpu_port),
                   "--priority-queues", "8"]


def bmv2_available() -> str | None:
    return shutil.which("simple_switch_grpc")


def require_bmv2() -> str:
    exe = bmv2_available()
    if exe is None:
        raise SwitchStartError("--target bmv2: simple_switch_grpc is not on PATH "
                               "(install BMv2, or use --bmv2-docker IMAGE, e.g. rocelab:latest "
                               "from docker/Dockerfile)")
    return exe


def start_bmv2(ports: Mapping[int, str] | None = None, *, device_id: int = 1,
               cpu_port: int = DEFAULT_CPU_PORT, log_dir: str | os.PathLike | None = None,
               netns: str | None = None, timeout: float = START_TIMEOUT_S) -> SwitchProcess:
    exe = require_bmv2()
    addr = f"127.0.0.1:{free_port()}"
    thrift = free_port()
    argv = bmv2_argv(ports or {}, addr, device_id, cpu_port, thrift, exe)
    sw = _spawn("bmv2", "simple_switch_grpc", argv, addr, device_id, log_dir, netns, timeout)
    sw.thrift_port = thrift
    return sw


def bmv2_set_queue_rates(sw: SwitchProcess, rates: Mapping[int, int]) -> None:
    """`set_queue_rate PPS PORT` through simple_switch_CLI (BMv2 has no command-line option
    for it): every priority queue of PORT sends at most PPS packets/s. Run it once a
    pipeline is installed: the CLI reads the switch's JSON when it starts."""
    if sw.thrift_port is None:
        raise SwitchStartError(f"{sw.kind}: no Thrift port known, cannot set queue rates")
    cmds = "".join(f"set_queue_rate {int(pps)} {int(port)}\n" for port, pps in sorted(rates.items()))
    argv = ["simple_switch_CLI", "--thrift-port", str(sw.thrift_port)]
    if sw.container is not None:
        rc, out = sw.container.exec_run(  # type: ignore[attr-defined]
            ["sh", "-c", f"printf '{cmds}' | {' '.join(argv)}"])
        text = out.decode(errors="replace") if isinstance(out, bytes) else str(out)
    else:
        try:
            done = subprocess.run(argv, input=cmds, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SwitchStartError(f"{' '.join(argv)}: {e}") from None
        rc, text = done.returncode, done.stdout + done.stderr
    if rc != 0 or "Error" in text or "Invalid" in text:
        raise SwitchStartError(f"{' '.join(argv)} < {cmds!r} failed ({rc}):\n{text[-2000:]}")


def docker_client(image: str):
    """A connected docker SDK client, or SwitchStartError saying why not."""
    try:
        import docker  # the `docker` SDK from the test extra
    except ImportError as e:  # pragma: no cover - the test extra installs it
        raise SwitchStartError("--bmv2-docker needs the `docker` Python package") from e
    try:
        client = docker.from_env()
        client.ping()
    except Exception as e:  # docker.errors.DockerException and connection errors
        raise SwitchStartError(f"--bmv2-docker {image}: no Docker engine reachable ({e})") from e
    return client


def start_bmv2_docker(image: str, ports: Mapping[int, str] | None = None, *,
                      device_id: int = 1, cpu_port: int = DEFAULT_CPU_PORT,
                      timeout: float = START_TIMEOUT_S, client=None) -> SwitchProcess:
    """simple_switch_grpc inside `image`, sharing the host's network namespace so it sees the
    veth pairs we created and its gRPC port is reachable on 127.0.0.1."""
    client = client or docker_client(image)
    addr = f"127.0.0.1:{free_port()}"
    thrift = free_port()
    argv = bmv2_argv(ports or {}, addr, device_id, cpu_port, thrift)
    container = client.containers.run(
        image, argv, detach=True, network_mode="host", cap_add=["NET_ADMIN", "NET_RAW"],
        name=f"rocelab-bmv2-{os.getpid()}-{addr.rsplit(':', 1)[-1]}",
        labels={"org.rocelab.owner-pid": str(os.getpid())})
    return _ready(SwitchProcess("bmv2-docker", addr, device_id, argv, Path(os.devnull),
                                container=container, thrift_port=thrift), timeout)
