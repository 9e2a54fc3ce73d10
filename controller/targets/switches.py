"""Switch processes a target kind starts (p4sim-switch, simple_switch_grpc, ...): the part
every such kind shares. Each kind module (controller/targets/kinds/) builds its own command
line and calls `spawn`; the pytest plugin and the lab get a `SwitchProcess` back.

`spawn` picks the log file, starts the process in its own session (so `close()` stops its
whole group), waits until its gRPC server answers, and raises `SwitchStartError` with the
tail of its log if it dies or stays silent.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    kind: str  # the name of the target kind that started it
    grpc_addr: str
    device_id: int
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen | None = None
    container: object | None = None  # docker.models.containers.Container
    extra: dict[str, Any] = field(default_factory=dict)  # the kind's own state (ports, ...)
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
                    f"{sw.log_tail()}"
                )
            try:
                grpc.channel_ready_future(channel).result(timeout=0.5)
                return
            except grpc.FutureTimeoutError:
                pass
            if time.monotonic() > deadline:
                sw.close()
                raise SwitchStartError(
                    f"{sw.kind} switch did not answer on {sw.grpc_addr} within {timeout:.0f} s:\n"
                    f"{sw.log_tail()}"
                )


def log_file(log_dir: str | os.PathLike | None, stem: str) -> Path:
    d = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="rocelab-switch-"))
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{stem}.log"


def spawn(
    kind: str,
    stem: str,
    argv: list[str],
    addr: str,
    device_id: int,
    log_dir: str | os.PathLike | None = None,
    netns: str | None = None,
    timeout: float = START_TIMEOUT_S,
) -> SwitchProcess:
    """Start a switch process (in `netns` when given), its output in a log file, and wait
    until its P4Runtime server answers."""
    if netns is not None:
        argv = ["ip", "netns", "exec", netns, *argv]
    log = log_file(log_dir, f"{stem}-{os.getpid()}-{addr.rsplit(':', 1)[-1]}")
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return ready(SwitchProcess(kind, addr, device_id, argv, log, proc=proc), timeout)


def ready(sw: SwitchProcess, timeout: float = START_TIMEOUT_S) -> SwitchProcess:
    """`sw` once its server answers; stopped (and the error raised) if it never does."""
    try:
        wait_ready(sw, timeout)
    except BaseException:
        sw.close()
        raise
    return sw
