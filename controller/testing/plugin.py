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
that one-line reason. Tests marked `only_target(KIND)` use a kind's own tools outside the
`target` fixture (the labs on BMv2, p4c on the program) and run only with --target KIND
(`make test`'s BMv2 tier runs the `only_target("bmv2")` ones). On every switch the plugin runs itself, port 4's egress is slowed to
100 frames/s (`target_rate_limit`, for overload tests; config.RATE_LIMITED_PORT).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.targets import registry
from controller.targets.config import ConfigError, PortRef, TargetConfig, parse_port_map

from .config import DEFAULT_PORTS, RATE_LIMITED_BPS, RATE_LIMITED_PORT, RATE_LIMITED_PPS

VIRTUAL_TIME_REASON = "needs virtual time (in-process p4sim only)"


# Taken out of the environment when the plugin loads, so that a pytest a test starts in a
# subprocess (and in another directory) never writes over this run's counts.
_SUMMARY_PATH = (
    os.path.abspath(os.environ.pop("ROCELAB_PYTEST_SUMMARY"))
    if os.environ.get("ROCELAB_PYTEST_SUMMARY")
    else None
)


def _env(name: str, default: str | None = None) -> str | None:
    """Every option can also come from the environment: ROCELAB_TARGET, ROCELAB_GRPC_ADDR,
    ROCELAB_DEVICE_ID, ROCELAB_PORT_MAP, ROCELAB_P4_PROGRAM and each kind's own
    (ROCELAB_P4_ARTIFACTS, ROCELAB_BMV2_DOCKER, ...); the command line wins."""
    return os.environ.get(f"ROCELAB_{name}", default)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocelab", "rocelab targets (also ROCELAB_<OPTION> variables)")
    try:
        kinds = registry.names()
    except ConfigError as e:  # a broken target plug-in
        raise pytest.UsageError(str(e)) from None
    group.addoption(
        "--target",
        default=_env("TARGET", "p4sim"),
        choices=kinds,
        help="data-plane target for tests taking the `target` fixture: " + registry.choices_help(),
    )
    group.addoption(
        "--grpc-addr",
        default=_env("GRPC_ADDR"),
        help="P4Runtime endpoint host:port (default for kinds that start a "
        "switch: start one here on a free port)",
    )
    group.addoption(
        "--device-id",
        type=int,
        default=int(_env("DEVICE_ID", "1") or 1),
        help="P4Runtime device id",
    )
    group.addoption(
        "--port-map",
        default=_env("PORT_MAP"),
        help="switch port to the interface tests use, e.g. 1=veth1,2=ns1/eth0",
    )
    group.addoption(
        "--p4-program",
        default=_env("P4_PROGRAM"),
        help="P4 source for p4sim targets (default p4src/roce_switch.p4)",
    )
    registry.add_options(group.addoption, "pytest")


def pytest_configure(config: pytest.Config) -> None:
    from controller.targets.p4sim import exit_with_me

    # p4sim-switch processes started during the run (fixtures, targets, tests) stop when
    # it ends, even killed: they run in their own session, out of reach of its signals
    os.environ["P4SIM_EXIT_WITH"] = exit_with_me(os.environ)
    config.addinivalue_line("markers", "virtual_time: " + VIRTUAL_TIME_REASON)
    config.addinivalue_line(
        "markers",
        "only_target(kind): runs only with --target KIND "
        "(uses that kind's own tools outside the `target` fixture)",
    )
    try:
        cfg, explicit = _config_from_options(config)
        registry.check(cfg, explicit, "pytest")
    except ConfigError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[_CONFIG_KEY] = cfg


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """With ROCELAB_PYTEST_SUMMARY=FILE: this run's counts, as its closing line shows them,
    for `make test`'s one closing line over its runs (controller.testing.summary). When
    differential runs (p4sim == BMv2) took place: one line adding them up."""
    _differential_line(terminalreporter, config)
    path = _SUMMARY_PATH
    if not path or hasattr(config, "workerinput"):  # xdist workers: the controller counts
        return
    import json
    import time

    from .summary import ORDER

    stats = terminalreporter.stats
    counts = {
        k: sum(1 for r in stats.get(k, []) if getattr(r, "count_towards_summary", True))
        for k in ORDER
    }
    start = getattr(terminalreporter, "_session_start", None)
    seconds = time.time() - start.time if start is not None else 0.0
    Path(path).write_text(
        json.dumps({"counts": counts, "seconds": round(seconds, 2), "exitstatus": int(exitstatus)})
    )


def _differential_line(terminalreporter, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # xdist workers: their reports reach the controller
        return
    from controller.differential import PROPERTY, summary_line

    runs = [
        value
        for reports in terminalreporter.stats.values()
        for r in reports
        if getattr(r, "when", None) == "call"
        for name, value in getattr(r, "user_properties", ())
        if name == PROPERTY
    ]
    if runs:
        terminalreporter.write_line(summary_line(runs))


def pytest_report_header(config: pytest.Config) -> str:
    cfg = config.stash[_CONFIG_KEY]
    kind = registry.get(cfg.kind)
    where = cfg.grpc_addr or ("in-process" if kind.in_process else "started by the plugin")
    ports = ",".join(f"{p}={r}" for p, r in sorted(cfg.port_map.items())) or "-"
    return f"rocelab target: {cfg.kind} ({where}); port map: {ports}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cfg = config.stash[_CONFIG_KEY]
    for item in items:
        only = item.get_closest_marker("only_target")
        if only is not None and cfg.kind not in only.args:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"runs with --target {' or '.join(only.args)} only (make test: its tier)"
                )
            )
    if registry.get(cfg.kind).in_process:
        return
    skip = pytest.mark.skip(reason=f"{VIRTUAL_TIME_REASON}; --target {cfg.kind}")
    for item in items:
        if item.get_closest_marker("virtual_time") is not None:
            item.add_marker(skip)


_CONFIG_KEY = pytest.StashKey[TargetConfig]()


def _config_from_options(config: pytest.Config) -> tuple[TargetConfig, list[str]]:
    opt = config.getoption
    options, explicit = registry.option_values(opt, "pytest")
    cfg = TargetConfig(
        kind=opt("--target"),
        grpc_addr=opt("--grpc-addr"),
        device_id=opt("--device-id"),
        port_map=parse_port_map(opt("--port-map")),
        options=options,
    )
    if opt("--p4-program"):
        cfg.program = Path(opt("--p4-program"))
    return cfg, explicit


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def target_config(pytestconfig: pytest.Config) -> TargetConfig:
    """The parsed --target/--grpc-addr/--port-map/... options."""
    return pytestconfig.stash[_CONFIG_KEY]


@pytest.fixture(scope="session")
def target_program(target_config: TargetConfig):
    """The program every `target` gets, as its kind wants it (P4 source, or P4Info + BMv2
    JSON from --p4-artifacts)."""
    return registry.get(target_config.kind).program(target_config)


@pytest.fixture(scope="session")
def target_switch(
    target_config: TargetConfig, target_program, tmp_path_factory
) -> Iterator[RemoteSwitch | None]:
    """The switch outside this process (None for an in-process kind): started here when no
    --grpc-addr was given, on veth pairs made here when no --port-map was given."""
    if registry.get(target_config.kind).in_process:
        yield None
        return
    with contextlib.ExitStack() as stack:
        yield RemoteSwitch.open(
            target_config, stack, log_dir=tmp_path_factory.mktemp("switch-logs")
        )


@pytest.fixture(scope="session")
def target_ports(target_config: TargetConfig, target_switch: RemoteSwitch | None) -> list[int]:
    """The data ports tests may send on and expect frames from (sorted)."""
    if target_switch is None:
        return list(DEFAULT_PORTS)
    if not target_switch.ports:
        pytest.skip(
            "no data ports: with --grpc-addr, pass --port-map for the interfaces "
            "cabled to the switch"
        )
    return sorted(target_switch.ports)


@pytest.fixture
def target(target_config: TargetConfig, target_program, target_switch: RemoteSwitch | None):
    """A fresh target with the program pushed and no entries: tests never branch on it."""
    if target_switch is None:  # as on the switches started here: port 4 slowed down
        cfg = dataclasses.replace(target_config, port_rates={RATE_LIMITED_PORT: RATE_LIMITED_BPS})
        t = registry.get(cfg.kind).open(cfg, target_program)
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
    if target_switch is not None and (
        target_switch.process is None or RATE_LIMITED_PORT not in target_switch.ports
    ):
        pytest.skip(
            f"needs port {RATE_LIMITED_PORT} rate-limited by the plugin: it does that "
            "only on a switch it starts, with that port in the port map"
        )
    return RATE_LIMITED_PORT, RATE_LIMITED_PPS


# ---------------------------------------------------------------- a switch outside


class RemoteSwitch:
    """Where the P4Runtime switch is and which interfaces stand for its ports."""

    def __init__(self, cfg: TargetConfig, grpc_addr: str, ports: dict[int, PortRef]):
        self.grpc_addr, self.ports = grpc_addr, ports
        self.cfg = dataclasses.replace(cfg, port_map=ports)
        self.process = None  # SwitchProcess when started here

    @classmethod
    def open(
        cls, cfg: TargetConfig, stack: contextlib.ExitStack, log_dir: Path | None = None
    ) -> RemoteSwitch:
        from controller.targets import netns

        kind = registry.get(cfg.kind)
        if cfg.grpc_addr is None:  # say what is missing before any setup
            if not kind.can_start:
                raise pytest.UsageError(f"--target {cfg.kind} needs --grpc-addr")
            kind.prepare(cfg)
        ports = dict(cfg.port_map)
        if not ports and cfg.grpc_addr is None:
            # Nothing given: make veth pairs, tests on one end, the switch on the other.
            if not netns.is_root():
                raise pytest.UsageError(
                    f"--target {cfg.kind} without --port-map creates veth pairs and needs root; "
                    "run as root or pass --port-map (and --grpc-addr for a running switch)"
                )
            netns.sweep_stale()  # leftovers of runs that were SIGKILLed
            nets = stack.enter_context(netns.NetnsSet())
            for port in DEFAULT_PORTS:
                nets.add_veth(netns.name("t", port), netns.name("s", port))
                ports[port] = PortRef(netns.name("t", port))
        if cfg.grpc_addr is not None:
            return cls(cfg, cfg.grpc_addr, ports)
        switch_side = {port: _switch_side(ref) for port, ref in ports.items()}
        rates = {RATE_LIMITED_PORT: RATE_LIMITED_BPS} if RATE_LIMITED_PORT in ports else {}
        try:
            proc = kind.start(
                dataclasses.replace(cfg, port_rates=rates), switch_side, log_dir=log_dir
            )
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None
        stack.callback(proc.close)
        sw = cls(cfg, proc.grpc_addr, ports)
        sw.process = proc
        return sw

    def connect(self, program):
        """A target on this switch, ports opened, program pushed, earlier frames dropped."""
        t = registry.get(self.cfg.kind).open(self.cfg, program, self.process)
        try:
            t.receive()  # drop what arrived before this test (kernel chatter, late frames)
        except BaseException:
            t.close()
            raise
        return t


def _switch_side(ref: PortRef) -> str:
    """The veth peer of a test-side interface, which the switch attaches to."""
    from controller.targets import netns

    peer = netns.peer_in_root(ref.iface, ref.netns)
    if peer is None:
        raise pytest.UsageError(
            f"--port-map {ref}: not one end of a veth pair whose other end is in the root "
            "namespace; start the switch yourself on the right interfaces and pass --grpc-addr"
        )
    return peer
