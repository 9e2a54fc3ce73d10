"""Scenario verdicts: each is one registered function.

A check has a name (the `expect:` key that asks for it), a title, a docstring saying which
physical law it checks, a parameter type (the schema validates `expect:` against it) and a
threshold derived from the scenario's configuration (its Kmin/Kmax, its link speed through
the one wire model, its CNP interval), never a constant a broken run also meets. A check
that finds nothing to judge (no flows, no samples, no sweep points, unread counters) fails
with `no_data` set: a blind check never passes, and a negative control (`expect_fail:`)
does not pass on it either.

Adding a check is adding a function here with `@register(...)`; `judge` never changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.targets.p4sim import wire_bytes

if TYPE_CHECKING:
    from .scenario import RunResult

# a middle RoCEv2 packet of a multi-packet WRITE (no RETH): Ethernet 14, IPv4 20, UDP 8,
# BTH 12, payload, ICRC 4 (frames carry no FCS; wire_bytes adds FCS, preamble, SFD, IFG)
MIDDLE_HDR_BYTES = 14 + 20 + 8 + 12 + 4


def payload_capacity_bps(line_bps: float, mtu: int) -> float:
    """Payload bits per second a link of `line_bps` carries in full-MTU RoCEv2 packets, from
    the same wire model the traffic manager serialises with (p4sim.runtime.tm.wire_bytes):
    10 Gb/s and a 1,024 B MTU give 10e9 * 1024 / 1106 = 9.259 Gb/s."""
    return float(line_bps) * mtu / wire_bytes(mtu + MIDDLE_HDR_BYTES)


@dataclass
class Verdict:
    name: str
    ok: bool
    detail: str
    no_data: bool = False  # the check had nothing to judge (and so failed)


@dataclass(frozen=True)
class Check:
    key: str  # the `expect:` key
    title: str
    kind: str  # parameter type: "true" (only `true`), "fraction" (0..1), "count" (int >= 1), "us" (> 0)
    fn: Callable[[Any, list[RunResult]], list[Verdict]]
    scope: str = "switch"  # "switch": one-switch scenario runs; "fabric": a fabric file's runs

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


def judge(sc: dict, runs: list[RunResult]) -> list[Verdict]:
    """Every check the scenario asks for (`expect:`), then every negative-control check
    (`expect_fail:`): a control passes only when its check failed on real data."""
    out: list[Verdict] = []
    for key, value in (sc.get("expect") or {}).items():
        out += _run(key, value, runs)
    for key, value in (sc.get("expect_fail") or {}).items():
        for v in _run(key, value, runs):
            hit = not v.ok and not v.no_data
            why = "fails as the control predicts" if hit else (
                "had no data to judge" if v.no_data else "PASSED, but this control must fail it")
            out.append(Verdict(f"control: {v.name}", hit, f"{why}: {v.detail}"))
    return out


def _run(key: str, value: Any, runs: list[RunResult]) -> list[Verdict]:
    check = CHECKS.get(key)
    if check is None:  # the schema refuses unknown keys; a hand-made dict gets a verdict
        return [Verdict(key, False, f"no check named {key!r}", no_data=True)]
    if not runs:
        return [Verdict(check.title, False, "no runs", no_data=True)]
    return check.fn(value, runs)


def _blind(title: str, why: str) -> list[Verdict]:
    return [Verdict(title, False, why, no_data=True)]


# ---------------------------------------------------------------- the checks


@register("fair_share", "fair share", "fraction")
def fair_share(tol: float, runs: list[RunResult]) -> list[Verdict]:
    """N flows through one bottleneck under DCQCN converge to one rate each (the fluid
    model's fixed point is C/N per flow): every flow's goodput over the measurement window
    is within `tol` of the mean."""
    goods = [f.goodput_bps for f in runs[0].flows]
    if len(goods) < 2 or not sum(goods):
        return _blind("fair share", f"{len(goods)} flow(s), {sum(goods) / 1e9:.2f} Gb/s in total: "
                                    "no share to compare")
    mean = sum(goods) / len(goods)
    worst = max(abs(g - mean) / mean for g in goods)
    return [Verdict("fair share", worst <= float(tol),
                    f"flows {', '.join(f'{g / 1e9:.2f}' for g in goods)} Gb/s; worst "
                    f"{worst * 100:.1f}% from the mean (limit {float(tol) * 100:.0f}%)")]


@register("queue_in_band", "queue held in Kmin..Kmax", "true")
def queue_in_band(_: Any, runs: list[RunResult]) -> list[Verdict]:
    """DCQCN's equilibrium sits where the marking probability balances the senders'
    increase: the bottleneck queue's 90th percentile lies in [Kmin, Kmax] of the configured
    profile (it reaches the band, so the link is kept busy; it rarely exceeds Kmax) and the
    queue never reaches the buffer (no overflow). Without a reaction point the queue runs
    to the buffer and this fails."""
    q = runs[0].queue
    if "p90" not in q or "kmin" not in q:
        return _blind("queue held in Kmin..Kmax", "no queue samples or no ECN profile")
    lo, hi, buf = q["kmin"], q["kmax"], q.get("buffer", math.inf)
    ok = lo <= q["p90"] <= hi and q["max"] < buf
    return [Verdict("queue held in Kmin..Kmax", ok,
                    f"median {q['p50']:.0f}, 10-90% {q['p10']:.0f}..{q['p90']:.0f}, max "
                    f"{q['max']:.0f} pkts; Kmin..Kmax = {lo}..{hi}, buffer {buf} pkts")]


@register("utilization", "bottleneck utilized", "fraction")
def utilization(need: float, runs: list[RunResult]) -> list[Verdict]:
    """The bottleneck carries at least `need` of its payload capacity (link speed x payload
    / wire bytes of a full-MTU packet, the traffic manager's own wire model) and never more
    than that capacity: goodput above it is an accounting error, not physics."""
    r = runs[0]
    cap = r.capacity_bps
    tot = sum(f.goodput_bps for f in r.flows)
    if not cap or not r.flows:
        return _blind("bottleneck utilized", "no flows or no capacity")
    ok = float(need) * cap <= tot <= cap * 1.001
    return [Verdict("bottleneck utilized", ok,
                    f"{tot / 1e9:.3f} Gb/s of {cap / 1e9:.3f} Gb/s payload capacity "
                    f"({tot / cap * 100:.1f}%, limit {float(need) * 100:.0f}%..100%)")]


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
        out.append(Verdict(name, d == 0, f"{c.get('tm_drops', 0)} queue drops, "
                                         f"{c.get('switch_drops', 0)} pipeline drops of "
                                         f"{c['switch_frames_in']} frames in"))
    return out


def _at_least(title: str, counter: str, what: str, host_counter: str, host_what: str):
    def fn(n: int, runs: list[RunResult]) -> list[Verdict]:
        c = runs[0].counters
        if counter not in c:
            return _blind(title, f"no {counter} counter read")
        return [Verdict(title, c[counter] >= int(n), f"{c[counter]} {what} (at least {int(n)}), "
                                                     f"{c.get(host_counter, 0)} {host_what}")]
    return fn


_pauses = _at_least("PFC pauses sent", "pfc_tx", "PFC frames from the switch", "host_pfc_rx",
                    "received by hosts")
_pauses.__doc__ = """An oversubscribed lossless class crosses XOFF: the switch sends at least
    `n` PFC pause frames (its pfc_tx counter), the hosts' side shown next to it."""
register("min_pauses", "PFC pauses sent", "count")(_pauses)
_cnps = _at_least("switch NP emulation", "cnp_tx", "CNPs generated by the switch",
                  "host_cnps_sent", "by hosts")
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
        return _blind("goodput falls as drops rise", f"no trend to judge ({text or 'no runs'})")
    mono = all(b[1] <= a[1] * 1.005 for a, b in zip(pts, pts[1:], strict=False))
    return [Verdict("goodput falls as drops rise", mono and pts[-1][1] < pts[0][1], text)]


@register("collapse_below", "go-back-N collapse", "fraction")
def collapse_below(frac: float, runs: list[RunResult]) -> list[Verdict]:
    """Once a window routinely holds a loss, go-back-N recovery itself loses: at the highest
    drop rate goodput falls below `frac` of the lossless run's."""
    pts = _sweep(runs)
    if len(pts) < 2 or pts[0][1] <= 0:
        return _blind("go-back-N collapse", "needs a lossless point with goodput and a lossy one")
    ratio = pts[-1][1] / pts[0][1]
    return [Verdict("go-back-N collapse", ratio < float(frac),
                    f"at drop rate {pts[-1][0]:g} goodput is {ratio * 100:.0f}% of lossless "
                    f"(limit {float(frac) * 100:.0f}%)")]


@register("cnp_interval_us", "CNP rate bound", "us")
def cnp_interval(us: float, runs: list[RunResult]) -> list[Verdict]:
    """The notification point sends at most one CNP per flow per interval: no flow gets more
    than floor(window / interval) + 1 CNPs, and no two arrive closer than the interval (5%
    allowed for queueing jitter on the way back). No CNP at all is no data."""
    r = runs[0]
    iv = float(us) * 1000
    total = sum(f.cnps for f in r.flows)
    if not total:
        return _blind("CNP rate bound", "no CNP received")
    bound = math.floor(r.duration_ns / iv) + 1
    worst = max(f.cnps - bound for f in r.flows)
    gaps = [b - a for f in r.flows for a, b in zip(f.cnp_times, f.cnp_times[1:], strict=False)]
    min_gap = min(gaps) if gaps else math.inf
    gap_txt = f"closest two {min_gap / 1000:.1f} us apart" if gaps else "no two CNPs in one flow"
    return [Verdict("CNP rate bound", worst <= 0 and min_gap >= 0.95 * iv,
                    f"{total} CNPs received ({r.counters.get('cnp_tx', 0)} generated by the "
                    f"switch), at most 1 per flow per {iv / 1000:g} us ({bound} per flow); {gap_txt}")]


# ---------------------------------------------------------------- fabric checks
# A fabric scenario file (`fabric:` block) names its runs; each check judges the runs it
# needs by label with the judges of controller.fabric.scenarios (which hold the thresholds
# and say why). A missing label is no data.

# the metric a watchdog must bring back, per fabric scenario (0 while frozen)
WATCHDOG_METRIC = {"deadlock": "goodput_gbps", "storm": "innocent_min_gbps"}


def _fabric(key: str, labels: tuple[str, ...], judge_name: str, runs: list) -> list[Verdict]:
    title = CHECKS[key].title
    by = {r.label: r.metrics for r in runs if isinstance(getattr(r, "metrics", None), dict)}
    missing = [lb for lb in labels if lb not in by]
    if missing:
        return _blind(title, f"no fabric run labelled {', '.join(missing)} "
                             f"(runs: {', '.join(by) or 'none'})")
    from controller.fabric import scenarios as fs

    args: list[Any] = [by[lb] for lb in labels]
    if judge_name == "judge_watchdog":
        name = next(r.scenario for r in runs if r.label == labels[0])
        if name not in WATCHDOG_METRIC:
            return _blind(title, f"no watchdog metric for a {name!r} fabric")
        args.append(WATCHDOG_METRIC[name])
    return [Verdict(v.name, v.ok, v.detail) for v in getattr(fs, judge_name)(*args)]


@register("fabric_spreading", "PFC congestion spreading", "true", "fabric")
def fabric_spreading(_: Any, runs: list) -> list[Verdict]:
    """An incast behind one leaf overflows XOFF at its leaf; PFC pauses each upstream port in
    turn, so pauses climb to the spines (none without the incast) and an innocent flow that
    shares an upstream port keeps less than half of what it gets alone. Runs: `alone` (no
    incast), `pfc` (incast, PFC only)."""
    return _fabric("fabric_spreading", ("alone", "pfc"), "judge_spreading_pfc", runs)


@register("fabric_dcqcn", "DCQCN stops the spreading", "true", "fabric")
def fabric_dcqcn(_: Any, runs: list) -> list[Verdict]:
    """With ECN marking and DCQCN senders the incast slows down before queues reach XOFF:
    the victim gets more than twice its PFC-only goodput and the spines see less than half
    the pauses in the second half of the run. Runs: `pfc` (PFC only), `dcqcn`."""
    return _fabric("fabric_dcqcn", ("pfc", "dcqcn"), "judge_dcqcn", runs)


@register("fabric_deadlock", "PFC deadlock", "true", "fabric")
def fabric_deadlock(_: Any, runs: list) -> list[Verdict]:
    """A cyclic buffer dependency under PFC freezes every queue of the cycle: goodput zero
    over the last window, at least four frozen queues, and the wait-for graph among them has
    a cycle (the detector names it). Run: `fault`."""
    return _fabric("fabric_deadlock", ("fault",), "judge_deadlock", runs)


@register("fabric_storm", "pause storm spreads", "true", "fabric")
def fabric_storm(_: Any, runs: list) -> list[Verdict]:
    """A NIC stuck sending XOFF pauses its leaf's queue toward it; the queue fills, the leaf
    pauses its own upstream ports and the pauses spread past the leaf: at least two switches
    pause and the slowest innocent flow keeps less than half of its calm rate. Runs: `fault`
    (the stuck NIC), `calm` (the same traffic without it)."""
    return _fabric("fabric_storm", ("fault", "calm"), "judge_storm", runs)


@register("fabric_watchdog", "PFC watchdog breaks it", "true", "fabric")
def fabric_watchdog(_: Any, runs: list) -> list[Verdict]:
    """A queue paused with packets and no dequeue for longer than the detection time is put
    in the storm state (pauses ignored): the watchdog trips and the frozen metric (deadlock:
    goodput; storm: the slowest innocent flow) comes back above 4.5 Gb/s and above four
    times its value without a watchdog. Runs: `fault` (no watchdog), `watchdog`."""
    return _fabric("fabric_watchdog", ("fault", "watchdog"), "judge_watchdog", runs)


@register("fabric_ecmp_collision", "ECMP collision", "true", "fabric")
def fabric_ecmp_collision(_: Any, runs: list) -> list[Verdict]:
    """ECMP hashes each flow onto one path: with few flows they collide on one spine (over
    80% of the spine frames) and get less than 60% of the same flows sprayed per packet.
    Runs: `ecmp`, `spray` (equal paths)."""
    return _fabric("fabric_ecmp_collision", ("ecmp", "spray"), "judge_ecmp_collision", runs)


@register("fabric_spray_balance", "spray balances the spines", "true", "fabric")
def fabric_spray_balance(_: Any, runs: list) -> list[Verdict]:
    """Round-robin spraying over two equal paths puts under 60% of the frames on either
    spine and reorders nothing (no NAK). Run: `spray`."""
    return _fabric("fabric_spray_balance", ("spray",), "judge_spray_balance", runs)


@register("fabric_spray_gbn_naks", "spray + go-back-N: spurious NAKs", "true", "fabric")
def fabric_spray_gbn_naks(_: Any, runs: list) -> list[Verdict]:
    """On unequal paths a sprayed flow arrives out of order; a go-back-N receiver NAKs each
    gap and the sender resends the tail (spurious: nothing was lost), losing over 10% of the
    equal-path goodput, while ECMP on the same paths stays in order (no NAK). Runs: `spray`,
    `spray_skew` (go-back-N), `ecmp_skew`."""
    return _fabric("fabric_spray_gbn_naks", ("spray", "spray_skew", "ecmp_skew"),
                   "judge_spray_gbn", runs)


@register("fabric_spray_sr", "spray + selective repeat", "true", "fabric")
def fabric_spray_sr(_: Any, runs: list) -> list[Verdict]:
    """A reorder-tolerant receiver (selective repeat, with a reordering window wider than
    the paths' skew) keeps spraying's gain on unequal paths: more than twice go-back-N's
    goodput there, at least 90% of equal-path spray, fewer packets resent. Runs: `spray`,
    `spray_skew` (go-back-N), `sr_skew` (selective repeat)."""
    return _fabric("fabric_spray_sr", ("spray", "spray_skew", "sr_skew"), "judge_spray_sr", runs)
