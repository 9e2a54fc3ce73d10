"""finsy, a second real third-party P4Runtime client (asyncio, protobuf >= 6, the same stubs
the project uses), against the p4sim server: it pushes the pipeline with
SetForwardingPipelineConfig, writes a table entry and reads it back, sends a PacketOut and
receives a PacketIn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import finsy as fy
from google.protobuf import text_format
from p4rt_helpers import L2_PROGRAM

from p4sim.server import make_device_config
from p4sim.server.pipeline import compile_program


def eth(dst: str, src: str, ethertype: int, size: int = 64) -> bytes:
    raw = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
    return raw + ethertype.to_bytes(2, "big") + bytes(size - 14)


def test_finsy_push_write_read_packet_io(server, tmp_path: Path) -> None:
    _, p4info = compile_program(L2_PROGRAM)
    p4info_path = tmp_path / "p4info.txt"
    p4info_path.write_text(text_format.MessageToString(p4info))
    assert server.pipeline is None

    async def run() -> None:
        opts = fy.SwitchOptions(p4info=p4info_path, p4blob=make_device_config(L2_PROGRAM), p4force=True,
                                device_id=1)
        async with fy.Switch("p4sim", f"127.0.0.1:{server.port}", opts) as sw:
            assert server.pipeline is not None  # pushed by finsy
            packets = sw.read_packets()
            await sw.insert([fy.P4TableEntry(
                "MyIngress.l2_fwd", match=fy.P4TableMatch({"hdr.ethernet.dst": "02:00:00:00:00:02"}),
                action=fy.P4TableAction("MyIngress.forward", port=2))])
            got = [e async for e in sw.read(fy.P4TableEntry("MyIngress.l2_fwd"))]
            assert len(got) == 1
            te = got[0].encode_entry(sw.p4info)  # back to the message the server sent
            assert [(m.field_id, m.exact.value) for m in te.match] == [(1, bytes.fromhex("020000000002"))]
            assert sw.p4info.actions[te.action.action.action_id].name == "MyIngress.forward"
            assert [p.value for p in te.action.action.params] == [b"\x02"]
            with_error = None
            try:  # the duplicate is refused with the spec code, as finsy reports it
                await sw.insert([fy.P4TableEntry(
                    "MyIngress.l2_fwd", match=fy.P4TableMatch({"hdr.ethernet.dst": "02:00:00:00:00:02"}),
                    action=fy.P4TableAction("MyIngress.forward", port=3))])
            except fy.P4ClientError as exc:
                with_error = exc
            assert with_error is not None and "ALREADY_EXISTS" in str(with_error)

            # the entry forwards: frame in on port 1 leaves on port 2
            frame = eth("02:00:00:00:00:02", "02:00:00:00:00:01", 0x0800, size=90)
            server.ports.ports[1].inject(frame)
            assert await asyncio.to_thread(server.ports.ports[2].wait_output, 2.0) == frame

            payload = eth("02:00:00:00:00:09", "02:00:00:00:00:01", 0x88B5)
            await sw.write([fy.P4PacketOut(payload, egress_port=4, pad=0)])
            assert await asyncio.to_thread(server.ports.ports[4].wait_output, 2.0) == payload

            await sw.insert([fy.P4TableEntry(
                "MyIngress.l2_fwd", match=fy.P4TableMatch({"hdr.ethernet.dst": "02:00:00:00:00:0c"}),
                action=fy.P4TableAction("MyIngress.to_cpu"))])
            to_cpu = eth("02:00:00:00:00:0c", "02:00:00:00:00:07", 0x0800)
            first = asyncio.ensure_future(anext(packets))
            await asyncio.sleep(0)  # the generator registers its queue, then waits on it
            server.ports.ports[3].inject(to_cpu)
            pin = await asyncio.wait_for(first, 5)
            assert pin.payload == to_cpu
            assert pin["ingress_port"] == 3
            await packets.aclose()

    asyncio.run(run())
