"""p4runtime-shell, a real third-party P4Runtime client, against the p4sim server: push
the pipeline (P4Info + p4sim device config), insert and read table entries, read
counters, send PacketOut and sniff PacketIn, and see write errors as the shell reports them.

The shell runs in its own venv (protobuf < 3.21, made by `make setup`) as a subprocess:
tests/clients/p4rtshell_client.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4rt_helpers import L2_PROGRAM

from p4rtproto import p4runtime_pb2
from p4sim.server import make_device_config
from p4sim.server.pipeline import compile_program

_spec = importlib.util.spec_from_file_location(
    "p4rtshell_client", Path(__file__).resolve().parents[1] / "clients" / "p4rtshell_client.py")
shell_client = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shell_client)  # type: ignore[union-attr]


def shell_process():
    python = shell_client.shell_python()
    if python is None:
        pytest.fail(f"no p4runtime-shell venv at {shell_client.VENV_PYTHON}: run `make setup`")
    return shell_client.ShellClient(python)


@pytest.fixture
def shell(server, tmp_path: Path):
    _, p4info = compile_program(L2_PROGRAM)
    p4info_path = tmp_path / "p4info.txt"
    p4info_path.write_text(text_format.MessageToString(p4info))
    config_path = tmp_path / "l2_cpu.p4sim.json"
    config_path.write_bytes(make_device_config(L2_PROGRAM))
    sh = shell_process()
    try:
        sh.call("setup", device_id=1, grpc_addr=f"127.0.0.1:{server.port}", election_id=[0, 1],
                p4info=str(p4info_path), config=str(config_path))
        yield sh
        sh.call("teardown")
    finally:
        sh.close()


def parse(cls, text: str):
    return text_format.Parse(text, cls())


def eth(dst: str, src: str, ethertype: int = 0x0800, size: int = 64) -> bytes:
    raw = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
    return raw + ethertype.to_bytes(2, "big") + bytes(size - 14)


def test_shell_tables_counters_packet_io(shell, server) -> None:
    assert server.pipeline is not None  # the shell pushed it
    shell.call("insert", table="MyIngress.l2_fwd", action="MyIngress.forward",
               match={"hdr.ethernet.dst": "02:00:00:00:00:02"}, params={"port": "2"})
    shell.call("insert", table="MyIngress.acl", action="MyIngress.to_cpu",
               match={"hdr.ethernet.ether_type": "0x88cc&&&0xffff"}, priority=5)

    got = [parse(p4runtime_pb2.TableEntry, t) for t in shell.call("read_table", table="MyIngress.l2_fwd")]
    assert len(got) == 1
    assert [p.value for p in got[0].action.action.params] == [b"\x02"]
    assert got[0].match[0].exact.value == bytes.fromhex("020000000002")
    acl = [parse(p4runtime_pb2.TableEntry, t) for t in shell.call("read_table", table="MyIngress.acl")]
    assert len(acl) == 1 and acl[0].priority == 5 and acl[0].match[0].ternary.mask == b"\xff\xff"

    with pytest.raises(shell_client.ShellError, match="ALREADY_EXISTS"):
        shell.call("insert", table="MyIngress.l2_fwd", action="MyIngress.forward",
                   match={"hdr.ethernet.dst": "02:00:00:00:00:02"}, params={"port": "2"})  # duplicate

    frame = eth("02:00:00:00:00:02", "02:00:00:00:00:01", size=120)
    server.ports.ports[1].inject(frame)
    assert server.ports.ports[2].wait_output(1.0) == frame
    assert shell.call("read_counter", name="MyIngress.port_rx", index=1) == [[1, 120]]

    payload = eth("02:00:00:00:00:09", "02:00:00:00:00:01", ethertype=0x88B5)
    shell.call("packet_out", payload=payload.hex(), metadata={"egress_port": "4", "pad": "0"})
    assert server.ports.ports[4].wait_output(1.0) == payload

    lldp = eth("01:80:c2:00:00:0e", "02:00:00:00:00:07", ethertype=0x88CC)
    server.ports.ports[3].inject(lldp)
    seen = [parse(p4runtime_pb2.PacketIn, t) for t in shell.call("sniff", timeout=1)]
    assert len(seen) == 1
    assert seen[0].payload == lldp
    assert seen[0].metadata[0].value == b"\x03"  # ingress_port
