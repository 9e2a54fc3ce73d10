"""Kind `p4sim-grpc`: p4sim-switch, the embedded switch as a P4Runtime server process.
Started here on the given interfaces (veths the pytest plugin or a lab makes) unless
--grpc-addr names one already running."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from controller.targets.base import Program
from controller.targets.config import ConfigError, TargetConfig
from controller.targets.switches import (
    DEFAULT_CPU_PORT,
    START_TIMEOUT_S,
    SwitchProcess,
    free_port,
    interface_args,
    spawn,
)

from .p4runtime import GRPC_OPTIONS, RemoteKind


def p4sim_switch_argv(
    program: str | os.PathLike,
    ports: Mapping[int, str],
    grpc_addr: str,
    device_id: int = 1,
    cpu_port: int = DEFAULT_CPU_PORT,
    port_rates: Mapping[int, float] | None = None,
) -> list[str]:
    """`port_rates`: egress bits/s of some ports (`--port-rate PORT=RATE`)."""
    exe = shutil.which("p4sim-switch") or str(Path(sys.executable).with_name("p4sim-switch"))
    rates = [
        a
        for port, bps in sorted((port_rates or {}).items())
        for a in ("--port-rate", f"{port}={round(bps)}")
    ]
    # --log-console: its log goes to the file we keep for failure reports.
    return [
        exe,
        str(program),
        "--device-id",
        str(device_id),
        *interface_args(ports),
        "--grpc-server-addr",
        grpc_addr,
        "--cpu-port",
        str(cpu_port),
        *rates,
        "--log-console",
    ]


def start_p4sim_switch(
    program: str | os.PathLike,
    ports: Mapping[int, str] | None = None,
    *,
    device_id: int = 1,
    cpu_port: int = DEFAULT_CPU_PORT,
    grpc_addr: str | None = None,
    log_dir: str | os.PathLike | None = None,
    netns: str | None = None,
    timeout: float = START_TIMEOUT_S,
    port_rates: Mapping[int, float] | None = None,
) -> SwitchProcess:
    """`p4sim-switch PROGRAM -i P@IF ... --grpc-server-addr ADDR` as a child process."""
    addr = grpc_addr or f"127.0.0.1:{free_port()}"
    argv = p4sim_switch_argv(program, ports or {}, addr, device_id, cpu_port, port_rates)
    return spawn(KIND.name, "p4sim-switch", argv, addr, device_id, log_dir, netns, timeout)


class P4SimGrpcKind(RemoteKind):
    name = "p4sim-grpc"
    help = "p4sim-switch over P4Runtime (started here on veths unless --grpc-addr)"
    options = GRPC_OPTIONS  # its program is P4 source: no --p4-artifacts
    switch_kind = "p4sim-grpc"
    loads_program = True  # p4sim-switch PROGRAM compiles and runs it before it answers

    def start(
        self, cfg: TargetConfig, ports: Mapping[int, str], *, log_dir=None, netns=None
    ) -> SwitchProcess:
        source = cfg.program.source if isinstance(cfg.program, Program) else cfg.program
        if source is None:
            raise ConfigError("p4sim-switch runs P4 source; this program has none")
        return start_p4sim_switch(
            source,
            ports,
            device_id=cfg.device_id,
            cpu_port=cfg.cpu_port,
            log_dir=log_dir,
            netns=netns,
            port_rates=cfg.port_rates,
        )


KIND = P4SimGrpcKind()
