"""The project's own program, p4src/roce_switch.p4, pushed through P4Runtime to the p4sim
server: its P4Info, an L2 entry, a RoCEv2 frame forwarded, its counters read, PacketOut."""

from __future__ import annotations

from pathlib import Path

from p4rt_helpers import Names, find

from p4rtproto import p4runtime_pb2
from p4sim.server import make_device_config

ROCE_SWITCH = Path(__file__).resolve().parents[2] / "p4src" / "roce_switch.p4"
# a RoCEv2 RDMA WRITE from p4src/tests/l2_switching.stf (dst 02:00:00:00:00:02)
ROCE_FRAME = bytes.fromhex(
    "0200000000020200000000010800456A003C00014000401126440A0000010A000002C00112B7002800000400FFFF"
    "000000128000000000000000000000000000000000000000E44C14EE"
)


def test_roce_switch_over_p4runtime(server, connect) -> None:
    c = connect()
    c.arbitrate((0, 1))
    assert c.get("arbitration").arbitration.status.code == 0
    c.set_pipeline(make_device_config(ROCE_SWITCH))
    cfg = c.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
    )
    n = Names(cfg.config.p4info)
    assert {"packet_in", "packet_out"} <= set(n.metadata)

    l2_fwd, l2_forward = find(n, "l2_fwd"), find(n, "l2_forward")
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = u.entity.table_entry
    te.table_id = n[l2_fwd]
    te.match.add(field_id=1).exact.value = bytes.fromhex("020000000002")
    te.action.action.action_id = n[l2_forward]
    te.action.action.params.add(param_id=n.params[l2_forward]["port"], value=b"\x02")
    c.write(u)

    server.ports.ports[1].inject(ROCE_FRAME)
    assert server.ports.ports[2].wait_output(1.0) == ROCE_FRAME

    ce = p4runtime_pb2.CounterEntry(counter_id=n[find(n, "roce_rx")])
    ce.index.index = 8  # port 1, class 0 (as the STF test reads it)
    (got,) = c.read(p4runtime_pb2.Entity(counter_entry=ce))
    assert got.counter_entry.data.packet_count == 1 and got.counter_entry.data.byte_count == len(
        ROCE_FRAME
    )

    md = n.metadata["packet_out"]
    c.packet_out(ROCE_FRAME, {md["egress_port"]: b"\x03", md["_pad"]: b"\x00"})
    assert server.ports.ports[3].wait_output(1.0) == ROCE_FRAME
