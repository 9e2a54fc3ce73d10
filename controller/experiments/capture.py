"""capture: what each observation point sees of one RoCE flow (kernel bypass)."""

from __future__ import annotations

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from controller.hosts.rc import WRITE
from controller.packets import decode
from controller.testing.dataplane import port_cells

from .base import Fabric, HostDef, Result, experiment, host_defs

MIRROR_PORT = 9


def _tcp(src: HostDef, dst: HostDef, next_hop: str, i: int) -> bytes:
    """A kernel-stack frame (a TCP segment of an ssh session, say)."""
    return bytes(
        Ether(src=src.mac, dst=next_hop)
        / IP(src=src.ip, dst=dst.ip)
        / TCP(sport=40000, dport=22, seq=i, flags="A")
    )


@experiment(
    "capture",
    "Kernel bypass blinds host capture: of one RoCE WRITE flow, what do tcpdump on the "
    "server, the NIC's counters, a NIC mirror flag, the switch's mirror port and its "
    "telemetry each see?",
    total=64 * 1024,
    kernel_frames=5,
    nic_mirror=False,
    seed=1,
)
def capture(res: Result, total: int, kernel_frames: int, nic_mirror: bool, seed: int) -> None:
    rows = []
    counts: dict[bool, dict] = {}
    for mirror in (nic_mirror, True):
        hosts = host_defs(2)
        ports = {h.port: {"speed": "10G", "cable_m": 2} for h in hosts}
        ports[MIRROR_PORT] = {"speed": "10G", "cable_m": 2}
        fab = Fabric(
            hosts,
            switch={
                "ports": ports,
                "mirror": [{"session": 100, "port": MIRROR_PORT, "match": {"dst": "h2"}}],
            },
            seed=seed,
            rp_enabled=False,
        )
        server = fab.hosts["h2"]
        server.spec.nic_mirror = mirror
        cap = fab.eng.capture(MIRROR_PORT)
        qa, qb = fab.connect("h1", "h2")
        a = fab.hosts["h1"]
        for i in range(kernel_frames):
            a.send_kernel(_tcp(hosts[0], hosts[1], a.spec.gateway_mac or hosts[1].mac, i))
        a.post(qa, WRITE, total)
        req = a.qps[qa].requester
        fab.run_until(lambda req=req: req.idle, 10_000_000)
        fab.eng.run(fab.now() + 50_000)  # let the last mirrored copies out
        data = -(-total // 1024)
        resp = server.qps[qb].responder
        mirrored = [decode(f) for _t, f in cap.frames]
        c = {
            "tcpdump_roce": server.tcpdump.roce,
            "tcpdump_kernel": server.tcpdump.other,
            "nic_packets": resp.stats.packets_received,
            "nic_rx_write_requests": server.counters(qb)["rx_write_requests"],
            "switch_mirror_roce": sum(r.is_roce for r in mirrored),
            "switch_mirror_kernel": sum(not r.is_roce for r in mirrored),
            "telemetry_roce_rx": sum(p for p, _b in port_cells(fab.target, "roce_rx", 1, 8)),
            "telemetry_roce_tx": sum(p for p, _b in port_cells(fab.target, "roce_tx", 2, 8)),
            "data_packets": data,
        }
        counts[mirror] = c
        label = "NIC mirror on" if mirror else "NIC mirror off"
        rows += [
            {
                "point": f"tcpdump on the server ({label})",
                "roce": c["tcpdump_roce"],
                "kernel": c["tcpdump_kernel"],
            },
            {"point": f"NIC counters ({label})", "roce": c["nic_packets"], "kernel": "-"},
        ]
        if not mirror or mirror == nic_mirror:
            rows += [
                {
                    "point": "switch mirror port",
                    "roce": c["switch_mirror_roce"],
                    "kernel": c["switch_mirror_kernel"],
                },
                {
                    "point": "switch telemetry roce_rx (port 1)",
                    "roce": c["telemetry_roce_rx"],
                    "kernel": "-",
                },
            ]
    res.table = rows
    off, on = counts[nic_mirror], counts[True]
    n = off["data_packets"]
    res.check(
        "tcpdump on the server sees none of the RoCE flow, all of the kernel's",
        off["tcpdump_roce"] == 0 and off["tcpdump_kernel"] == kernel_frames,
        f"{off['tcpdump_roce']} RoCE frames, {off['tcpdump_kernel']} of {kernel_frames} "
        "kernel frames",
    )
    res.check(
        "the NIC counted every packet",
        off["nic_packets"] == n and off["nic_rx_write_requests"] == 1,
        f"{off['nic_packets']} of {n} packets, {off['nic_rx_write_requests']} WRITE",
    )
    res.check(
        "a NIC mirror flag shows the flow to tcpdump (data in, ACKs out)",
        on["tcpdump_roce"] > n and on["tcpdump_kernel"] == kernel_frames,
        f"{on['tcpdump_roce']} RoCE frames (>{n}: its ACKs too)",
    )
    res.check(
        "the switch's mirror and telemetry see every data packet",
        off["switch_mirror_roce"] == n
        and off["switch_mirror_kernel"] == kernel_frames
        and off["telemetry_roce_rx"] == n
        and off["telemetry_roce_tx"] == n,
        f"mirror {off['switch_mirror_roce']} RoCE + {off['switch_mirror_kernel']} "
        f"kernel, roce_rx {off['telemetry_roce_rx']}, roce_tx {off['telemetry_roce_tx']}",
    )
    res.answer = (
        f"of {n} RoCE data packets: tcpdump {off['tcpdump_roce']} (it does see the "
        f"{off['tcpdump_kernel']} kernel frames), NIC counters {off['nic_packets']}, "
        f"NIC mirror flag {on['tcpdump_roce']} (with ACKs), switch mirror "
        f"{off['switch_mirror_roce']}, switch telemetry {off['telemetry_roce_rx']}"
    )

    def plot(ax, res: Result) -> None:
        ax.barh([r["point"] for r in res.table], [r["roce"] for r in res.table], color="tab:red")
        ax.set_xlabel("RoCE frames seen")
        ax.invert_yaxis()

    res.plot = plot
