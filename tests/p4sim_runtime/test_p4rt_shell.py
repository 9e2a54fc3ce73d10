"""p4runtime-shell, a real third-party P4Runtime client, against the p4sim server: push
the pipeline (P4Info + p4sim device config), insert and read table entries, read
counters, send PacketOut and sniff PacketIn, and see write errors as the shell reports them."""

from __future__ import annotations

from pathlib import Path

import p4runtime_sh.shell as sh
import pytest
from google.protobuf import text_format
from p4rt_helpers import L2_PROGRAM
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from p4sim.server import make_device_config
from p4sim.server.pipeline import compile_program


@pytest.fixture
def shell(server, tmp_path: Path):
    _, p4info = compile_program(L2_PROGRAM)
    p4info_path = tmp_path / "p4info.txt"
    p4info_path.write_text(text_format.MessageToString(p4info))
    config_path = tmp_path / "l2_cpu.p4sim.json"
    config_path.write_bytes(make_device_config(L2_PROGRAM))
    sh.setup(device_id=1, grpc_addr=f"127.0.0.1:{server.port}", election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info_path), str(config_path)))
    yield sh
    sh.teardown()


def eth(dst: str, src: str, ethertype: int = 0x0800, size: int = 64) -> bytes:
    raw = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
    return raw + ethertype.to_bytes(2, "big") + bytes(size - 14)


def test_shell_tables_counters_packet_io(shell, server) -> None:
    te = shell.TableEntry("MyIngress.l2_fwd")(action="MyIngress.forward")
    te.match["hdr.ethernet.dst"] = "02:00:00:00:00:02"
    te.action["port"] = "2"
    te.insert()
    acl = shell.TableEntry("MyIngress.acl")(action="MyIngress.to_cpu")
    acl.match["hdr.ethernet.ether_type"] = "0x88cc&&&0xffff"
    acl.priority = 5
    acl.insert()

    got = list(shell.TableEntry("MyIngress.l2_fwd").read())
    assert len(got) == 1
    assert got[0].action["port"].value == b"\x02"
    assert got[0].match["hdr.ethernet.dst"].exact.value == bytes.fromhex("0200000000 02".replace(" ", ""))
    assert len(list(shell.TableEntry("MyIngress.acl").read())) == 1

    with pytest.raises(P4RuntimeWriteException) as exc:
        te.insert()  # duplicate
    assert "ALREADY_EXISTS" in str(exc.value)

    frame = eth("02:00:00:00:00:02", "02:00:00:00:00:01", size=120)
    server.ports.ports[1].inject(frame)
    assert server.ports.ports[2].wait_output(1.0) == frame
    ce = shell.CounterEntry("MyIngress.port_rx")
    ce.index = 1
    (c,) = list(ce.read())
    assert (c.data.packet_count, c.data.byte_count) == (1, 120)

    out = shell.PacketOut()
    out.payload = eth("02:00:00:00:00:09", "02:00:00:00:00:01", ethertype=0x88B5)
    out.metadata["egress_port"] = "4"
    out.metadata["pad"] = "0"
    out.send()
    assert server.ports.ports[4].wait_output(1.0) == out.payload

    lldp = eth("01:80:c2:00:00:0e", "02:00:00:00:00:07", ethertype=0x88CC)
    server.ports.ports[3].inject(lldp)
    pin = shell.PacketIn()
    seen = list(pin.sniff(timeout=1))
    assert len(seen) == 1
    msg = seen[0].packet
    assert msg.payload == lldp
    assert msg.metadata[0].value == b"\x03"  # ingress_port
