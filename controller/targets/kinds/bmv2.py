"""Kind `bmv2`: BMv2 simple_switch_grpc, started here (local binary, or a Docker image with
--bmv2-docker) on the given interfaces unless --grpc-addr names one already running. Its
program is P4Info + BMv2 JSON from p4c: --p4-artifacts DIR, else compiled here with the
p4c found beside BMv2 (build/p4, `make p4-bmv2`; again when a .p4 file is newer). The binaries
come from `controller.targets.toolchain` (PATH, or ROCELAB_BMV2_PREFIX=DIR)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from controller.targets.base import Program
from controller.targets.config import ConfigError, TargetConfig, artifacts_program
from controller.targets.registry import Option
from controller.targets.switches import (
    DEFAULT_CPU_PORT,
    START_TIMEOUT_S,
    SwitchProcess,
    SwitchStartError,
    free_port,
    interface_args,
    ready,
    spawn,
)
from controller.targets.toolchain import CLI, ensure_artifacts, is_ours, stale, toolchain

from .p4runtime import GRPC_OPTIONS, P4_ARTIFACTS, RemoteKind, open_remote

BMV2_DOCKER = Option(
    "--bmv2-docker", "run simple_switch_grpc in this Docker image (docker SDK)", cli=False
)  # the CLI never starts a switch


def bmv2_argv(
    ports: Mapping[int, str],
    grpc_addr: str,
    device_id: int = 1,
    cpu_port: int = DEFAULT_CPU_PORT,
    thrift_port: int | None = None,
    exe: str = "simple_switch_grpc",
) -> list[str]:
    """simple_switch_grpc with no program: the controller pushes P4Info + BMv2 JSON over
    P4Runtime (SetForwardingPipelineConfig). Its own options come before `--`, the gRPC
    target's after it."""
    argv = [exe, "--device-id", str(device_id), *interface_args(ports), "--no-p4"]
    if thrift_port is not None:  # parallel BMv2s must not share the default 9090
        argv += ["--thrift-port", str(thrift_port)]
    # 8 priority queues: BMv2 defaults to one and drops any packet with priority >= 1,
    # and roce_switch.p4 puts each traffic class in its own priority.
    return argv + [
        "--",
        "--grpc-server-addr",
        grpc_addr,
        "--cpu-port",
        str(cpu_port),
        "--priority-queues",
        "8",
    ]


def bmv2_available() -> str | None:
    """simple_switch_grpc when it (and its CLI) can run here, else None."""
    tc = toolchain()
    return None if tc.bmv2_problem() else str(tc.simple_switch_grpc)


def require_bmv2() -> str:
    """simple_switch_grpc, or SwitchStartError saying in one line why it cannot run here."""
    tc = toolchain()
    why = tc.bmv2_problem()
    if why:
        raise SwitchStartError(f"--target bmv2: {why}")
    return str(tc.simple_switch_grpc)


def start_bmv2(
    ports: Mapping[int, str] | None = None,
    *,
    device_id: int = 1,
    cpu_port: int = DEFAULT_CPU_PORT,
    log_dir: str | os.PathLike | None = None,
    netns: str | None = None,
    timeout: float = START_TIMEOUT_S,
) -> SwitchProcess:
    exe = require_bmv2()
    addr = f"127.0.0.1:{free_port()}"
    thrift = free_port()
    argv = bmv2_argv(ports or {}, addr, device_id, cpu_port, thrift, exe)
    sw = spawn(KIND.name, "simple_switch_grpc", argv, addr, device_id, log_dir, netns, timeout)
    sw.extra["thrift_port"] = thrift
    return sw


def queue_rates_pps(port_rates: Mapping[int, float], frame_bytes: int) -> dict[int, int]:
    """Egress bits/s as BMv2 queue rates: packets/s of `frame_bytes` frames (at least 1:
    BMv2's rate 0 means unlimited)."""
    return {p: max(1, round(bps / (8 * frame_bytes))) for p, bps in port_rates.items()}


def bmv2_set_queue_rates(sw: SwitchProcess, rates: Mapping[int, int]) -> None:
    """`set_queue_rate PPS PORT` through simple_switch_CLI (BMv2 has no command-line option
    for it): every priority queue of PORT sends at most PPS packets/s. Run it once a
    pipeline is installed: the CLI reads the switch's JSON when it starts."""
    thrift = sw.extra.get("thrift_port")
    if thrift is None:
        raise SwitchStartError(f"{sw.kind}: no Thrift port known, cannot set queue rates")
    cmds = "".join(
        f"set_queue_rate {int(pps)} {int(port)}\n" for port, pps in sorted(rates.items())
    )
    cli = CLI if sw.container is not None else str(toolchain().simple_switch_cli or CLI)
    argv = [cli, "--thrift-port", str(thrift)]
    if sw.container is not None:
        rc, out = sw.container.exec_run(  # type: ignore[attr-defined]
            ["sh", "-c", f"printf '{cmds}' | {' '.join(argv)}"]
        )
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


def start_bmv2_docker(
    image: str,
    ports: Mapping[int, str] | None = None,
    *,
    device_id: int = 1,
    cpu_port: int = DEFAULT_CPU_PORT,
    timeout: float = START_TIMEOUT_S,
    client=None,
) -> SwitchProcess:
    """simple_switch_grpc inside `image`, sharing the host's network namespace so it sees the
    veth pairs we created and its gRPC port is reachable on 127.0.0.1."""
    client = client or docker_client(image)
    addr = f"127.0.0.1:{free_port()}"
    thrift = free_port()
    argv = bmv2_argv(ports or {}, addr, device_id, cpu_port, thrift)
    container = client.containers.run(
        # root in the container: the capabilities added apply to root only (the image's
        # default user, rocelab, gets none), and AF_PACKET on the veths needs NET_RAW.
        image,
        argv,
        detach=True,
        network_mode="host",
        cap_add=["NET_ADMIN", "NET_RAW"],
        user="root",
        name=f"rocelab-bmv2-{os.getpid()}-{addr.rsplit(':', 1)[-1]}",
        labels={"org.rocelab.owner-pid": str(os.getpid())},
    )
    return ready(
        SwitchProcess(
            f"{KIND.name} (docker {image})",
            addr,
            device_id,
            argv,
            Path(os.devnull),
            container=container,
            extra={"thrift_port": thrift},
        ),
        timeout,
    )


class Bmv2Kind(RemoteKind):
    name = "bmv2"
    help = "BMv2 simple_switch_grpc (started here on veths unless --grpc-addr; --p4-artifacts)"
    options = (*GRPC_OPTIONS, P4_ARTIFACTS, BMV2_DOCKER)
    switch_kind = "bmv2"

    def check(self, cfg: TargetConfig, context: str = "cli") -> None:
        if (
            context != "cli"
            and cfg.grpc_addr is None
            and not cfg.options.get("p4_artifacts")
            and not isinstance(cfg.program, Program)
        ):
            why = toolchain().p4c_problem()
            if why:
                raise ConfigError(
                    f"--target {self.name} needs --p4-artifacts DIR with the "
                    "P4Info and BMv2 JSON from p4c (make p4-bmv2 writes build/p4), "
                    f"or p4c here to compile it: {why}"
                )

    def program(self, cfg: TargetConfig) -> Program:
        """--p4-artifacts as given (recompiled first when this module compiled them and a
        .p4 file changed since); without them, cfg.program compiled by p4c into build/p4
        when stale. No p4c and no artifacts: p4sim's P4Info (enough to read a running
        switch; a push would be refused by BMv2)."""
        if isinstance(cfg.program, Program):
            return cfg.program
        art = cfg.options.get("p4_artifacts")
        tc = toolchain()
        if art:
            if is_ours(art) and tc.p4c_problem() is None and stale(cfg.program, art, tc):
                ensure_artifacts(cfg.program, art, tc)
            return artifacts_program(art)
        if tc.p4c_problem() is None:
            return artifacts_program(ensure_artifacts(cfg.program, tc=tc))
        return super().program(cfg)

    def prepare(self, cfg: TargetConfig) -> None:
        image = cfg.options.get("bmv2_docker")
        if image:
            docker_client(image)
        else:
            require_bmv2()

    def start(
        self, cfg: TargetConfig, ports: Mapping[int, str], *, log_dir=None, netns=None
    ) -> SwitchProcess:
        image = cfg.options.get("bmv2_docker")
        if image:
            if netns is not None:
                raise ConfigError("--bmv2-docker runs in the host's namespace, not in one")
            sw = start_bmv2_docker(image, ports, device_id=cfg.device_id, cpu_port=cfg.cpu_port)
        else:
            sw = start_bmv2(
                ports, device_id=cfg.device_id, cpu_port=cfg.cpu_port, log_dir=log_dir, netns=netns
            )
        # Queue rates need the pipeline (simple_switch_CLI reads its JSON): set at open.
        sw.extra["queue_rates_pps"] = queue_rates_pps(cfg.port_rates, cfg.rate_frame_bytes)
        return sw

    def open(self, cfg, program=None, process=None):
        if process is None and cfg.port_rates:
            raise ConfigError("BMv2 queue rates are set only on a switch started here")
        t = open_remote(cfg, program, process.grpc_addr if process is not None else None)
        pending = process.extra.pop("queue_rates_pps", None) if process is not None else None
        if pending and cfg.push:
            try:
                bmv2_set_queue_rates(process, pending)
            except BaseException:
                t.close()
                raise
        elif pending:
            process.extra["queue_rates_pps"] = pending  # no pipeline yet: at the next open
        return t


KIND = Bmv2Kind()
