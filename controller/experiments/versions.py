"""v1-vs-v2: RoCEv1 (EtherType 0x8915, L2 only) against RoCEv2 (UDP 4791, routable)."""

from __future__ import annotations

from controller.hosts.rc import WRITE
from controller.packets import decode
from controller.testing.dataplane import port_cells

from .base import Fabric, Result, experiment, host_defs

DROP_ROCEV1_L3 = 6  # p4src/include/headers.p4


def _case(version: int, v6: bool, routed: bool, routing: str, total: int, seed: int) -> dict:
    hosts = host_defs(2, v6=v6, subnets=routed)
    fab = Fabric(
        hosts,
        switch={"routing": routing},
        seed=seed,
        rp_enabled=False,
        roce_version=version,
        retry_cnt=1,
        timeout_ns=100_000,
    )
    qa, _ = fab.connect("h1", "h2")
    a, b = fab.hosts["h1"], fab.hosts["h2"]
    seen: list[int] = []
    inner = b.receive

    def receive(frame: bytes) -> None:
        rec = decode(frame)
        if rec.is_roce:
            seen.append(rec.ttl)
        inner(frame)

    b.receive = receive  # type: ignore[method-assign]
    a.post(qa, WRITE, total)
    req = a.qps[qa].requester
    fab.run_until(lambda: req.idle, 20_000_000)
    wr = req.done[0]
    label = f"RoCEv{version}" + ("" if version == 1 else (" IPv6" if v6 else " IPv4"))
    return {
        "case": label,
        "path": "routed" if routed else "bridged",
        "routing": routing,
        "status": wr.status,
        "frames_arrived": len(seen),
        "ttl_at_receiver": min(seen) if seen else None,
        "rocev1_l3_drops": port_cells(fab.target, "drops", 1, 16)[DROP_ROCEV1_L3][0],
        "bytes_delivered": b.qps[qa + 0x1000].responder.stats.bytes_received,
    }


@experiment(
    "v1-vs-v2",
    "RoCEv1 (EtherType 0x8915, no IP header) bridges but does not cross a routed hop; "
    "does RoCEv2 (UDP 4791) cross it, over IPv4 and IPv6?",
    total=16 * 1024,
    routed_mode="l3",
    seed=1,
)
def v1_vs_v2(res: Result, total: int, routed_mode: str, seed: int) -> None:
    rows = [
        _case(1, False, False, "l2", total, seed),
        _case(2, False, False, "l2", total, seed),
        _case(1, False, True, routed_mode, total, seed),
        _case(2, False, True, routed_mode, total, seed),
        _case(2, True, True, routed_mode, total, seed),
    ]
    res.table = rows
    v1b, v2b, v1r, v2r4, v2r6 = rows
    res.check(
        "both versions bridge",
        all(r["status"] == "IBV_WC_SUCCESS" and r["bytes_delivered"] == total for r in (v1b, v2b)),
        f"RoCEv1 {v1b['status']}, RoCEv2 {v2b['status']} on one L2 segment",
    )
    res.check(
        "RoCEv1 does not cross the routed hop",
        v1r["frames_arrived"] == 0
        and v1r["rocev1_l3_drops"] > 0
        and v1r["status"] == "IBV_WC_RETRY_EXC_ERR",
        f"{v1r['frames_arrived']} frames arrived, {v1r['rocev1_l3_drops']} dropped "
        f"(DROP_ROCEV1_L3), the WRITE ends {v1r['status']}",
    )
    res.check(
        "RoCEv2 crosses it over IPv4 and IPv6, one hop (TTL 64 -> 63)",
        all(
            r["status"] == "IBV_WC_SUCCESS"
            and r["bytes_delivered"] == total
            and r["ttl_at_receiver"] == 63
            for r in (v2r4, v2r6)
        ),
        f"IPv4 {v2r4['status']} TTL {v2r4['ttl_at_receiver']}, IPv6 {v2r6['status']} "
        f"hop limit {v2r6['ttl_at_receiver']}",
    )
    res.answer = (
        f"bridged: both deliver {total} B; routed: RoCEv1 delivers "
        f"{v1r['bytes_delivered']} B ({v1r['rocev1_l3_drops']} frames dropped at the "
        f"router, {v1r['status']}), RoCEv2 delivers {v2r4['bytes_delivered']} B over "
        f"IPv4 and {v2r6['bytes_delivered']} B over IPv6 with the TTL decremented"
    )

    def plot(ax, res: Result) -> None:
        labels = [f"{r['case']}\n{r['path']}" for r in res.table]
        ax.bar(labels, [r["bytes_delivered"] / 1024 for r in res.table], color="tab:purple")
        ax.set_ylabel("KiB delivered")

    res.plot = plot
