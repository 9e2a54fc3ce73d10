"""p4runtime-shell, a real third-party P4Runtime client, against a p4sim-switch process: push
the pipeline (P4Info + p4sim device config), insert and read table entries, read
counters, send PacketOut and sniff PacketIn, and see write errors as the shell reports them.
Without data ports the PacketOut goes to the CPU port and comes back as a PacketIn (l2_cpu.p4
forwards it there); with root a second test adds veths as data ports.

The shell runs in its own venv (protobuf < 3.21, made by `make setup`) as a subprocess:
tests/clients/p4rtshell_client.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4rt_helpers import CPU_PORT, L2_PROGRAM, LiveSwitch

from p4rtproto import p4runtime_pb2
from p4sim.server import make_device_config
from p4sim.server.pipeline import compile_program

_spec = importlib.util.spec_from_file_location(
    "p4rtshell_client", Path(__file__).resolve().parents[1] / "clients" / "p4rtshell_client.py"
)
shell_client = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shell_client)  # type: ignore[union-attr]


def shell_process():
    python = shell_client.shell_python()
    if python is None:
        pytest.fail(f"no p4runtime-shell venv at {shell_client.VENV_PYTHON}: run `make setup`")
    return shell_client.ShellClient(python)


def shell_on(switch: LiveSwitch, tmp_path: Path):
    _, p4info = compile_program(L2_PROGRAM)
    p4info_path = tmp_path / "p4info.txt"
    p4info_path.write_text(text_format.MessageToString(p4info))
    config_path = tmp_path / "l2_cpu.p4sim.json"
    config_path.write_bytes(make_device_config(L2_PROGRAM))
    sh = shell_process()
    try:
        sh.call(
            "setup",
            device_id=1,
            grpc_addr=switch.addr,
            election_id=[0, 1],
            p4info=str(p4info_path),
            config=str(config_path),
        )
        yield sh
        sh.call("teardown")
    finally:
        sh.close()


@pytest.fixture
def shell(live_switch: LiveSwitch, tmp_path: Path):
    yield from shell_on(live_switch, tmp_path)


@pytest.fixture
def shell_ports(live_switch_ports: LiveSwitch, tmp_path: Path):
    yield from shell_on(live_switch_ports, tmp_path)


def parse(cls, text: str):
    return text_format.Parse(text, cls())


def eth(dst: str, src: str, ethertype: int = 0x0800, size: int = 64) -> bytes:
    raw = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
    return raw + ethertype.to_bytes(2, "big") + bytes(size - 14)


def test_shell_tables_counters_packet_io(shell, live_switch: LiveSwitch) -> None:
    assert live_switch.pipeline_installed()  # the shell pushed it
    shell.call(
        "insert",
        table="MyIngress.l2_fwd",
        action="MyIngress.forward",
        match={"hdr.ethernet.dst": "02:00:00:00:00:02"},
        params={"port": "2"},
    )
    shell.call(
        "insert",
        table="MyIngress.acl",
        action="MyIngress.to_cpu",
        match={"hdr.ethernet.ether_type": "0x88cc&&&0xffff"},
        priority=5,
    )

    got = [
        parse(p4runtime_pb2.TableEntry, t)
        for t in shell.call("read_table", table="MyIngress.l2_fwd")
    ]
    assert len(got) == 1
    assert [p.value for p in got[0].action.action.params] == [b"\x02"]
    assert got[0].match[0].exact.value == bytes.fromhex("020000000002")
    acl = [
        parse(p4runtime_pb2.TableEntry, t) for t in shell.call("read_table", table="MyIngress.acl")
    ]
    assert len(acl) == 1 and acl[0].priority == 5 and acl[0].match[0].ternary.mask == b"\xff\xff"

    with pytest.raises(shell_client.ShellError, match="ALREADY_EXISTS"):
        shell.call(
            "insert",
            table="MyIngress.l2_fwd",
            action="MyIngress.forward",
            match={"hdr.ethernet.dst": "02:00:00:00:00:02"},
            params={"port": "2"},
        )  # duplicate

    # PacketOut to the CPU port: the pipeline sends it back as a PacketIn, and counts it
    payload = eth("02:00:00:00:00:09", "02:00:00:00:00:01", ethertype=0x88B5, size=80)
    assert shell.call("read_counter", name="MyIngress.port_rx", index=CPU_PORT) == [[0, 0]]
    shell.call(
        "packet_out", payload=payload.hex(), metadata={"egress_port": str(CPU_PORT), "pad": "0"}
    )
    seen = [parse(p4runtime_pb2.PacketIn, t) for t in shell.call("sniff", timeout=2)]
    assert len(seen) == 1
    assert seen[0].payload == payload
    assert seen[0].metadata[0].value == bytes([CPU_PORT])  # ingress_port, canonical bytes
    # counted at ingress with the packet_out header still on (2 bytes)
    assert shell.call("read_counter", name="MyIngress.port_rx", index=CPU_PORT) == [
        [1, len(payload) + 2]
    ]


@pytest.mark.root
@pytest.mark.slow
def test_shell_with_data_ports(shell_ports, live_switch_ports: LiveSwitch) -> None:
    sw = live_switch_ports
    shell = shell_ports
    shell.call(
        "insert",
        table="MyIngress.l2_fwd",
        action="MyIngress.forward",
        match={"hdr.ethernet.dst": "02:00:00:00:00:02"},
        params={"port": "2"},
    )
    shell.call(
        "insert",
        table="MyIngress.acl",
        action="MyIngress.to_cpu",
        match={"hdr.ethernet.ether_type": "0x88cc&&&0xffff"},
        priority=5,
    )

    frame = eth("02:00:00:00:00:02", "02:00:00:00:00:01", size=120)
    sw.send(1, frame)
    assert sw.expect(2, frame), sw.log_tail()
    assert shell.call("read_counter", name="MyIngress.port_rx", index=1) == [[1, 120]]

    payload = eth("02:00:00:00:00:09", "02:00:00:00:00:01", ethertype=0x88B5)
    shell.call("packet_out", payload=payload.hex(), metadata={"egress_port": "4", "pad": "0"})
    assert sw.expect(4, payload), sw.log_tail()

    lldp = eth("01:80:c2:00:00:0e", "02:00:00:00:00:07", ethertype=0x88CC)
    sw.send(3, lldp)
    seen = [parse(p4runtime_pb2.PacketIn, t) for t in shell.call("sniff", timeout=2)]
    assert [p.payload for p in seen] == [lldp]
    assert seen[0].metadata[0].value == b"\x03"  # ingress_port


def test_shell_action_profile_members_groups_entries(
    live_switch: LiveSwitch, tmp_path: Path
) -> None:
    """p4runtime-shell's ActionProfileMember/ActionProfileGroup and an indirect TableEntry."""
    program = str(Path(__file__).resolve().parent / "programs" / "action_profiles.p4")
    _, p4info = compile_program(program)
    p4info_path = tmp_path / "p4info.txt"
    p4info_path.write_text(text_format.MessageToString(p4info))
    config_path = tmp_path / "action_profiles.p4sim.json"
    config_path.write_bytes(make_device_config(program))
    sh = shell_process()
    try:
        sh.call(
            "setup",
            device_id=1,
            grpc_addr=live_switch.addr,
            election_id=[0, 1],
            p4info=str(p4info_path),
            config=str(config_path),
        )
        for mid in (2, 1):
            sh.call(
                "ap_member",
                profile="I.sel",
                member_id=mid,
                action="I.fwd",
                params={"port": str(mid), "r": str(mid)},
            )
        sh.call("ap_group", profile="I.sel", group_id=7, members=[1, 2])
        sh.call("indirect_entry", table="I.t_sel", match={"hdr.h.k": "5"}, group_id=7)
        sh.call("indirect_entry", table="I.t_sel", match={"hdr.h.k": "6"}, member_id=2)
        assert sh.call("read_members", profile="I.sel") == [1, 2]
        (t5, t6) = sorted(
            (parse(p4runtime_pb2.TableEntry, t) for t in sh.call("read_table", table="I.t_sel")),
            key=lambda e: e.match[0].exact.value,
        )
        assert (t5.action.action_profile_group_id, t6.action.action_profile_member_id) == (7, 2)
        with pytest.raises(shell_client.ShellError, match="NOT_FOUND"):
            sh.call("indirect_entry", table="I.t_sel", match={"hdr.h.k": "8"}, group_id=99)
        sh.call("teardown")
    finally:
        sh.close()
