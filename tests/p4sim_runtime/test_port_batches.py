"""Frames that arrive together go through the switch together (ports.py's batched reader,
P4RuntimeServer.inject_many), and what comes out is what one `inject` per frame gives:
same frames, same ports, same order. roce_switch.p4 configured from lab.yaml as the lab
does; the mix has routed, mirrored, dropped and malformed frames. The negative control
plants a batch path that loses a frame and checks that the comparison sees it.
The reader test (root) sends a burst over a real veth: every frame arrives once, in order,
VLAN tags restored, in batches, and the port never hears its own transmissions."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.config import apply_config, load_config
from controller.packets.build import roce_frame
from controller.targets import open_target
from p4sim.runtime.ports import InterfacePort, PortSet
from p4sim.server import P4RuntimeServer

ROOT = Path(__file__).resolve().parents[2]
ROCE_SWITCH = ROOT / "p4src" / "roce_switch.p4"
LAB = ROOT / "controller" / "examples" / "lab.yaml"
ROUTER = "02:00:00:00:00:fe"
HOSTS = {
    1: ("02:00:00:00:00:01", "10.0.0.1"),
    2: ("02:00:00:00:00:02", "10.0.0.2"),
    3: ("02:00:00:00:00:03", "10.0.0.3"),
}
PORTS = (1, 2, 3, 9)


def _mix() -> list[tuple[int, bytes]]:
    """(in port, frame): routed RoCEv2 between the hosts (class 0 and 6), h1's QP to h3
    (mirrored to port 9 by lab.yaml), an unrouted address, a frame for another MAC, a
    truncated one and a runt."""
    out: list[tuple[int, bytes]] = []
    for i in range(24):
        s, d = ((1, 2), (1, 3), (3, 1), (2, 3))[i % 4]
        qpn = 0x301 if (s, d) == (1, 3) else 0x100 + d
        out.append(
            (
                s,
                roce_frame(
                    HOSTS[s][1],
                    HOSTS[d][1],
                    "WRITE_ONLY",
                    qpn,
                    i,
                    bytes(16 + 8 * i),
                    eth_src=HOSTS[s][0],
                    eth_dst=ROUTER,
                    dscp=48 if i % 5 == 0 else 0,
                ),
            )
        )
    out.append(
        (
            1,
            roce_frame(
                "10.0.0.1",
                "10.9.9.9",
                "WRITE_ONLY",
                0x200,
                1,
                b"x" * 8,
                eth_src=HOSTS[1][0],
                eth_dst=ROUTER,
            ),
        )
    )
    out.append(
        (
            2,
            roce_frame(
                "10.0.0.2",
                "10.0.0.1",
                "SEND_ONLY",
                0x101,
                2,
                b"y" * 8,
                eth_src=HOSTS[2][0],
                eth_dst="02:00:00:00:77:77",
            ),
        )
    )
    full = roce_frame(
        "10.0.0.1",
        "10.0.0.2",
        "SEND_ONLY",
        0x102,
        3,
        b"z" * 40,
        eth_src=HOSTS[1][0],
        eth_dst=ROUTER,
    )
    out += [(1, full[:30]), (1, full[:10])]
    return out * 3


@pytest.fixture(scope="module")
def lab_switch():
    ports = PortSet()
    for n in PORTS:
        ports.add_inprocess(n)
    srv = P4RuntimeServer(device_id=0, cpu_port=255, ports=ports, clock="wall")
    srv.start("127.0.0.1:0")
    srv.load_program(str(ROCE_SWITCH))
    target = open_target("p4runtime", grpc_addr=f"127.0.0.1:{srv.port}", device_id=0)
    try:
        apply_config(load_config(LAB), target)
    finally:
        target.close()
    yield srv
    srv.stop(grace=0)


def _outputs(
    srv: P4RuntimeServer,
    feed: Callable[[list[tuple[int, bytes]]], None],
    mix: list[tuple[int, bytes]],
) -> dict[int, list[bytes]]:
    """What each port emits for `mix` fed by `feed`, once the switch has gone quiet."""
    outs = {n: srv.ports.ports[n].output for n in PORTS}
    for q in outs.values():
        q.clear()
    feed(mix)
    last, still = -1, time.monotonic()
    while time.monotonic() - still < 0.3:  # wall clock: lab.yaml's port speeds pace the output
        time.sleep(0.02)
        n = sum(len(q) for q in outs.values())
        if n != last:
            last, still = n, time.monotonic()
    return {n: list(q) for n, q in outs.items()}


def _one_by_one(srv: P4RuntimeServer) -> Callable[[list[tuple[int, bytes]]], None]:
    def feed(mix: list[tuple[int, bytes]]) -> None:
        for port, frame in mix:
            srv.inject(port, frame)

    return feed


def _batched(
    many: Callable[[int, list[bytes]], None], sizes: tuple[int, ...] = (1, 7, 16, 3, 64)
) -> Callable[[list[tuple[int, bytes]]], None]:
    """Runs of frames from one port, cut in batches of the given sizes in turn."""

    def feed(mix: list[tuple[int, bytes]]) -> None:
        i, k = 0, 0
        while i < len(mix):
            port = mix[i][0]
            j = i
            while j < len(mix) and mix[j][0] == port and j - i < sizes[k % len(sizes)]:
                j += 1
            many(port, [f for _, f in mix[i:j]])
            i, k = j, k + 1

    return feed


def test_batches_forward_what_single_frames_do(lab_switch):
    mix = _mix()
    mix.sort(key=lambda pf: pf[0])  # runs of one port, so batches have several frames
    ref = _outputs(lab_switch, _one_by_one(lab_switch), mix)
    assert (
        len(ref[2]) > 10 and len(ref[3]) > 10 and len(ref[1]) > 10 and len(ref[9]) > 5
    )  # routed and mirrored
    assert sum(map(len, ref.values())) < len(mix) + len(ref[9])  # some were dropped
    got = _outputs(lab_switch, _batched(lab_switch.inject_many), mix)
    assert got == ref


def test_negative_control_a_lost_frame_is_seen(lab_switch):
    mix = sorted(_mix(), key=lambda pf: pf[0])
    ref = _outputs(lab_switch, _one_by_one(lab_switch), mix)

    def lossy(port: int, frames: list[bytes]) -> None:  # planted: the last frame of a batch is lost
        lab_switch.inject_many(port, frames[:-1] if len(frames) > 1 else frames)

    assert _outputs(lab_switch, _batched(lossy), mix) != ref


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a veth pair and AF_PACKET")
def test_interface_reader_batches_a_burst_in_order():
    from controller.targets import netns
    from p4rtproto.afpacket import packet_socket

    a, b = netns.name("ba"), netns.name("bb")
    with netns.NetnsSet() as nets:
        nets.add_veth(a, b)
        port = InterfacePort(1, a)
        batches: list[list[bytes]] = []
        all_sent = threading.Event()

        def many(n: int, frames: list[bytes]) -> None:
            batches.append(list(frames))
            if len(batches) == 1:
                # a slow switch: the rest of the burst waits on the socket meanwhile (an event,
                # not a sleep: on a loaded machine the sender may need longer than any sleep)
                all_sent.wait(30)

        port.start(lambda n, f: batches.append([f]), many)
        tx = packet_socket(b)
        try:
            sent = []
            for i in range(200):
                f = bytes.fromhex("02000000000102000000000288b5") + i.to_bytes(2, "big") + bytes(60)
                if i % 10 == 3:  # 802.1Q: the kernel strips it, the port puts it back
                    f = f[:12] + bytes.fromhex("81006005") + f[12:]
                sent.append(f)
            port.transmit(
                bytes.fromhex("020000000002020000000001") + b"\x88\xb6" + bytes(50)
            )  # not heard back
            for f in sent:
                tx.send(f)
            all_sent.set()
            deadline = time.monotonic() + 30  # the loop ends as soon as every frame is in
            while sum(map(len, batches)) < len(sent) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
        finally:
            tx.close()
            port.close()
    got = [f for batch in batches for f in batch]
    assert got == sent
    assert max(map(len, batches)) > 1 and max(map(len, batches)) <= InterfacePort.READ_BATCH
    assert port.rx_frames == len(sent)
