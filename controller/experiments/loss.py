"""loss: goodput under random loss, go-back-N vs selective repeat vs lossless."""

from __future__ import annotations

from controller.hosts.host import ETH_OVERHEAD
from controller.hosts.rc import WRITE
from controller.packets.build import ack_frame

from .base import Fabric, Result, experiment, host_defs

HDRS_V4 = 14 + 20 + 8 + 12 + 4  # Ethernet, IPv4, UDP, BTH, ICRC of a middle packet


def _run(
    p: float,
    what: str,
    transport: str,
    *,
    duration_us: float,
    warmup_us: float,
    prop_ns: int,
    speed_bps: float,
    window: int,
    timeout_us: float,
    seed: int,
    ack_every: int,
) -> dict:
    fab = Fabric(
        host_defs(2),
        speed_bps=speed_bps,
        prop_ns=prop_ns,
        seed=seed,
        rp_enabled=False,
        window=window,
        timeout_ns=int(timeout_us * 1000),
        transport=transport,
        ack_every=ack_every,
    )
    qa, qb = fab.connect("h1", "h2")
    lossy = fab.loss("h1" if what == "data" else "h2", p, seed)
    a, b = fab.hosts["h1"], fab.hosts["h2"]
    for _ in range(64):
        a.post(qa, WRITE, 1 << 20)  # far more than the run can move
    resp, req = b.qps[qb].responder, a.qps[qa].requester
    t0 = fab.now()
    fab.eng.run(t0 + int(warmup_us * 1000))
    got0, to0 = resp.stats.bytes_received, req.stats.timeouts
    fab.eng.run(t0 + int(duration_us * 1000))
    window_s = (duration_us - warmup_us) / 1e6
    return {
        "loss_of": what,
        "p": p,
        "transport": transport,
        "goodput_gbps": (resp.stats.bytes_received - got0) * 8 / window_s / 1e9,
        "sent": lossy["sent"],
        "dropped": lossy["dropped"],
        "p_measured": lossy["dropped"] / max(1, lossy["sent"]),
        "retransmitted": req.stats.retransmitted_packets,
        "timeouts": req.stats.timeouts,
        "timeouts_in_window": req.stats.timeouts - to0,
        "naks": req.stats.naks,
        "state": a.qps[qa].state,
    }


@experiment(
    "loss",
    "How does goodput fall with random loss of data and of ACKs, for go-back-N (what RoCE "
    "NICs do), selective repeat (IRN) and a lossless fabric -- and what explains it?",
    rates=[0.005, 0.02, 0.05],
    duration_us=1500.0,
    warmup_us=200.0,
    prop_ns=10_000,
    speed_bps=10e9,
    window=256,
    timeout_us=200.0,
    ack_every=4,
    seed=7,
    sr_transport="sr",
)
def loss(
    res: Result,
    rates: list[float],
    duration_us: float,
    warmup_us: float,
    prop_ns: int,
    speed_bps: float,
    window: int,
    timeout_us: float,
    ack_every: int,
    seed: int,
    sr_transport: str,
) -> None:
    kw = dict(
        duration_us=duration_us,
        warmup_us=warmup_us,
        prop_ns=prop_ns,
        speed_bps=speed_bps,
        window=window,
        timeout_us=timeout_us,
        seed=seed,
        ack_every=ack_every,
    )
    base = _run(0.0, "data", "gbn", **kw)
    base["transport"] = "lossless"
    rows = [base]
    for what in ("data", "ack"):
        for p in rates:
            for tr, label in (("gbn", "gbn"), (sr_transport, "sr")):
                r = _run(p, what, tr, **kw)
                r["transport"] = label
                rows.append(r)
    res.table = rows
    mtu = 1024
    frame = mtu + HDRS_V4 + ETH_OVERHEAD
    line = speed_bps * mtu / frame / 1e9
    # RTT: two links each way (host-switch-host), a data frame out, an ACK back
    ack = len(_ack_frame()) + ETH_OVERHEAD
    rtt_ns = 4 * prop_ns + 2 * frame * 8e9 / speed_bps + 2 * ack * 8e9 / speed_bps
    bdp = rtt_ns * speed_bps / 8e9 / frame  # packets in flight when the NAK returns
    w_eff = min(window, bdp)
    res.data = {
        "rtt_us": rtt_ns / 1e3,
        "bdp_packets": bdp,
        "window": window,
        "line_goodput_gbps": line,
    }

    def g(what: str, tr: str, p: float) -> float:
        return next(
            r["goodput_gbps"]
            for r in rows
            if r["loss_of"] == what and r["transport"] == tr and r["p"] == p
        )

    res.check(
        "lossless runs at line rate",
        base["goodput_gbps"] >= 0.97 * line,
        f"{base['goodput_gbps']:.2f} Gb/s of {line:.2f} Gb/s payload rate",
    )
    gbn = [g("data", "gbn", p) for p in rates]
    res.check(
        "go-back-N goodput falls as data loss rises",
        all(x > y for x, y in zip([base["goodput_gbps"], *gbn], gbn, strict=False)),
        ", ".join(f"p={p:g}: {x:.2f}" for p, x in zip(rates, gbn, strict=True)),
    )
    sr = [g("data", "sr", p) for p in rates]
    res.check(
        "selective repeat beats go-back-N at every loss rate",
        all(s > x for s, x in zip(sr, gbn, strict=True)),
        ", ".join(
            f"p={p:g}: SR {s:.2f} vs GBN {x:.2f}" for p, s, x in zip(rates, sr, gbn, strict=True)
        ),
    )
    # Go-back-N resends everything in flight behind each loss: ~W_eff packets per loss,
    # at the loss rate the run really had (retransmissions are lost too); a lost
    # retransmission gets no second NAK, so the link then idles for a retransmit timeout.
    gr = [
        next(r for r in rows if r["loss_of"] == "data" and r["transport"] == "gbn" and r["p"] == p)
        for p in rates
    ]
    pm = [r["p_measured"] for r in gr]
    span = duration_us - warmup_us
    model = [
        base["goodput_gbps"]
        / (1 + r["p_measured"] * w_eff)
        * max(0.0, 1 - r["timeouts_in_window"] * timeout_us / span)
        for r in gr
    ]
    close = all(abs(m - x) <= 0.3 * m for m, x in zip(model, gbn, strict=True))
    res.check(
        "go-back-N follows goodput / (1 + p * W) less its timeouts, W = min(window, BDP)",
        close,
        f"W = min({window}, {bdp:.0f}) packets (RTT {rtt_ns / 1e3:.1f} us), "
        f"RTO {timeout_us:g} us; "
        + ", ".join(
            f"p={q:.3g}, {r['timeouts_in_window']} timeouts: model {m:.2f} measured {x:.2f}"
            for q, r, m, x in zip(pm, gr, model, gbn, strict=True)
        ),
    )
    ackg = [g("ack", "gbn", p) for p in rates]
    acks_lost = sum(r["dropped"] for r in rows if r["loss_of"] == "ack")
    res.check(
        "losing ACKs costs far less than losing data (cumulative ACKs)",
        acks_lost > 0
        and all(a > x for a, x in zip(ackg, gbn, strict=True))
        and ackg[-1] >= 0.8 * base["goodput_gbps"],
        f"{acks_lost} ACKs lost in all; "
        + ", ".join(
            f"p={p:g}: ACK loss {a:.2f} vs data loss {x:.2f}"
            for p, a, x in zip(rates, ackg, gbn, strict=True)
        ),
    )
    res.data["model_gbps"] = model
    res.data["p_measured"] = pm
    res.answer = (
        f"at {rates[-1]:g} data loss go-back-N keeps {gbn[-1] / line * 100:.0f}% of "
        f"line rate, selective repeat {sr[-1] / line * 100:.0f}%; the same ACK loss "
        f"keeps {ackg[-1] / line * 100:.0f}%. Each lost packet costs go-back-N the "
        f"~{bdp:.0f} packets in flight (RTT {rtt_ns / 1e3:.1f} us x "
        f"{speed_bps / 1e9:g} Gb/s; window {window})"
    )

    def plot(ax, res: Result) -> None:
        for what, tr, style in (
            ("data", "gbn", "o-"),
            ("data", "sr", "s-"),
            ("ack", "gbn", "x--"),
            ("ack", "sr", "+--"),
        ):
            pts = [
                (r["p"], r["goodput_gbps"])
                for r in res.table
                if r["loss_of"] == what and r["transport"] == tr
            ]
            ax.plot(
                [0] + [p for p, _ in pts],
                [base["goodput_gbps"]] + [x for _, x in pts],
                style,
                label=f"{tr}, loss of {what}",
            )
        ax.plot(
            [0, *res.data["p_measured"]],
            [base["goodput_gbps"], *res.data["model_gbps"]],
            ":",
            color="gray",
            label="model 1/(1+pW) at the measured p",
        )
        ax.set_xlabel("loss probability")
        ax.set_ylabel("goodput (Gb/s)")
        ax.legend(fontsize=7)

    res.plot = plot


def _ack_frame() -> bytes:
    return ack_frame("10.0.0.1", "10.0.0.2", 1, 0, 0)
