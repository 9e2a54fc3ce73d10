"""memory-vs-channel: one-sided (WRITE, READ) against two-sided (SEND) RDMA."""

from __future__ import annotations

from controller.hosts.rc import READ, SEND, WRITE, rnr_timer_ns

from .base import Fabric, Result, experiment, host_defs

MIB = 1 << 20


def _slow_receiver(fab: Fabric, host: str, qpn: int, size: int, count: int, every_ns: int) -> None:
    """A receiver whose CPU posts one more buffer every `every_ns`, `count` times."""
    left = [count]
    h = fab.hosts[host]

    def repost() -> None:
        if left[0] > 0:
            left[0] -= 1
            h.post_recv(qpn, size)
            fab.eng.at(fab.now() + every_ns, repost)

    fab.eng.at(fab.now() + every_ns, repost)


@experiment(
    "memory-vs-channel",
    "The same 1 MiB as WRITEs, READs and SENDs: which ones involve the remote CPU (receive "
    "completions), and what does a receiver that posts too few buffers cost?",
    total=MIB,
    message=64 * 1024,
    starved_depth=2,
    repost_us=150.0,
    rnr_timer=3,
    speed_bps=10e9,
    seed=1,
)
def memory_vs_channel(
    res: Result,
    total: int,
    message: int,
    starved_depth: int,
    repost_us: float,
    rnr_timer: int,
    speed_bps: float,
    seed: int,
) -> None:
    n = -(-total // message)
    rows = []
    for case, op, depth in (
        ("WRITE", WRITE, 0),
        ("READ", READ, 0),
        ("SEND", SEND, n),
        (f"SEND, {starved_depth} buffers posted", SEND, starved_depth),
    ):
        fab = Fabric(host_defs(2), speed_bps=speed_bps, seed=seed, rp_enabled=False)
        a, b = fab.hosts["h1"], fab.hosts["h2"]
        b.spec.rq_depth = depth  # WRITE/READ: nothing posted at all, and they still work
        b.spec.recv_size = message
        b.spec.min_rnr_timer = rnr_timer
        qa, qb = fab.connect("h1", "h2")
        resp = b.qps[qb].responder
        t0 = fab.now()
        if depth < n and op == SEND:
            _slow_receiver(fab, "h2", qb, message, n - depth, int(repost_us * 1000))
        for i in range(n):
            a.post(qa, op, min(message, total - i * message), va=i * message)
        req = a.qps[qa].requester
        done = fab.run_until(lambda req=req: req.idle, 200_000_000)
        t = max(w.completed_ns or 0 for w in req.done) - t0
        ca, cb = a.counters(qa), b.counters(qb)
        rows.append(
            {
                "op": case,
                "messages": n,
                "remote_completions": cb["recv_completions"],
                "rnr_naks": cb["rnr_naks_sent"],
                "rnr_retries": ca["rnr_nak_retry_err"],
                "time_us": t / 1e3,
                "goodput_gbps": total * 8 / t if t else 0.0,
                "ok": done and all(w.status == "IBV_WC_SUCCESS" for w in req.done),
                "rq_left": len(resp.rq),
            }
        )
    res.table = rows
    w, r, s, starved = rows
    res.check(
        "every transfer completes",
        all(x["ok"] for x in rows),
        ", ".join(f"{x['op']}: {'ok' if x['ok'] else 'FAILED'}" for x in rows),
    )
    got = (w["remote_completions"], r["remote_completions"], s["remote_completions"])
    res.check(
        "remote CPU events: WRITE 0, READ 0, SEND one per message",
        got == (0, 0, n),
        f"receive completions {got}, expected (0, 0, {n})",
    )
    res.check(
        "no RNR NAK while buffers are posted",
        s["rnr_naks"] == 0,
        f"{s['rnr_naks']} RNR NAKs with {n} buffers for {n} SENDs",
    )
    need = n - starved_depth
    res.check(
        "too few buffers: RNR NAKs",
        starved["rnr_naks"] >= 1 and need > 0,
        f"{starved['rnr_naks']} RNR NAKs with {starved_depth} buffers for {n} SENDs",
    )
    # The slow receiver paces the sender: one message per buffer it posts, and each RNR
    # NAK costs at least the RNR timer before the retry.
    floor_us = need * repost_us if need > 0 else 0.0
    slower = starved["goodput_gbps"] < 0.5 * s["goodput_gbps"]
    res.check(
        "posting too few buffers costs throughput",
        slower and starved["time_us"] >= floor_us,
        f"{starved['goodput_gbps']:.2f} Gb/s vs {s['goodput_gbps']:.2f} Gb/s with enough "
        f"buffers; {starved['time_us']:.0f} us >= {need} reposts x {repost_us:g} us",
    )
    same = abs(w["goodput_gbps"] - s["goodput_gbps"]) <= 0.05 * s["goodput_gbps"]
    res.check(
        "WRITE and SEND cost the same on the wire",
        same,
        f"{w['goodput_gbps']:.2f} vs {s['goodput_gbps']:.2f} Gb/s",
    )
    res.answer = (
        f"remote receive completions: WRITE {got[0]}, READ {got[1]}, SEND {got[2]} "
        f"(of {n} messages); with {starved_depth} buffers posted, "
        f"{starved['rnr_naks']} RNR NAKs (timer {rnr_timer_ns(rnr_timer) / 1e3:g} us) "
        f"and {starved['goodput_gbps']:.2f} Gb/s instead of {s['goodput_gbps']:.2f}"
    )
    res.data = {"rnr_timer_us": rnr_timer_ns(rnr_timer) / 1e3}

    def plot(ax, res: Result) -> None:
        names = [x["op"] for x in res.table]
        ax.bar(names, [x["goodput_gbps"] for x in res.table], color="tab:blue")
        for i, x in enumerate(res.table):
            ax.text(
                i,
                x["goodput_gbps"],
                f"{x['remote_completions']} CQEs\n{x['rnr_naks']} RNR",
                ha="center",
                va="bottom",
                fontsize=8,
            )
        ax.set_ylabel("goodput (Gb/s)")

    res.plot = plot
