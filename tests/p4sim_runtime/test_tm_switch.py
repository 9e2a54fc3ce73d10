"""The traffic manager inside a running switch, in virtual time: a 2:1 incast (queue
depths seen by the P4 program, tail drops, line-rate spacing) and PFC pause timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.runtime.switch import Switch
from p4sim.runtime.tm import TrafficManager

PROGRAM = str(Path(__file__).parent / "programs" / "incast.p4")
DST = bytes.fromhex("020000000003")


def data_frame(prio: int, size: int = 1000, tag: int = 0) -> bytes:
    return DST + tag.to_bytes(6, "big") + (0x0800 | prio).to_bytes(2, "big") + bytes(size - 14)


def pfc_frame(class_enable: int, quanta: list[int]) -> bytes:
    body = (
        (0x0101).to_bytes(2, "big")
        + class_enable.to_bytes(2, "big")
        + b"".join(q.to_bytes(2, "big") for q in quanta)
    )
    frame = (
        bytes.fromhex("0180c2000001")
        + bytes.fromhex("020000000099")
        + (0x8808).to_bytes(2, "big")
        + body
    )
    return frame + bytes(60 - len(frame))


def depths(frame: bytes) -> tuple[int, int]:
    src = int.from_bytes(frame[6:12], "big")
    return src >> 24, src & 0xFFFFFF


@pytest.fixture(scope="module")
def compiled():
    from p4sim.runtime.switch import load_program

    return load_program(PROGRAM)


def test_incast_2_to_1_in_virtual_time(compiled) -> None:
    tm = TrafficManager()  # 64 packets per queue
    sw = Switch(compiled, tm=tm)
    tm.set_port_rate(3, bits_per_s=10e9)  # 976-byte frame + 24 B FCS/preamble/SFD/IFG = 800 ns
    rounds = 100
    for k in range(rounds):
        sw.advance(k * 800 - sw.now())
        sw.send(1, data_frame(0, size=976, tag=2 * k))
        sw.send(2, data_frame(0, size=976, tag=2 * k + 1))
    sw.run_until_idle()
    out = sw.receive()
    assert len(out) == 2 * rounds - 36
    assert sw.stats["tm_drops"] == 36 == tm.stats()["ports"][3]["drops"][0]
    assert all(o.port == 3 for o in out)
    # one frame per 800 ns on the wire, stamped when its last bit left
    assert [o.time_ns for o in out] == [800 * (i + 1) for i in range(len(out))]
    enq = [depths(o.data)[0] for o in out]
    # round k: the frame from port 1 saw k-1 queued, the one from port 2 saw k (capped at 64 by drops)
    assert enq[:5] == [0, 0, 0, 1, 1]
    assert max(enq) == 63
    deq = [depths(o.data)[1] for o in out]
    assert deq[-1] == 0 and max(deq) == 63


def test_pfc_pauses_one_priority_for_quanta_times_512_bit_times(compiled) -> None:
    tm = TrafficManager()
    sw = Switch(compiled, tm=tm)
    tm.set_port_rate(3, bits_per_s=10e9)  # 1 quantum = 51.2 ns
    sw.advance(1000)
    sw.send(3, pfc_frame(1 << 3, [0, 0, 0, 200, 0, 0, 0, 0]))  # pause priority 3 for 10240 ns
    sw.send(1, data_frame(3, size=100, tag=1))
    sw.send(2, data_frame(5, size=100, tag=2))
    sw.run_until_idle()
    out = {int.from_bytes(o.data[12:14], "big") & 7: o for o in sw.receive()}
    # not paused: leaves at once (100 B + 24 B of FCS, preamble, SFD, IFG = 99.2 ns -> 99)
    assert out[5].time_ns == 1000 + 99
    assert out[3].time_ns == 1000 + 10240 + 99  # paused exactly 200 * 512 bit times
    stats = tm.stats()["ports"][3]
    assert stats["pauses"] == [0, 0, 0, 1, 0, 0, 0, 0] and sw.stats["pfc_rx"] == 1


def test_same_inputs_same_outputs_to_the_nanosecond(compiled) -> None:
    def run() -> list[tuple[int, int, bytes]]:
        tm = TrafficManager(default_capacity=16)
        sw = Switch(compiled, tm=tm)
        tm.set_port_rate(3, bits_per_s=25e9)
        t = 0
        for i in range(300):
            t += (i * 37) % 500
            sw.advance(t - sw.now())
            if i % 50 == 7:
                sw.send(3, pfc_frame(0b1010, [0, 30, 0, 60, 0, 0, 0, 0]))
            sw.send(1 + i % 2, data_frame(i % 4, size=64 + (i * 13) % 1400, tag=i))
        sw.run_until_idle()
        return [(o.port, o.time_ns, o.data) for o in sw.receive()]

    first = run()
    assert len(first) > 200 and first == run()


def test_frame_to_an_idle_port_leaves_at_once_while_another_queues() -> None:
    """A frame for an idle port leaves in `send` itself even while another port has a
    queue (the TM's enqueue fast path puts it in its departed list, which send's service
    must drain then, not at the switch's next advance: Switch._service's early exit)."""
    from p4sim.runtime.switch import load_program

    sw = Switch(
        load_program(str(Path(__file__).parent / "programs" / "two_ports.p4")), tm=TrafficManager()
    )
    sw.tm.set_port_rate(3, bits_per_s=10e9)
    for k in range(3):  # port 3: one on the wire, two queued
        sw.send(1, DST + k.to_bytes(6, "big") + (0x0830).to_bytes(2, "big") + bytes(60))
    first = sw.receive()
    assert [o.port for o in first] == [3] and sw.tm.depth(3, 0) == 2
    sw.send(2, DST + bytes(6) + (0x0840).to_bytes(2, "big") + bytes(60))
    out = sw.receive()
    assert [(o.port, o.time_ns) for o in out] == [(4, 0)], out
