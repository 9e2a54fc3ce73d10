"""RoCEv2 traffic in both directions through any target, counters read back from it.

On --target p4sim-grpc/bmv2/hw these frames cross real interfaces (veth pairs or NICs) and
the counters come over P4Runtime; on p4sim they go through the in-process switch.
"""

from __future__ import annotations

from controller.packets import decode
from controller.packets.build import ack_frame, roce_frame
from controller.targets import CounterQuery, Exact, TableEntry, TableQuery
from controller.testing.dataplane import SENTINEL_MAC, Exchange, mac_int

MAC = {1: "02:00:00:00:01:01", 2: "02:00:00:00:01:02"}
IP = {1: "10.0.1.1", 2: "10.0.1.2"}


def l2(port_of: dict[str, int]) -> list[TableEntry]:
    return [
        TableEntry(
            "l2_fwd", {"hdr.ethernet.dst": Exact(mac_int(mac))}, "l2_forward", {"port": port}
        )
        for mac, port in port_of.items()
    ]


def test_write_and_ack_both_ways(target, target_ports):
    a, b = target_ports[0], target_ports[1]
    target.write(l2({MAC[1]: a, MAC[2]: b, SENTINEL_MAC: b}))
    assert len(target.read(TableQuery("l2_fwd"))) == 3

    to_b = [
        roce_frame(
            IP[1],
            IP[2],
            "WRITE_ONLY" if i == 0 else "SEND_ONLY",
            0x22,
            i,
            bytes(range(64)),
            eth_src=MAC[1],
            eth_dst=MAC[2],
            va=0x1000,
            rkey=7,
        )
        for i in range(4)
    ]
    acks = [
        ack_frame(IP[2], IP[1], 0x11, i, i + 1, eth_src=MAC[2], eth_dst=MAC[1]) for i in range(4)
    ]
    ex_b, ex_a = Exchange(target, b), Exchange(target, a)
    for frame in to_b:
        out = ex_b.send(a, frame)
        assert [(o.port, o.data) for o in out] == [(b, frame)]
    # The sentinel of the reverse direction must come back out of port a.
    target.delete(l2({SENTINEL_MAC: b}))
    target.write(l2({SENTINEL_MAC: a}))
    for frame in acks:
        out = ex_a.send(b, frame)
        assert [(o.port, o.data) for o in out] == [(a, frame)]
        assert decode(out[0].data).aeth_valid == 1

    # No classification entries: everything in traffic class 0 (cell port * 8).
    rx_a, rx_b = (target.read(CounterQuery("roce_rx", p * 8))[0] for p in (a, b))
    tx_a, tx_b = (target.read(CounterQuery("roce_tx", p * 8))[0] for p in (a, b))
    assert (rx_a.packets, rx_a.bytes) == (4, sum(len(f) for f in to_b))
    assert (rx_b.packets, rx_b.bytes) == (4, sum(len(f) for f in acks))
    assert tx_b.packets == 4 and tx_a.packets == 4


def test_unknown_destination_is_dropped_and_counted(target, target_ports):
    a, b = target_ports[0], target_ports[1]
    target.write(l2({SENTINEL_MAC: b}))
    frame = roce_frame(
        IP[1], IP[2], "SEND_ONLY", 0x22, 9, b"x" * 32, eth_src=MAC[1], eth_dst="02:00:00:00:0e:0e"
    )
    assert Exchange(target, b).send(a, frame) == []
    # DROP_L2_MISS (3) on the ingress port
    assert target.read(CounterQuery("drops", a * 16 + 3))[0].packets == 1
