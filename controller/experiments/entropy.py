"""entropy: ECMP on the RoCEv2 UDP source port."""

from __future__ import annotations

import ipaddress
from collections import Counter

from controller.config import names_from_target
from controller.hosts.rc import WRITE
from controller.packets import decode
from controller.targets.base import Exact, Lpm, TableEntry

from .base import Fabric, Result, experiment, host_defs

DEST = "10.9.0.2"  # behind the ECMP group


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2's crc16), written here as an independent oracle of the switch."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def predicted_member(src: str, dst: str, sport: int, size: int) -> int:
    key = (
        int(ipaddress.ip_address(src)).to_bytes(16, "big")
        + int(ipaddress.ip_address(dst)).to_bytes(16, "big")
        + bytes([17])
        + sport.to_bytes(2, "big")
        + (4791).to_bytes(2, "big")
    )
    return crc16_arc(key) % size


def _run(flows: int, links: int, entropy: bool, seed: int) -> dict:
    hosts = host_defs(1 + links)  # h1 sends; ports 2.. are the ECMP uplinks
    fab = Fabric(
        hosts, switch={"routing": "l3"}, seed=seed, rp_enabled=False, sport_entropy=entropy
    )
    names = names_from_target(fab.target)
    T, A = names.table, names.action
    uplinks = [h.port for h in hosts[1:]]
    ents = [
        TableEntry(
            T("ipv4_lpm"),
            {"hdr.ipv4.dst": Lpm(int(ipaddress.ip_address(DEST)), 32)},
            A("set_ecmp"),
            {"group": 1, "size": links},
        )
    ]
    for m, port in enumerate(uplinks):
        ents.append(
            TableEntry(
                T("ecmp_member"),
                {"meta.ecmp_group": Exact(1), "meta.ecmp_member": Exact(m)},
                A("set_nhop"),
                {"nhop_id": 100 + m},
            )
        )
        ents.append(
            TableEntry(
                T("nexthop"),
                {"meta.nhop_id": Exact(100 + m)},
                A("set_nexthop"),
                {"port": port, "smac": 0x0200000000FE, "dmac": 0x0200000009_00 + port},
            )
        )
    fab.target.write(ents)
    for h in hosts[1:]:  # nobody on the uplinks: capture what leaves on them
        del fab.eng.links[h.port]
        fab.eng.capture(h.port)
    a = fab.hosts["h1"]
    qpns = []
    for i in range(flows):
        qpn = 0x400 + i
        a.add_qp(qpn, 0x800 + i, DEST, "02:00:00:00:09:99")
        a.post(qpn, WRITE, 4 * 1024)
        qpns.append(qpn)
    fab.eng.run(fab.now() + 200_000)
    link_of: dict[int, set[int]] = {}
    for port, cap in fab.eng.captures.items():
        for _t, frame in cap.frames:
            rec = decode(frame)
            link_of.setdefault(rec.bth_dqpn - 0x800 + 0x400, set()).add(port)
    per_link = Counter(next(iter(p)) for p in link_of.values() if len(p) == 1)
    oracle = {q: uplinks[predicted_member(hosts[0].ip, DEST, a.sport(q), links)] for q in qpns}
    return {
        "sport": "per QP" if entropy else "fixed 0xC000",
        "flows": flows,
        "flows_seen": len(link_of),
        "links_used": len(per_link),
        "max_flows_per_link": max(per_link.values(), default=0),
        "collisions": flows - sum(1 for c in per_link.values() if c == 1),
        "split_flows": sum(1 for p in link_of.values() if len(p) > 1),
        "matches_crc16_oracle": all(link_of.get(q) == {oracle[q]} for q in qpns),
        "per_link": dict(sorted(per_link.items())),
    }


@experiment(
    "entropy",
    "ECMP hashes the 5-tuple, and the RoCEv2 UDP source port is the only field that differs "
    "between QPs of one host pair: how do N flows spread with a fixed vs a per-QP port?",
    flows=16,
    links=4,
    varied=True,
    seed=1,
)
def entropy(res: Result, flows: int, links: int, varied: bool, seed: int) -> None:
    fixed = _run(flows, links, False, seed)
    per_qp = _run(flows, links, varied, seed)
    res.table = [fixed, per_qp]
    res.check(
        "every flow stays on one link (no reordering)",
        fixed["split_flows"] == 0
        and per_qp["split_flows"] == 0
        and fixed["flows_seen"] == per_qp["flows_seen"] == flows,
        f"flows split over links: {fixed['split_flows']}, {per_qp['split_flows']}",
    )
    res.check(
        "the switch's choice is CRC-16 of the 5-tuple mod the group size",
        fixed["matches_crc16_oracle"] and per_qp["matches_crc16_oracle"],
        "every flow on the link the independent CRC-16/ARC oracle predicts"
        if fixed["matches_crc16_oracle"] and per_qp["matches_crc16_oracle"]
        else "some flow left on another link than predicted",
    )
    res.check(
        "a fixed source port puts every flow on one link",
        fixed["links_used"] == 1 and fixed["max_flows_per_link"] == flows,
        f"{fixed['links_used']} link(s) used, {fixed['max_flows_per_link']} flows on one",
    )
    ideal = -(-flows // links)
    res.check(
        "per-QP source ports spread the flows over every link",
        per_qp["links_used"] == links and per_qp["max_flows_per_link"] < flows / 2,
        f"{per_qp['links_used']} of {links} links used, at most "
        f"{per_qp['max_flows_per_link']} flows per link (ideal {ideal}); "
        f"{per_qp['collisions']} flows share a link",
    )
    res.answer = (
        f"fixed source port: all {flows} flows on 1 of {links} links; per-QP source "
        f"ports: {per_qp['links_used']} links used, flows per link "
        f"{list(per_qp['per_link'].values())} (ideal {ideal} each)"
    )

    def plot(ax, res: Result) -> None:
        width = 0.4
        for k, row in enumerate(res.table):
            ports = sorted(
                set(res.table[0]["per_link"]) | set(res.table[1]["per_link"]) | set(row["per_link"])
            )
            xs = [i + k * width for i in range(len(ports))]
            ax.bar(xs, [row["per_link"].get(p, 0) for p in ports], width, label=row["sport"])
            ax.set_xticks([i + width / 2 for i in range(len(ports))], [f"port {p}" for p in ports])
        ax.set_ylabel("flows")
        ax.legend(fontsize=8)

    res.plot = plot
