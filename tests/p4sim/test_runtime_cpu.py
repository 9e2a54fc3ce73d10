"""CPU port: PacketIn (controller header parsed off the front) and PacketOut."""

from __future__ import annotations

from pathlib import Path

from p4sim.model import Exact, TableEntry, Ternary
from p4sim.runtime.switch import Switch

ROOT = Path(__file__).resolve().parents[2]
FRAME = bytes.fromhex(
    "0200000000020200000000010800456A003C00014000401126440A0000010A000002C00112B7002800000400"
    "FFFF00000014800000000000000000000000000000000000000022492918"
)


def roce_switch() -> Switch:
    return Switch(
        str(ROOT / "p4src" / "roce_switch.p4"), include_dirs=[str(ROOT / "p4src")], cpu_port=255
    )


def test_controller_headers_in_model():
    sw = roce_switch()
    pin = sw.model.controller_headers["packet_in"]
    assert pin.kind == "packet_in"
    assert [(f.name, f.bitwidth, f.id) for f in pin.fields] == [
        ("ingress_port", 9, 1),
        ("reason", 8, 2),
        ("_pad", 7, 3),
    ]
    assert sw.model.controller_headers["packet_out"].fields[0].name == "egress_port"


def test_packet_in_metadata_and_packet_out():
    sw = roce_switch()
    got: list[tuple[bytes, dict]] = []
    sw.on_packet_in(lambda data, md: got.append((data, md)))
    mirror = next(n for n in sw.tables if n.endswith("mirror_flow"))
    keys = sw.model.tables[mirror].keys
    dqpn = next(k.name for k in keys if k.name.endswith("dqpn"))
    sw.table_add(
        TableEntry(
            mirror, {dqpn: Ternary(0x14, 0xFFFFFF)}, "mirror_to", {"session": 6}, priority=10
        )
    )
    l2 = next(n for n in sw.tables if n.endswith("l2_fwd"))
    sw.table_add(
        TableEntry(
            l2, {sw.model.tables[l2].keys[0].name: Exact(0x020000000002)}, "l2_forward", {"port": 2}
        )
    )
    sw.clone_session_set(6, [(255, 0)])
    sw.send(1, FRAME)
    assert [p.port for p in sw.receive()] == [2]
    assert len(got) == 1
    data, md = got[0]
    assert data == FRAME  # the packet_in header is taken off
    assert md["ingress_port"] == 1 and md["reason"] == 3
    # PacketOut: the program reads packet_out.egress_port and sends the frame there
    sw.packet_out(FRAME, {"egress_port": 4})
    out = sw.receive()
    assert [(p.port, p.data) for p in out] == [(4, FRAME)]
