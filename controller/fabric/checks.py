"""The fabric checks: what a fabric scenario file's `expect:` may name (scope "fabric").
Registered into the scenario engine's checks (controller/scenarios/checks.py) when the
fabric's scenario kind loads (controller/fabric/runner.py, `KIND`). A file names its runs;
each check judges the runs it needs by label with the judges of controller.fabric.scenarios
(which hold the thresholds and say why). A missing label is no data."""

from __future__ import annotations

from typing import Any

from controller.scenarios.checks import CHECKS, blind, register
from controller.scenarios.results import Verdict

KEY = "fabric"  # the scenario files' key, and so the checks' scope

# the metric a watchdog must bring back, per fabric scenario (0 while frozen)
WATCHDOG_METRIC = {"deadlock": "goodput_gbps", "storm": "innocent_min_gbps"}


def _fabric(key: str, labels: tuple[str, ...], judge_name: str, runs: list) -> list[Verdict]:
    title = CHECKS[key].title
    by = {r.label: r.metrics for r in runs if isinstance(getattr(r, "metrics", None), dict)}
    missing = [lb for lb in labels if lb not in by]
    if missing:
        return blind(
            title, f"no fabric run labelled {', '.join(missing)} (runs: {', '.join(by) or 'none'})"
        )
    from . import scenarios as fs  # the judges load with the fabric's models, when judged

    args: list[Any] = [by[lb] for lb in labels]
    if judge_name == "judge_watchdog":
        name = next(r.scenario for r in runs if r.label == labels[0])
        if name not in WATCHDOG_METRIC:
            return blind(title, f"no watchdog metric for a {name!r} fabric")
        args.append(WATCHDOG_METRIC[name])
    return [Verdict(v.name, v.ok, v.detail) for v in getattr(fs, judge_name)(*args)]


@register("fabric_spreading", "PFC congestion spreading", "true", KEY)
def fabric_spreading(_: Any, runs: list) -> list[Verdict]:
    """An incast behind one leaf overflows XOFF at its leaf; PFC pauses each upstream port in
    turn, so pauses climb to the spines (none without the incast) and an innocent flow that
    shares an upstream port keeps less than half of what it gets alone. Runs: `alone` (no
    incast), `pfc` (incast, PFC only)."""
    return _fabric("fabric_spreading", ("alone", "pfc"), "judge_spreading_pfc", runs)


@register("fabric_dcqcn", "DCQCN stops the spreading", "true", KEY)
def fabric_dcqcn(_: Any, runs: list) -> list[Verdict]:
    """With ECN marking and DCQCN senders the incast slows down before queues reach XOFF:
    the victim gets more than twice its PFC-only goodput and the spines see less than half
    the pauses in the second half of the run. Runs: `pfc` (PFC only), `dcqcn`."""
    return _fabric("fabric_dcqcn", ("pfc", "dcqcn"), "judge_dcqcn", runs)


@register("fabric_deadlock", "PFC deadlock", "true", KEY)
def fabric_deadlock(_: Any, runs: list) -> list[Verdict]:
    """A cyclic buffer dependency under PFC freezes every queue of the cycle: goodput zero
    over the last window, at least four frozen queues, and the wait-for graph among them has
    a cycle (the detector names it). Run: `fault`."""
    return _fabric("fabric_deadlock", ("fault",), "judge_deadlock", runs)


@register("fabric_storm", "pause storm spreads", "true", KEY)
def fabric_storm(_: Any, runs: list) -> list[Verdict]:
    """A NIC stuck sending XOFF pauses its leaf's queue toward it; the queue fills, the leaf
    pauses its own upstream ports and the pauses spread past the leaf: at least two switches
    pause and the slowest innocent flow keeps less than half of its calm rate. Runs: `fault`
    (the stuck NIC), `calm` (the same traffic without it)."""
    return _fabric("fabric_storm", ("fault", "calm"), "judge_storm", runs)


@register("fabric_watchdog", "PFC watchdog breaks it", "true", KEY)
def fabric_watchdog(_: Any, runs: list) -> list[Verdict]:
    """A queue paused with packets and no dequeue for longer than the detection time is put
    in the storm state (pauses ignored): the watchdog trips and the frozen metric (deadlock:
    goodput; storm: the slowest innocent flow) comes back above 4.5 Gb/s and above four
    times its value without a watchdog. Runs: `fault` (no watchdog), `watchdog`."""
    return _fabric("fabric_watchdog", ("fault", "watchdog"), "judge_watchdog", runs)


@register("fabric_ecmp_collision", "ECMP collision", "true", KEY)
def fabric_ecmp_collision(_: Any, runs: list) -> list[Verdict]:
    """ECMP hashes each flow onto one path: with few flows they collide on one spine (over
    80% of the spine frames) and get less than 60% of the same flows sprayed per packet.
    Runs: `ecmp`, `spray` (equal paths)."""
    return _fabric("fabric_ecmp_collision", ("ecmp", "spray"), "judge_ecmp_collision", runs)


@register("fabric_spray_balance", "spray balances the spines", "true", KEY)
def fabric_spray_balance(_: Any, runs: list) -> list[Verdict]:
    """Round-robin spraying over two equal paths puts under 60% of the frames on either
    spine and reorders nothing (no NAK). Run: `spray`."""
    return _fabric("fabric_spray_balance", ("spray",), "judge_spray_balance", runs)


@register("fabric_spray_gbn_naks", "spray + go-back-N: spurious NAKs", "true", KEY)
def fabric_spray_gbn_naks(_: Any, runs: list) -> list[Verdict]:
    """On unequal paths a sprayed flow arrives out of order; a go-back-N receiver NAKs each
    gap and the sender resends the tail (spurious: nothing was lost), losing over 10% of the
    equal-path goodput, while ECMP on the same paths stays in order (no NAK). Runs: `spray`,
    `spray_skew` (go-back-N), `ecmp_skew`."""
    return _fabric(
        "fabric_spray_gbn_naks", ("spray", "spray_skew", "ecmp_skew"), "judge_spray_gbn", runs
    )


@register("fabric_spray_sr", "spray + selective repeat", "true", KEY)
def fabric_spray_sr(_: Any, runs: list) -> list[Verdict]:
    """A reorder-tolerant receiver (selective repeat, with a reordering window wider than
    the paths' skew) keeps spraying's gain on unequal paths: more than twice go-back-N's
    goodput there, at least 90% of equal-path spray, fewer packets resent. Runs: `spray`,
    `spray_skew` (go-back-N), `sr_skew` (selective repeat)."""
    return _fabric("fabric_spray_sr", ("spray", "spray_skew", "sr_skew"), "judge_spray_sr", runs)
