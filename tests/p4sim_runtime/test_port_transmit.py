"""What the switch emits leaves by PortSet.transmit_many (service._emit): per port, the
same frames in the same order as one PortSet.transmit per output, the CPU port's outputs
left out, frames for a port we do not have counted, captures written; over a real veth
(root) the peer receives exactly the frames sent. The negative control plants a batch
path that loses the last run and checks that the comparison sees it."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass

import pytest

from p4sim.runtime.ports import InterfacePort, PortSet

CPU = 255


@dataclass
class Out:
    port: int
    data: bytes


def _outs(seed: int = 7, n: int = 300) -> list[Out]:
    rnd = random.Random(seed)
    return [
        Out(rnd.choice((1, 1, 2, 3, CPU, 9)), rnd.randbytes(rnd.randint(14, 300))) for _ in range(n)
    ]


def _portset(tmp_path=None) -> tuple[PortSet, dict[int, list[bytes]]]:
    got: dict[int, list[bytes]] = {1: [], 2: [], 3: []}
    ps = PortSet(pcap_dir=tmp_path)
    for n in got:
        ps.add_inprocess(n, on_output=got[n].append)
    return ps, got


def _reference(outs: list[Out]) -> tuple[dict[int, list[bytes]], int]:
    ps, got = _portset()
    for o in outs:
        if o.port != CPU:
            ps.transmit(o.port, o.data)
    return got, ps.unknown_port_drops


def test_transmit_many_is_transmit_of_each():
    outs = _outs()
    ref, ref_drops = _reference(outs)
    ps, got = _portset()
    for k in range(0, len(outs), 37):  # batches of any size, runs across ports
        ps.transmit_many(outs[k : k + 37], CPU)
    assert got == ref and ps.unknown_port_drops == ref_drops
    assert ref_drops == sum(o.port == 9 for o in outs) > 0
    assert sum(map(len, ref.values())) == sum(o.port in (1, 2, 3) for o in outs)
    assert ps.ports[1].tx_frames == len(ref[1])


def test_negative_control_a_lost_last_run_is_seen(monkeypatch):
    outs = _outs()
    ref, _ = _reference(outs)

    def lossy(self, outs, skip_port=None):  # planted: the final run is never sent
        run, run_port = [], None
        for out in outs:
            if out.port == skip_port:
                continue
            if out.port != run_port:
                if run:
                    self._send_run(run_port, run)
                run, run_port = [], out.port
            run.append(out.data)

    monkeypatch.setattr(PortSet, "transmit_many", lossy)
    ps, got = _portset()
    for k in range(0, len(outs), 37):
        ps.transmit_many(outs[k : k + 37], CPU)
    assert got != ref


def test_captures_see_every_frame_out(tmp_path):
    from scapy.utils import rdpcap

    outs = _outs(n=40)
    ps, got = _portset(tmp_path)
    ps.transmit_many(outs, CPU)
    ps.close()
    for n in (1, 2, 3):
        assert [bytes(p) for p in rdpcap(str(tmp_path / f"port{n}_out.pcap"))] == got[n] != []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a veth pair and AF_PACKET")
def test_over_a_veth_the_peer_receives_exactly_what_was_sent():
    from controller.targets import netns
    from p4rtproto.afpacket import packet_socket, recv_frame

    a, b = netns.name("ta"), netns.name("tb")
    with netns.NetnsSet() as nets:
        nets.add_veth(a, b)
        port = InterfacePort(2, a)
        rx = packet_socket(b, rcvbuf=16 << 20)  # room for the whole burst
        rx.settimeout(0.2)
        macs = bytes.fromhex("020000000002020000000001")
        sent = [
            macs
            + b"\x88\xb5"
            + i.to_bytes(2, "big")
            + bytes((i * 13 + k) & 0xFF for k in range(size))
            for i, size in enumerate([50, 1024, 4000, 8900, 60, 1400] * 10)
        ]
        got: list[bytes] = []
        try:
            port.transmit_many(sent[:30])
            port.transmit_many(sent[30:])
            deadline = time.monotonic() + 10
            while len(got) < len(sent) and time.monotonic() < deadline:
                try:
                    data, _addr = recv_frame(rx)
                except TimeoutError:
                    continue
                if data[12:14] == b"\x88\xb5":
                    got.append(data)
        finally:
            rx.close()
            port.close()
    assert got == sent and port.tx_frames == len(sent)
