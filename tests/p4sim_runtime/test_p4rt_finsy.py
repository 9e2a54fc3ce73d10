"""finsy, a second real third-party P4Runtime client (asyncio, protobuf >= 6, the same stubs
the project uses), against a p4sim-switch process: it pushes the pipeline with
SetForwardingPipelineConfig, writes a table entry and reads it back, sees a duplicate refused,
sends a PacketOut and receives a PacketIn.

Without data ports the PacketOut goes to the CPU port: l2_cpu.p4 forwards it there and the
egress adds the packet_in header, so it comes back as a PacketIn that crossed the whole
pipeline. With root, a second test uses veths for data ports: forwarding, PacketOut to a port,
a punted frame as PacketIn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import finsy as fy
import pytest
from google.protobuf import text_format
from p4rt_helpers import CPU_PORT, L2_PROGRAM, LiveSwitch

from p4sim.server import make_device_config
from p4sim.server.pipeline import compile_program

pytestmark = pytest.mark.slow


def eth(dst: str, src: str, ethertype: int, size: int = 64) -> bytes:
    raw = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
    return raw + ethertype.to_bytes(2, "big") + bytes(size - 14)


def switch_options(tmp_path: Path) -> fy.SwitchOptions:
    _, p4info = compile_program(L2_PROGRAM)
    p4info_path = tmp_path / "p4info.txt"
    p4info_path.write_text(text_format.MessageToString(p4info))
    return fy.SwitchOptions(
        p4info=p4info_path, p4blob=make_device_config(L2_PROGRAM), p4force=True, device_id=1
    )


def l2_entry(dst: str, action: str, **params: int) -> fy.P4TableEntry:
    return fy.P4TableEntry(
        "MyIngress.l2_fwd",
        match=fy.P4TableMatch({"hdr.ethernet.dst": dst}),
        action=fy.P4TableAction(action, **params),
    )


async def next_packet_in(packets, send) -> fy.P4PacketIn:
    first = asyncio.ensure_future(anext(packets))
    await asyncio.sleep(0)  # the generator registers its queue, then waits on it
    send()
    return await asyncio.wait_for(first, 10)


def test_finsy_push_write_read_packet_io(live_switch: LiveSwitch, tmp_path: Path) -> None:
    assert not live_switch.pipeline_installed()

    async def run() -> None:
        async with fy.Switch("p4sim", live_switch.addr, switch_options(tmp_path)) as sw:
            assert live_switch.pipeline_installed()  # pushed by finsy
            packets = sw.read_packets()
            await sw.insert([l2_entry("02:00:00:00:00:02", "MyIngress.forward", port=2)])
            got = [e async for e in sw.read(fy.P4TableEntry("MyIngress.l2_fwd"))]
            assert len(got) == 1
            te = got[0].encode_entry(sw.p4info)  # back to the message the switch sent
            assert [(m.field_id, m.exact.value) for m in te.match] == [
                (1, bytes.fromhex("020000000002"))
            ]
            assert sw.p4info.actions[te.action.action.action_id].name == "MyIngress.forward"
            assert [p.value for p in te.action.action.params] == [b"\x02"]  # canonical: one byte
            with_error = None
            try:  # the duplicate is refused with the spec code, as finsy reports it
                await sw.insert([l2_entry("02:00:00:00:00:02", "MyIngress.forward", port=3)])
            except fy.P4ClientError as exc:
                with_error = exc
            assert with_error is not None and "ALREADY_EXISTS" in str(with_error)

            # PacketOut to the CPU port: through ingress and egress, back as a PacketIn
            payload = eth("02:00:00:00:00:09", "02:00:00:00:00:01", 0x88B5, size=77)
            pin = await next_packet_in(
                packets,
                lambda: asyncio.ensure_future(
                    sw.write([fy.P4PacketOut(payload, egress_port=CPU_PORT, pad=0)])
                ),
            )
            assert pin.payload == payload
            assert pin["ingress_port"] == CPU_PORT
            await packets.aclose()

    asyncio.run(run())


@pytest.mark.root
def test_finsy_with_data_ports(live_switch_ports: LiveSwitch, tmp_path: Path) -> None:
    sw_proc = live_switch_ports

    async def run() -> None:
        async with fy.Switch("p4sim", sw_proc.addr, switch_options(tmp_path)) as sw:
            packets = sw.read_packets()
            await sw.insert(
                [
                    l2_entry("02:00:00:00:00:02", "MyIngress.forward", port=2),
                    l2_entry("02:00:00:00:00:0c", "MyIngress.to_cpu"),
                ]
            )
            # the entry forwards: frame in on port 1 leaves on port 2
            frame = eth("02:00:00:00:00:02", "02:00:00:00:00:01", 0x0800, size=90)
            sw_proc.send(1, frame)
            assert await asyncio.to_thread(sw_proc.expect, 2, frame), sw_proc.log_tail()

            payload = eth("02:00:00:00:00:09", "02:00:00:00:00:01", 0x88B5)
            await sw.write([fy.P4PacketOut(payload, egress_port=4, pad=0)])
            assert await asyncio.to_thread(sw_proc.expect, 4, payload), sw_proc.log_tail()

            to_cpu = eth("02:00:00:00:00:0c", "02:00:00:00:00:07", 0x0800)
            pin = await next_packet_in(packets, lambda: sw_proc.send(3, to_cpu))
            assert pin.payload == to_cpu
            assert pin["ingress_port"] == 3
            await packets.aclose()

    asyncio.run(run())
