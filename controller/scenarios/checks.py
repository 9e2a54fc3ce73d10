"""Scenario verdicts: each is one registered function.

A check has a name (the `expect:` key that asks for it), a title, a docstring saying which
physical law it checks, a parameter type (the schema validates `expect:` against it) and a
threshold derived from the scenario's configuration (its Kmin/Kmax, its link speed through
the one wire model, its CNP interval), never a constant a broken run also meets. A check
that finds nothing to judge (no flows, no samples, no sweep points, unread counters) fails
with `no_data` set: a blind check never passes, and a negative control (`expect_fail:`)
does not pass on it either.

Adding a check is adding a function with `@register(...)`: here for one switch's runs, in
its kind's module for another kind of scenario file (controller/fabric/checks.py, loaded
through the scenario-kind registry, controller/scenarios/kinds.py); `judge` never changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.targets.p4sim import wire_bytes

from .results import RunResult, Verdict

# a middle RoCEv2 packet of a multi-packet WRITE (no RETH): Ethernet 14, IPv4 20, UDP 8,
# BTH 12, payload, ICRC 4 (frames carry no FCS; wire_bytes adds FCS, preamble, SFD, IFG)
MIDDLE_HDR_BYTES = 14 + 20 + 8 + 12 + 4


def payload_capacity_bps(line_bps: float, mtu: int) -> float:
    """Payload bits per second a link of `line_bps` carries in full-MTU RoCEv2 packets, from
    the same wire model the traffic manager serialises with (p4sim.runtime.tm.wire_bytes):
    10 Gb/s and a 1,024 B MTU give 10e9 * 1024 / 1106 = 9.259 Gb/s."""
    return float(line_bps) * mtu / wire_bytes(mtu + MIDDLE_HDR_BYTES)


@dataclass(frozen=True)
class Check:
    key: str  # the `expect:` key
    title: str
    kind: str  # parameter type: "true" (only `true`), "fraction" (0..1), "count" (int >= 1), "us" (> 0)
    fn: Callable[[Any, list[RunResult]], list[Verdict]]
    scope: str = "switch"  # "switch": one-switch scenario runs; else a scenario kind's key

    @property
    def physics(self) -> str:
        return (self.fn.__doc__ or "").strip()


CHECKS: dict[str, Check] = {}


def register(key: str, title: str, kind: str, scope: str = "switch") -> Callable:
    def deco(fn: Callable) -> Callable:
        if key in CHECKS:
            raise ValueError(f"check {key!r} registered twice")
        CHECKS[key] = Check(key, title, kind, fn, scope)
        return fn

    return deco


def registered() -> dict[str, Check]:
    """Every check: this module's and those the scenario kinds register (loading them)."""
    from .kinds import kinds

    kinds()
    return CHECKS


def judge(sc: dict, runs: list[RunResult]) -> list[Verdict]:
    """Every check the scenario asks for (`expect:`), then every negative-control check
    (`expect_fail:`): a control passes only when its check failed on real data."""
    out: list[Verdict] = []
    for key, value in (sc.get("expect") or {}).items():
        out += _run(key, value, runs)
    for key, value in (sc.get("expect_fail") or {}).items():
        for v in _run(key, value, runs):
            hit = not v.ok and not v.no_data
            why = (
                "fails as the control predicts"
                if hit
                else (
                    "had no data to judge" if v.no_data else "PASSED, but this control must fail it"
                )
            )
            out.append(Verdict(f"control: {v.name}", hit, f"{why}: {v.detail}"))
    return out


def _run(key: str, value: Any, runs: list[RunResult]) -> list[Verdict]:
    check = registered().get(key)
    if check is None:  # the schema refuses unknown keys; a hand-made dict gets a verdict
        return [Verdict(key, False, f"no check named {key!r}", no_data=True)]
    if not runs:
        return [Verdict(check.title, False, "no runs", no_data=True)]
    return check.fn(value, runs)


def blind(title: str, why: str) -> list[Verdict]:
    return [Verdict(title, False, why, no_data=True)]


# ---------------------------------------------------------------- the checks


@register("fair_share", "fair share", "fraction")
def fair_share(tol: float, runs: list[RunResult]) -> list[Verdict]:
    """N flows through one bottleneck under DCQCN converge to one rate each (the fluid
    model's fixed point is C/N per flow): every flow's goodput over the measurement window
    is within `tol` of the mean."""
    goods = [f.goodput_bps for f in runs[0].flows]
    if len(goods) < 2 or not sum(goods):
        return blind(
            "fair share",
            f"{len(goods)} flow(s), {sum(goods) / 1e9:.2f} Gb/s in total: no share to compare",
        )
    mean = sum(goods) / len(goods)
    worst = max(abs(g - mean) / mean for g in goods)
    return [
        Verdict(
            "fair share",
            worst <= float(tol),
            f"flows {', '.join(f'{g / 1e9:.2f}' for g in goods)} Gb/s; worst "
            f"{worst * 100:.1f}% from the mean (limit {float(tol) * 100:.0f}%)",
        )
    ]


@register("queue_in_band", "queue held in Kmin..Kmax", "true")
def queue_in_band(_: Any, runs: list[RunResult]) -> list[Verdict]:
    """DCQCN's equilibrium sits where the marking probability balances the senders'
    increase: the bottleneck queue's 90th percentile lies in [Kmin, Kmax] of the configured
    profile (it reaches the band, so the link is kept busy; it rarely exceeds Kmax) and the
    queue never reaches the buffer (no overflow). Without a reaction point the queue runs
    to the buffer and this fails."""
    q = runs[0].queue
    if "p90" not in q or "kmin" not in q:
        return blind("queue held in Kmin..Kmax", "no queue samples or no ECN profile")
    lo, hi, buf = q["kmin"], q["kmax"], q.get("buffer", math.inf)
    ok = lo <= q["p90"] <= hi and q["max"] < buf
    return [
        Verdict(
            "queue held in Kmin..Kmax",
            ok,
            f"median {q['p50']:.0f}, 10-90% {q['p10']:.0f}..{q['p90']:.0f}, max "
            f"{q['max']:.0f} pkts; Kmin..Kmax = {lo}..{hi}, buffer {buf} pkts",
        )
    ]


@register("utilization", "bottleneck utilized", "fraction")
def utilization(need: float, runs: list[RunResult]) -> list[Verdict]:
    """The bottleneck carries at least `need` of its payload capacity (link speed x payload
    / wire bytes of a full-MTU packet, the traffic manager's own wire model) and never more
    than that capacity: goodput above it is an accounting error, not physics."""
    r = runs[0]
    cap = r.capacity_bps
    tot = sum(f.goodput_bps for f in r.flows)
    if not cap or not r.flows:
        return blind("bottleneck utilized", "no flows or no capacity")
    ok = float(need) * cap <= tot <= cap * 1.001
    return [
        Verdict(
            "bottleneck utilized",
            ok,
            f"{tot / 1e9:.3f} Gb/s of {cap / 1e9:.3f} Gb/s payload capacity "
            f"({tot / cap * 100:.1f}%, limit {float(need) * 100:.0f}%..100%)",
        )
    ]


@register("zero_drops", "zero drops", "true")
def zero_drops(_: Any, runs: list[RunResult]) -> list[Verdict]:
    """A lossless fabric drops nothing: no tail drop in the traffic manager and no drop in
    the pipeline, on a run that actually moved frames through a readable switch."""
    out = []
    for r in runs:
        name = f"zero drops{' ' + r.label if len(runs) > 1 else ''}"
        c = r.counters
        if c.get("counters_unavailable"):
            out.append(Verdict(name, False, "pipeline drop counters could not be read", True))
            continue
        if not c.get("switch_frames_in"):
            out.append(Verdict(name, False, "no frame reached the switch", True))
            continue
        d = c.get("switch_drops", 0) + c.get("tm_drops", 0)
        out.append(
            Verdict(
                name,
                d == 0,
                f"{c.get('tm_drops', 0)} queue drops, "
                f"{c.get('switch_drops', 0)} pipeline drops of "
                f"{c['switch_frames_in']} frames in",
            )
        )
    return out


def _at_least(title: str, counter: str, what: str, host_counter: str, host_what: str):
    def fn(n: int, runs: list[RunResult]) -> list[Verdict]:
        c = runs[0].counters
        if counter not in c:
            return blind(title, f"no {counter} counter read")
        return [
            Verdict(
                title,
                c[counter] >= int(n),
                f"{c[counter]} {what} (at least {int(n)}), {c.get(host_counter, 0)} {host_what}",
            )
        ]

    return fn


_pauses = _at_least(
    "PFC pauses sent", "pfc_tx", "PFC frames from the switch", "host_pfc_rx", "received by hosts"
)
_pauses.__doc__ = """An oversubscribed lossless class crosses XOFF: the switch sends at least
    `n` PFC pause frames (its pfc_tx counter), the hosts' side shown next to it."""
register("min_pauses", "PFC pauses sent", "count")(_pauses)
_cnps = _at_least(
    "switch NP emulation", "cnp_tx", "CNPs generated by the switch", "host_cnps_sent", "by hosts"
)
_cnps.__doc__ = """With the switch as notification point, CE-marked traffic makes the
    program generate at least `n` CNPs (its cnp_tx counter)."""
register("min_switch_cnps", "switch NP emulation", "count")(_cnps)


def _sweep(runs: list[RunResult]) -> list[tuple[float, float]]:
    return sorted(((r.sweep_value or 0.0), sum(f.goodput_bps for f in r.flows)) for r in runs)


@register("goodput_monotone", "goodput falls as drops rise", "true")
def goodput_monotone(_: Any, runs: list[RunResult]) -> list[Verdict]:
    """Go-back-N resends everything after a loss, so goodput can only fall as the drop
    rate rises: each sweep point is at most its predecessor (0.5% for sampling), and the
    last is below the first. Fewer than two points, or no goodput when lossless, is no data."""
    pts = _sweep(runs)
    text = "; ".join(f"{v:g}: {g / 1e9:.2f} Gb/s" for v, g in pts)
    if len(pts) < 2 or pts[0][1] <= 0:
        return blind("goodput falls as drops rise", f"no trend to judge ({text or 'no runs'})")
    mono = all(b[1] <= a[1] * 1.005 for a, b in zip(pts, pts[1:], strict=False))
    return [Verdict("goodput falls as drops rise", mono and pts[-1][1] < pts[0][1], text)]


@register("collapse_below", "go-back-N collapse", "fraction")
def collapse_below(frac: float, runs: list[RunResult]) -> list[Verdict]:
    """Once a window routinely holds a loss, go-back-N recovery itself loses: at the highest
    drop rate goodput falls below `frac` of the lossless run's."""
    pts = _sweep(runs)
    if len(pts) < 2 or pts[0][1] <= 0:
        return blind("go-back-N collapse", "needs a lossless point with goodput and a lossy one")
    ratio = pts[-1][1] / pts[0][1]
    return [
        Verdict(
            "go-back-N collapse",
            ratio < float(frac),
            f"at drop rate {pts[-1][0]:g} goodput is {ratio * 100:.0f}% of lossless "
            f"(limit {float(frac) * 100:.0f}%)",
        )
    ]


@register("cnp_interval_us", "CNP rate bound", "us")
def cnp_interval(us: float, runs: list[RunResult]) -> list[Verdict]:
    """The notification point sends at most one CNP per flow per interval: no flow gets more
    than floor(window / interval) + 1 CNPs, and no two arrive closer than the interval (5%
    allowed for queueing jitter on the way back). No CNP at all is no data."""
    r = runs[0]
    iv = float(us) * 1000
    total = sum(f.cnps for f in r.flows)
    if not total:
        return blind("CNP rate bound", "no CNP received")
    bound = math.floor(r.duration_ns / iv) + 1
    worst = max(f.cnps - bound for f in r.flows)
    gaps = [b - a for f in r.flows for a, b in zip(f.cnp_times, f.cnp_times[1:], strict=False)]
    min_gap = min(gaps) if gaps else math.inf
    gap_txt = f"closest two {min_gap / 1000:.1f} us apart" if gaps else "no two CNPs in one flow"
    return [
        Verdict(
            "CNP rate bound",
            worst <= 0 and min_gap >= 0.95 * iv,
            f"{total} CNPs received ({r.counters.get('cnp_tx', 0)} generated by the "
            f"switch), at most 1 per flow per {iv / 1000:g} us ({bound} per flow); {gap_txt}",
        )
    ]
