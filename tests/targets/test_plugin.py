"""The pytest plugin's options: parsing, validation, and what a user sees when a target
cannot be reached (run as inner pytest processes, as a user would run them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.targets import registry
from controller.targets.config import (
    ConfigError,
    PortRef,
    TargetConfig,
    artifacts_program,
    find_artifacts,
    parse_port_map,
)
from controller.targets.kinds.bmv2 import bmv2_argv, bmv2_set_queue_rates
from controller.targets.kinds.p4sim_grpc import p4sim_switch_argv
from controller.targets.switches import SwitchProcess, SwitchStartError
from controller.targets.toolchain import PREFIX_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_port_map_parsing():
    assert parse_port_map("1=veth1, 2=ns1/eth0") == {1: PortRef("veth1"), 2: PortRef("eth0", "ns1")}
    assert parse_port_map(None) == {}
    for bad in ("1", "x=veth1", "1=", "1=a,1=b"):
        with pytest.raises(ConfigError):
            parse_port_map(bad)


def test_validation_says_what_is_missing(no_bmv2):
    with pytest.raises(ConfigError, match="--grpc-addr, --port-map, --p4-artifacts"):
        registry.validate(TargetConfig(kind="hw"))
    with pytest.raises(ConfigError, match="make p4-bmv2"):
        registry.validate(TargetConfig(kind="bmv2"))
    with pytest.raises(ConfigError, match="--bmv2-docker only"):
        registry.validate(TargetConfig(kind="p4sim-grpc", options={"bmv2_docker": "img"}))
    with pytest.raises(ConfigError, match="switch outside this process"):
        registry.validate(TargetConfig(kind="p4sim", port_map={1: PortRef("veth1")}))
    registry.validate(TargetConfig(kind="p4sim-grpc", port_map={1: PortRef("veth1")}))


def test_switch_command_lines():
    argv = bmv2_argv({2: "s2", 1: "s1"}, "127.0.0.1:5000", 3, 255, 9099, "simple_switch_grpc")
    # BMv2's own options, then its gRPC target's after `--`
    assert argv == [
        "simple_switch_grpc",
        "--device-id",
        "3",
        "-i",
        "1@s1",
        "-i",
        "2@s2",
        "--no-p4",
        "--thrift-port",
        "9099",
        "--",
        "--grpc-server-addr",
        "127.0.0.1:5000",
        "--cpu-port",
        "255",
        "--priority-queues",
        "8",
    ]
    argv = p4sim_switch_argv("p.p4", {1: "s1"}, "127.0.0.1:5001", 1, 255)
    assert argv[1:] == [
        "p.p4",
        "--device-id",
        "1",
        "-i",
        "1@s1",
        "--grpc-server-addr",
        "127.0.0.1:5001",
        "--cpu-port",
        "255",
        "--log-console",
    ]
    argv = p4sim_switch_argv("p.p4", {1: "s1"}, "127.0.0.1:5001", 1, 255, {4: 1e6, 2: 25e9})
    assert argv[-5:] == [
        "--port-rate",
        "2=25000000000",
        "--port-rate",
        "4=1000000",
        "--log-console",
    ]


def test_bmv2_queue_rates_go_through_its_cli(tmp_path, monkeypatch):
    """BMv2 has no command-line option for a queue rate: simple_switch_CLI gets
    `set_queue_rate PPS PORT` on its Thrift port (a stand-in CLI records what it got)."""
    sw = SwitchProcess("bmv2", "127.0.0.1:1", 1, [], tmp_path / "log")
    with pytest.raises(SwitchStartError, match="no Thrift port"):
        bmv2_set_queue_rates(sw, {4: 100})
    sw.extra["thrift_port"] = 9123
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SwitchStartError, match="simple_switch_CLI"):
        bmv2_set_queue_rates(sw, {4: 100})  # not installed: one clear error
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(
        f'#!/bin/sh\necho "$@" > {tmp_path}/argv\n/bin/cat > {tmp_path}/stdin\n'
        "echo 'RuntimeCmd: '\n"
    )
    cli.chmod(0o755)
    bmv2_set_queue_rates(sw, {4: 100, 2: 50})
    assert (tmp_path / "argv").read_text().split() == ["--thrift-port", "9123"]
    assert (tmp_path / "stdin").read_text() == "set_queue_rate 50 2\nset_queue_rate 100 4\n"
    cli.write_text("#!/bin/sh\n/bin/cat >/dev/null\necho 'Error: Invalid egress port'\n")
    with pytest.raises(SwitchStartError, match="Invalid egress port"):
        bmv2_set_queue_rates(sw, {4: 100})


def test_bmv2_kind_sets_its_queue_rates_once_after_the_push(tmp_path, monkeypatch):
    """The bmv2 kind turns `port_rates` (bits/s) into packets/s at `rate_frame_bytes` when it
    starts a switch, and sets them through simple_switch_CLI at the first open, after the
    pipeline is pushed (the CLI reads the switch's JSON), never again. A real p4sim-switch
    stands in for the started BMv2 (both serve P4Runtime); a stand-in CLI records its input."""
    from controller.targets import registry
    from controller.targets.kinds.bmv2 import queue_rates_pps
    from controller.targets.kinds.p4sim_grpc import KIND as P4SIM_GRPC

    assert queue_rates_pps({4: 1_000_000, 2: 80_000, 3: 1}, 1000) == {4: 125, 2: 10, 3: 1}

    bmv2 = registry.get("bmv2")
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(f"#!/bin/sh\n/bin/cat >> {tmp_path}/stdin\necho 'RuntimeCmd: '\n")
    cli.chmod(0o755)
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    cfg = TargetConfig(
        kind="bmv2", device_id=1, port_rates={4: 1_000_000, 2: 80_000}, rate_frame_bytes=1000
    )
    program = P4SIM_GRPC.program(cfg)
    with P4SIM_GRPC.start(cfg, {}, log_dir=tmp_path) as proc:
        # What Bmv2Kind.start leaves on the process it started.
        proc.extra.update(
            thrift_port=9123, queue_rates_pps=queue_rates_pps(cfg.port_rates, cfg.rate_frame_bytes)
        )
        assert not (tmp_path / "stdin").exists()
        t = bmv2.open(cfg, program, proc)
        try:
            assert t.counter_names()  # the pipeline is on the switch
        finally:
            t.close()
        assert (tmp_path / "stdin").read_text() == "set_queue_rate 10 2\nset_queue_rate 125 4\n"
        bmv2.open(cfg, program, proc).close()  # a second open: no second CLI run
        assert (tmp_path / "stdin").read_text().count("set_queue_rate") == 2
    with pytest.raises(ConfigError, match="only on a switch started here"):
        bmv2.open(cfg, program, None)


@pytest.fixture
def artifacts(tmp_path):
    """A P4Info (text) and a device config, as p4c-bm2-ss names them."""
    from google.protobuf import text_format

    from controller.targets import from_p4
    from p4rtproto import p4info_pb2

    info = p4info_pb2.P4Info()
    info.ParseFromString(from_p4().p4info)
    d = tmp_path / "p4"
    d.mkdir()
    (d / "roce_switch.p4info.txtpb").write_text(text_format.MessageToString(info))
    (d / "roce_switch.json").write_text("{}")
    return d


def test_artifacts_are_found_and_read(artifacts):
    info, js = find_artifacts(artifacts)
    assert (info.name, js.name) == ("roce_switch.p4info.txtpb", "roce_switch.json")
    prog = artifacts_program(artifacts)
    assert (
        prog.config_format == "bmv2-json"
        and prog.device_config == b"{}"
        and len(prog.p4info) > 1000
    )
    (artifacts / "other.json").write_text("{}")
    with pytest.raises(ConfigError, match="expected one"):
        find_artifacts(artifacts)


def _inner(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    test = tmp_path / "test_inner.py"
    test.write_text(
        "import pytest\n\n"
        "def test_uses_target(target):\n    assert target is not None\n\n"
        "@pytest.mark.virtual_time\ndef test_needs_virtual_time():\n    pass\n"
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "-p",
            "no:cacheprovider",
            str(test),
            "--rootdir",
            str(tmp_path),
            *args,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_bmv2_missing_says_how_to_get_it(tmp_path, artifacts, no_bmv2):
    proc = _inner(
        tmp_path, "--target", "bmv2", "--port-map", "1=lo", "--p4-artifacts", str(artifacts)
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "simple_switch_grpc not found on PATH" in out and "--bmv2-docker" in out
    assert "ROCELAB_BMV2_PREFIX=DIR" in out
    # The virtual-time test is skipped with its one-line reason, not errored.
    assert "needs virtual time (in-process p4sim only); --target bmv2" in out


def test_bmv2_docker_without_engine_is_a_clear_error(tmp_path, artifacts, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    proc = _inner(
        tmp_path,
        "--target",
        "bmv2",
        "--bmv2-docker",
        "rocelab:latest",
        "--port-map",
        "1=lo",
        "--p4-artifacts",
        str(artifacts),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "--bmv2-docker rocelab:latest: no Docker engine reachable" in out


def test_bad_options_are_usage_errors(tmp_path):
    proc = _inner(tmp_path, "--target", "hw")
    assert proc.returncode == 4  # pytest's usage error
    assert "--target hw needs --grpc-addr, --port-map, --p4-artifacts" in proc.stderr
    proc = _inner(tmp_path, "--port-map", "1=veth1,bad")
    assert proc.returncode == 4 and "PORT=IFACE" in proc.stderr


def test_options_come_from_the_environment_too(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCELAB_TARGET", "hw")
    proc = _inner(tmp_path)
    assert proc.returncode == 4 and "--target hw needs" in proc.stderr
    proc = _inner(tmp_path, "--target", "p4sim")  # the command line wins
    assert proc.returncode == 0, proc.stdout[-2000:]
