"""Paper vs rocelab: the DCQCN fluid model's fixed point (Zhu et al., CoNEXT 2016) for N = 2,
4, 8 flows into one 10 Gb/s port against what rocelab measures with the same DCQCN
parameters and incast-dcqcn's marking profile (Kmin 1 packet, Kmax 19, Pmax 100%).

Compared: the per-flow rate limit R_C (model: C/N; rocelab: the RPs' R_C averaged over the
window and over flows), the marking probability p (rocelab: CE-marked / data packets
delivered in the window) and the queue (model: RED inverted at p; rocelab: mean sampled
depth). `python -m bench paper [--paper-us=T]` (default 20 ms, the last 10 ms measured).
"""

from __future__ import annotations

import copy

from controller.config import ETH_HDR

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it)
SMOKE = ["--paper-us=100"]


def _incast(n: int, duration_us: float) -> dict:
    from controller.scenarios.scenario import load_scenario

    sc = copy.deepcopy(load_scenario("incast-dcqcn"))
    sw = sc["switch"]
    rx = n + 1
    sw["ports"] = {p: {"speed": "10G", "cable_m": 200} for p in range(1, n + 2)}
    sw["hosts"] = {
        f"h{p}": {"port": p, "mac": f"02:00:00:00:00:{p:02x}", "ip": f"10.0.0.{p}"}
        for p in range(1, n + 2)
    }
    sw["buffer"] = {"packets": 256}  # N line-rate starts overshoot before the first CNP
    sw.pop("mirror", None)
    sc["flows"] = [
        {"src": f"h{p}", "dst": f"h{rx}", "op": "WRITE", "bytes": "10GB", "message": "10MB"}
        for p in range(1, n + 1)
    ]
    sc["watch"] = {"port": rx, "class": 3}
    sc["capture"] = {"ports": []}
    sc.update(name=f"incast-{n}", duration_us=duration_us, warmup_us=duration_us / 2)
    sc["expect"] = {"zero_drops": True}
    return sc


def measure(n: int, duration_us: float) -> dict:
    from controller.scenarios.checks import MIDDLE_HDR_BYTES
    from controller.scenarios.fluid import fixed_point
    from controller.scenarios.scenario import run_once
    from controller.targets import DEFAULT_PROGRAM
    from controller.targets.p4sim import P4SimTarget
    from p4sim.runtime.tm import wire_bytes

    sc = _incast(n, duration_us)
    run = run_once(sc, P4SimTarget(DEFAULT_PROGRAM, seed=1), 1, progress=False)
    mtu = run.queue["frame_bytes"] - ETH_HDR - 60  # 1098 - 74 = the RoCE MTU
    q = run.queue
    warm = run.warmup_ns
    t = run.series["t"]
    ce = sum(c for ti, c in zip(t, run.series["ce"], strict=True) if ti >= warm)
    sample_ns = t[1] - t[0]
    delivered = (
        sum(
            g
            for vals in run.series["goodput"].values()
            for ti, g in zip(t, vals, strict=True)
            if ti >= warm
        )
        * sample_ns
        / 8e9
    )
    pkts = delivered / mtu
    fp = fixed_point(
        n, run.line_bps, run.dcqcn, wire_bytes(mtu + MIDDLE_HDR_BYTES), q["kmin"], q["kmax"], 1.0
    )
    return {
        "n": n,
        "model": fp,
        "rate_bps": sum(f.mean_rate_bps for f in run.flows) / n,
        "p": ce / pkts if pkts else 0.0,
        "queue": q.get("mean", 0.0),
        "drops": run.counters.get("tm_drops", 0),
        "wall_s": run.wall_s,
        "goodputs": [f.goodput_bps for f in run.flows],
    }


def table(rows: list[dict]) -> str:
    from controller.scenarios.report import table as fmt

    out = []
    for r in rows:
        m = r["model"]
        out.append(
            [
                str(r["n"]),
                "R_C per flow (Gb/s)",
                f"{m.rate_bps / 1e9:.3f}",
                f"{r['rate_bps'] / 1e9:.3f}",
                f"{(r['rate_bps'] - m.rate_bps) / m.rate_bps * 100:+.1f}%",
            ]
        )
        out.append(
            [
                str(r["n"]),
                "marking probability p",
                f"{m.p:.4f}",
                f"{r['p']:.4f}",
                f"{(r['p'] - m.p) / m.p * 100:+.0f}%",
            ]
        )
        out.append(
            [
                str(r["n"]),
                "queue (packets)",
                f"{m.queue_pkts:.2f}",
                f"{r['queue']:.2f}",
                f"{r['queue'] - m.queue_pkts:+.2f} pkts",
            ]
        )
    return fmt(
        out, ["N", "quantity", "paper (fluid fixed point)", "rocelab (measured)", "difference"]
    )


def run(argv: list[str]) -> None:
    dur = 20_000.0
    for a in argv:
        if a.startswith("--paper-us="):
            dur = float(a.split("=", 1)[1])
    rows = [measure(n, dur) for n in (2, 4, 8)]
    print(
        f"DCQCN fluid model fixed point (Zhu et al., CoNEXT 2016) vs rocelab, {dur / 1000:g} ms "
        f"runs (last half measured), 10 Gb/s, incast-dcqcn's profile and DCQCN defaults"
    )
    print(table(rows))
    for r in rows:
        print(
            f"  N={r['n']}: {r['drops']} drops, goodputs "
            f"{', '.join(f'{g / 1e9:.2f}' for g in r['goodputs'])} Gb/s, {r['wall_s']:.1f} s wall"
        )
