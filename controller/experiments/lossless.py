"""lossless: one 2:1 incast with nothing, PFC, ECN/DCQCN, and both."""

from __future__ import annotations

from controller.hosts.rc import WRITE
from controller.testing.dataplane import port_cells

from .base import Fabric, Result, experiment, host_defs

CLASS = 3


def _switch(pfc: bool, ecn: bool, buffer: int) -> dict:
    sw: dict = {
        "classes": {"dscp": {26: CLASS, 48: 6}},
        "buffer": {"packets": buffer},
        "cnp": {"mode": "host", "class": 6, "dscp": 48, "interval_us": 50},
    }
    if pfc:
        sw["pfc"] = {
            "classes": [CLASS],
            "xoff": "32 pkts",
            "xon": "16 pkts",
            "quanta": 65535,
            "refresh_us": 500,
            "headroom": "16 pkts",
        }
    if ecn:
        sw["ecn"] = {
            "profiles": {"dcqcn": {"kmin": "1 pkts", "kmax": "20KB", "pmax": 1.0}},
            "apply": [{"ports": "all", "class": CLASS, "profile": "dcqcn"}],
        }
    return sw


def _run(
    label: str,
    pfc: bool,
    ecn: bool,
    buffer: int,
    duration_us: float,
    warmup_us: float,
    seed: int,
    rto_us: float = 1000.0,
) -> dict:
    hosts = host_defs(3)
    fab = Fabric(
        hosts,
        switch=_switch(pfc, ecn, buffer),
        seed=seed,
        rp_enabled=ecn,
        window=256,
        timeout_ns=int(rto_us * 1000),
    )
    flows = [fab.connect("h1", "h3"), fab.connect("h2", "h3")]
    for (qa, _), src in zip(flows, ("h1", "h2"), strict=True):
        for _ in range(32):
            fab.hosts[src].post(qa, WRITE, 1 << 20)
    h3 = fab.hosts["h3"]
    depths: list[int] = []
    t0 = fab.now()

    def sample() -> None:
        if fab.now() - t0 >= warmup_us * 1000:
            depths.append(fab.target.queue_depth(3, CLASS) or 0)
        fab.eng.at(fab.now() + 5_000, sample)

    fab.eng.at(t0, sample)
    fab.eng.run(t0 + int(warmup_us * 1000))
    got0 = [h3.qps[qb].responder.stats.bytes_received for _, qb in flows]
    fab.eng.run(t0 + int(duration_us * 1000))
    span_s = (duration_us - warmup_us) / 1e6
    gp = [
        (h3.qps[qb].responder.stats.bytes_received - g0) * 8 / span_s / 1e9
        for (_, qb), g0 in zip(flows, got0, strict=True)
    ]
    tm = fab.target.tm_stats()
    pipeline_drops = sum(
        p
        for port in (1, 2, 3)
        for i, (p, _b) in enumerate(port_cells(fab.target, "drops", port, 16))
        if i != 7
    )
    srt = sorted(depths) or [0]
    return {
        "fabric": label,
        "drops": int(tm["drops_total"]) + pipeline_drops,
        "pauses_received": sum(fab.hosts[h].stats.pfc_received for h in ("h1", "h2")),
        "cnps": sum(fab.hosts[h].stats.cnps_received for h in ("h1", "h2")),
        "queue_p50": srt[len(srt) // 2],
        "queue_max": srt[-1],
        "goodput_gbps": sum(gp),
        "fairness": min(gp) / max(gp) if max(gp) else 0.0,
        "retransmitted": sum(
            fab.hosts[h].qps[qa].requester.stats.retransmitted_packets
            for (qa, _), h in zip(flows, ("h1", "h2"), strict=True)
        ),
    }


@experiment(
    "lossless",
    "The same 2:1 incast with nothing, PFC, ECN/DCQCN, and both: who drops, who pauses, "
    "how deep is the queue, and what goodput is left?",
    buffer=128,
    duration_us=1500.0,
    warmup_us=300.0,
    seed=1,
    rto_us=1000.0,
)
def lossless(
    res: Result, buffer: int, duration_us: float, warmup_us: float, seed: int, rto_us: float
) -> None:
    # With nothing, the two senders are phase-locked at the same line rate (p4sim serialises
    # len + 24 B, as the hosts do): the queue frees one slot per frame time, the same sender
    # always wins it, and the other's whole window is tail-dropped. No later packet of its
    # reaches the receiver, so no sequence NAK: it resends only at its retransmit timeout.
    # A run must outlast one RTO after the first drop (~0.1 ms in) to see the resend.
    if duration_us < rto_us + 200:
        raise ValueError(
            f"lossless: duration_us {duration_us:g} must exceed rto_us {rto_us:g}"
            " + 200 (a fully dropped window recovers only at the RTO)"
        )
    kw = dict(buffer=buffer, duration_us=duration_us, warmup_us=warmup_us, seed=seed, rto_us=rto_us)
    rows = [
        _run("nothing", False, False, **kw),
        _run("PFC", True, False, **kw),
        _run("ECN/DCQCN", False, True, **kw),
        _run("PFC + ECN/DCQCN", True, True, **kw),
    ]
    res.table = rows
    none, pfc, ecn, both = rows
    line = 10 * 1024 / (1024 + 58 + 24)  # payload share of a 10 Gb/s egress (IPv4 frames)
    res.check(
        "with nothing, the incast overflows the buffer and drops",
        none["drops"] > 0 and none["retransmitted"] > 0,
        f"{none['drops']} drops, {none['retransmitted']} packets resent (go-back-N)",
    )
    res.check(
        "PFC: zero drops, paid for with pauses",
        pfc["drops"] == 0 and pfc["pauses_received"] > 0,
        f"{pfc['drops']} drops, {pfc['pauses_received']} pause frames at the senders",
    )
    res.check(
        "ECN/DCQCN: CNPs slow the senders and keep the queue shorter than PFC's",
        ecn["cnps"] > 0 and ecn["queue_p50"] < pfc["queue_p50"],
        f"{ecn['cnps']} CNPs; median queue {ecn['queue_p50']} vs {pfc['queue_p50']} "
        "packets with PFC alone",
    )
    res.check(
        "both: zero drops with fewer pauses than PFC alone",
        both["drops"] == 0 and both["pauses_received"] < pfc["pauses_received"],
        f"{both['drops']} drops, {both['pauses_received']} vs {pfc['pauses_received']} pauses",
    )
    res.check(
        "the lossless fabrics keep the egress busy",
        all(r["goodput_gbps"] >= 0.9 * line for r in (pfc, both)),
        ", ".join(f"{r['fabric']} {r['goodput_gbps']:.2f} Gb/s" for r in rows)
        + f" (payload line rate {line:.2f})",
    )
    res.answer = "; ".join(
        f"{r['fabric']}: {r['drops']} drops, {r['pauses_received']} pauses, {r['cnps']} CNPs, "
        f"queue p50 {r['queue_p50']} max {r['queue_max']}, {r['goodput_gbps']:.2f} Gb/s"
        for r in rows
    )

    def plot(ax, res: Result) -> None:
        names = [r["fabric"] for r in res.table]
        ax.bar(names, [r["goodput_gbps"] for r in res.table], color="tab:orange")
        for i, r in enumerate(res.table):
            ax.text(
                i,
                r["goodput_gbps"],
                f"{r['drops']} drops\n{r['pauses_received']} pauses\nq50 {r['queue_p50']}",
                ha="center",
                va="bottom",
                fontsize=7,
            )
        ax.set_ylabel("goodput (Gb/s)")

    res.plot = plot
