"""Mirroring RoCE to a capture port (docs/bringup.md, "Capturing RoCE traffic").

Host tcpdump sees nothing of RDMA traffic, so the switch copies it: a clone session whose
replica leaves a capture port, and a mirror_flow entry selecting RoCEv2 (UDP 4791).
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from controller.packets.build import pad_frame, roce_frame
from controller.targets import CloneSession, CounterQuery, Exact, TableEntry, Ternary
from controller.testing.dataplane import Exchange, mac_int

SRC_MAC, DST_MAC = "02:00:00:00:02:01", "02:00:00:00:02:02"


def test_roce_is_copied_to_the_capture_port(target, target_ports):
    if len(target_ports) < 3:
        pytest.skip(f"needs 3 data ports (in, out, capture); the port map gives {target_ports}")
    port_in, port_out, capture = target_ports[:3]
    target.write(
        [
            TableEntry(
                "l2_fwd",
                {"hdr.ethernet.dst": Exact(mac_int(DST_MAC))},
                "l2_forward",
                {"port": port_out},
            ),
            CloneSession(session=5, ports=(capture,)),
            TableEntry(
                "mirror_flow",
                {"meta.l4_dport": Ternary(4791, 0xFFFF)},
                "mirror_to",
                {"session": 5},
                priority=10,
            ),
        ]
    )
    ex = Exchange(target, (port_out, capture))  # a copy may trail the original
    target.write(ex.config())
    roce = roce_frame(
        "10.0.2.1",
        "10.0.2.2",
        "WRITE_ONLY",
        0x33,
        1,
        bytes(100),
        eth_src=SRC_MAC,
        eth_dst=DST_MAC,
        va=0x2000,
        rkey=9,
    )
    out = ex.send(port_in, roce)
    assert sorted((o.port, o.data) for o in out) == sorted([(port_out, roce), (capture, roce)])

    other = pad_frame(
        bytes(
            Ether(src=SRC_MAC, dst=DST_MAC)
            / IP(src="10.0.2.1", dst="10.0.2.2")
            / UDP(sport=49152, dport=5000)
            / bytes(20)
        )
    )
    out = ex.send(port_in, other)
    assert [(o.port, o.data) for o in out] == [(port_out, other)], "only RoCEv2 is mirrored"
    # The original is counted once, on its own egress port: the copy is not RoCE traffic out.
    tx_out, tx_capture = (
        target.read(CounterQuery("roce_tx", p * 8))[0].packets for p in (port_out, capture)
    )
    assert (tx_out, tx_capture) == (1, 0)
