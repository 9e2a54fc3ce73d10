"""pytest plugin: choose the target a test runs against, without editing the test.

Registered through pyproject's `pytest11` entry point. A data-plane test takes the
`target` fixture (a `controller.targets.Target` with the program installed and nothing
else) and `target_ports` (the data ports it may use); it never asks which target it got.

    pytest tests/targets                                     # in-process p4sim (default)
    pytest tests/targets --target p4sim-grpc                 # p4sim-switch over P4Runtime,
                                                             # on veth pairs made here (root)
    pytest tests/targets --target p4sim-grpc --port-map 1=veth1,2=veth2
    pytest tests/targets --target bmv2 --p4-artifacts build/p4 [--bmv2-docker rocelab:latest]
    pytest tests/targets --target hw --grpc-addr SWITCH:9559 --port-map 1=enp1s0f0,... \\
        --p4-artifacts DIR                                   # docs/bringup.md

--port-map names the interfaces the tests send and receive on (`NETNS/IFACE` for one in a
namespace). When the plugin starts the switch itself it attaches it to the veth peers of
those interfaces. Tests that cannot run on some target carry a marker saying why
(`virtual_time`: needs the in-process p4sim's virtual clock) and are skipped there with
that one-line reason. On every switch the plugin runs itself, port 4's egress is slowed to
100 frames/s (`target_rate_limit`, for overload tests; config.RATE_LIMITED_PORT).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .config import (
    DEFAULT_PORTS,
    RATE_LIMITED_BPS,
    RATE_LIMITED_PORT,
    RATE_LIMITED_PPS,
    TARGET_KINDS,
    ConfigError,
    PortRef,
    TargetConfig,
    artifacts_program,
    parse_port_map,
)

VIRTUAL_TIME_REASON = "needs virtual time (in-process p4sim only)"


def _env(name: str, default: str | None = None) -> str | None:
    """Every option can also come from the environment: ROCELAB_TARGET, ROCELAB_GRPC_ADDR,
    ROCELAB_DEVICE_ID, ROCELAB_PORT_MAP, ROCELAB_P4_ARTIFACTS, ROCELAB_P4_PROGRAM,
    ROCELAB_BMV2_DOCKER (the command line wins)."""
    return os.environ.get(f"ROCELAB_{name}", default)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocelab", "rocelab targets (also ROCELAB_<OPTION> variables)")
    group.addoption("--target", default=_env("TARGET", "p4sim"), choices=list(TARGET_KINDS),
                    help="data-plane target for tests taking the `target` fixture")
    group.addoption("--grpc-addr", default=_env("GRPC_ADDR"),
                    help="P4Runtime endpoint host:port (default for p4sim-grpc and bmv2: "
                         "start a switch here on a free port)")
    group.addoption("--device-id", type=int, default=int(_env("DEVICE_ID", "1") or 1),
                    help="P4Runtime device id")
    group.addoption("--port-map", default=_env("PORT_MAP"),
                    help="switch port to the interface tests use, e.g. 1=veth1,2=ns1/eth0")
    group.addoption("--p4-artifacts", default=_env("P4_ARTIFACTS"),
                    help="directory with P4Info and BMv2 JSON compiled elsewhere (p4c)")
    group.addoption("--p4-program", default=_env("P4_PROGRAM"),
                    help="P4 source for p4sim targets (default p4src/roce_switch.p4)")
    group.addoption("--bmv2-docker", default=_env("BMV2_DOCKER"),
                    help="run simple_switch_grpc in this Docker image (docker SDK)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "virtual_time: " + VIRTUAL_TIME_REASON)
    cfg = _config_from_options(config)
    try:
        cfg.validate()
    except ConfigError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[_CONFIG_KEY] = cfg


def pytest_report_header(config: pytest.Config) -> str:
    cfg = config.stash[_CONFIG_KEY]
    where = cfg.grpc_addr or ("in-process" if cfg.kind == "p4sim" else "started by the plugin")
    ports = ",".join(f"{p}={r}" for p, r in sorted(cfg.port_map.items())) or "-"
    return f"rocelab target: {cfg.kind} ({where}); port map: {ports}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cfg = config.stash[_CONFIG_KEY]
    if cfg.virtual_time:
        return
    skip = pytest.mark.skip(reason=f"{VIRTUAL_TIME_REASON}; --target {cfg.kind}")
    for item in items:
        if item.get_closest_marker("virtual_time") is not None:
            item.add_marker(skip)


_CONFIG_KEY = pytest.StashKey[TargetConfig]()


def _config_from_options(config: pytest.Config) -> TargetConfig:
    opt = config.getoption
    try:
        port_map = parse_port_map(opt("--port-map"))
    except ConfigError as e:
        raise pytest.UsageError(str(e)) from None
    cfg = TargetConfig(kind=opt("--target"), grpc_addr=opt("--grpc-addr"),
                       device_id=opt("--device-id"), port_map=port_map,
                       p4_artifacts=Path(opt("--p4-artifacts")) if opt("--p4-artifacts") else None,
                       bmv2_docker=opt("--bmv2-docker"))
    if opt("--p4-program"):
        cfg.program = Path(opt("--p4-program"))
    return cfg


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def target_config(pytestconfig: pytest.Config) -> TargetConfig:
    """The parsed --target/--grpc-addr/--port-map/... options."""
    return pytestconfig.stash[_CONFIG_KEY]


@pytest.fixture(scope="session")
def target_program(target_config: TargetConfig):
    """The program every `target` gets: P4 source (p4sim kinds) or P4Info + BMv2 JSON."""
    from controller.targets import from_p4

    if target_config.p4_artifacts is not None and target_config.kind in ("bmv2", "hw"):
        return artifacts_program(target_config.p4_artifacts)
    return from_p4(target_config.program)


@pytest.fixture(scope="session")
def target_switch(target_config: TargetConfig, target_program, tmp_path_factory
                  ) -> Iterator[RemoteSwitch | None]:
    """The switch outside this process (None for in-process p4sim): started here when no
    --grpc-addr was given, on veth pairs made here when no --port-map was given."""
    if target_config.kind == "p4sim":
        yield None
        return
    with contextlib.ExitStack() as stack:
        yield RemoteSwitch.open(target_config, stack,
                                log_dir=tmp_path_factory.mktemp("switch-logs"))


@pytest.fixture(scope="session")
def target_ports(target_config: TargetConfig, target_switch: RemoteSwitch | None) -> list[int]:
    """The data ports tests may send on and expect frames from (sorted)."""
    if target_switch is None:
        return list(DEFAULT_PORTS)
    if not target_switch.ports:
        pytest.skip("no data ports: with --grpc-addr, pass --port-map for the interfaces "
                    "cabled to the switch")
    return sorted(target_switch.ports)


@pytest.fixture
def target(target_config: TargetConfig, target_program, target_switch: RemoteSwitch | None):
    """A fresh target with the program pushed and no entries: tests never branch on it."""
    from controller.targets import open_target

    if target_switch is None:
        t = open_target("p4sim", program=target_program, cpu_port=target_config.cpu_port)
        t.set_port_speed(RATE_LIMITED_PORT, RATE_LIMITED_BPS)  # as on the switches started here
    else:
        t = target_switch.connect(target_program)
    try:
        yield t
    finally:
        t.close()


@pytest.fixture(scope="session")
def target_rate_limit(target_switch: RemoteSwitch | None) -> tuple[int, int]:
    """(port, packets/s): the data port whose egress the plugin slowed down (for 1250-byte
    frames on the wire; see RATE_LIMITED_PORT). Only on switches the plugin runs itself."""
    if target_switch is not None and (target_switch.process is None
                                      or RATE_LIMITED_PORT not in target_switch.ports):
        pytest.skip(f"needs port {RATE_LIMITED_PORT} rate-limited by the plugin: it does that "
                    "only on a switch it starts, with that port in the port map")
    return RATE_LIMITED_PORT, RATE_LIMITED_PPS


# ---------------------------------------------------------------- a switch outside


class RemoteSwitch:
    """Where the P4Runtime switch is and which interfaces stand for its ports."""

    def __init__(self, cfg: TargetConfig, grpc_addr: str, ports: dict[int, PortRef]):
        self.cfg, self.grpc_addr, self.ports = cfg, grpc_addr, ports
        self.process = None  # SwitchProcess when started here
        self._rates_set = False

    @classmethod
    def open(cls, cfg: TargetConfig, stack: contextlib.ExitStack,
             log_dir: Path | None = None) -> RemoteSwitch:
        from . import netns, switches

        client = None
        if cfg.grpc_addr is None and cfg.kind == "bmv2":  # say what is missing before any setup
            if cfg.bmv2_docker:
                client = switches.docker_client(cfg.bmv2_docker)
            else:
                switches.require_bmv2()
        ports = dict(cfg.port_map)
        if not ports and cfg.grpc_addr is None:
            # Nothing given: make veth pairs, tests on one end, the switch on the other.
            if not netns.is_root():
                raise pytest.UsageError(
                    f"--target {cfg.kind} without --port-map creates veth pairs and needs root; "
                    "run as root or pass --port-map (and --grpc-addr for a running switch)")
            netns.sweep_stale()  # leftovers of runs that were SIGKILLed
            nets = stack.enter_context(netns.NetnsSet())
            for port in DEFAULT_PORTS:
                nets.add_veth(netns.name("t", port), netns.name("s", port))
                ports[port] = PortRef(netns.name("t", port))
        if cfg.grpc_addr is not None:
            return cls(cfg, cfg.grpc_addr, ports)
        switch_side = {port: _switch_side(ref) for port, ref in ports.items()}
        if cfg.kind == "p4sim-grpc":
            rates = {RATE_LIMITED_PORT: RATE_LIMITED_BPS} if RATE_LIMITED_PORT in ports else {}
            proc = switches.start_p4sim_switch(cfg.program, switch_side, device_id=cfg.device_id,
                                               cpu_port=cfg.cpu_port, log_dir=log_dir,
                                               port_rates=rates)
        elif cfg.kind == "bmv2" and cfg.bmv2_docker:
            proc = switches.start_bmv2_docker(cfg.bmv2_docker, switch_side,
                                              device_id=cfg.device_id, cpu_port=cfg.cpu_port,
                                              client=client)
        elif cfg.kind == "bmv2":
            proc = switches.start_bmv2(switch_side, device_id=cfg.device_id,
                                       cpu_port=cfg.cpu_port, log_dir=log_dir)
        else:
            raise pytest.UsageError(f"--target {cfg.kind} needs --grpc-addr")
        stack.callback(proc.close)
        sw = cls(cfg, proc.grpc_addr, ports)
        sw.process = proc
        return sw

    def connect(self, program):
        """A P4RuntimeTarget on this switch, ports opened, program pushed."""
        from controller.targets.afpacket import AfPacketPorts
        from controller.targets.p4runtime import P4RuntimeTarget

        t = P4RuntimeTarget(self.grpc_addr, self.cfg.device_id, port_map=None,
                            cpu_port=self.cfg.cpu_port)
        try:
            if self.ports:
                t.ports = AfPacketPorts({p: r.iface for p, r in self.ports.items()},
                                        {p: r.netns for p, r in self.ports.items()})
            t.push(program)
            if (not self._rates_set and self.process is not None
                    and self.process.kind.startswith("bmv2") and RATE_LIMITED_PORT in self.ports):
                from . import switches  # BMv2's CLI needs the pipeline installed first

                switches.bmv2_set_queue_rates(self.process, {RATE_LIMITED_PORT: RATE_LIMITED_PPS})
                self._rates_set = True
            t.receive()  # drop what arrived before this test (kernel chatter, late frames)
        except BaseException:
            t.close()
            raise
        return t


def _switch_side(ref: PortRef) -> str:
    """The veth peer of a test-side interface, which the switch attaches to."""
    from . import netns

    peer = netns.peer_in_root(ref.iface, ref.netns)
    if peer is None:
        raise pytest.UsageError(
            f"--port-map {ref}: not one end of a veth pair whose other end is in the root "
            "namespace; start the switch yourself on the right interfaces and pass --grpc-addr")
    return peer
