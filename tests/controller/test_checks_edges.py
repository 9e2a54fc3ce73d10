"""Scenario checks at their thresholds (a mutation review found them loose enough to move
unnoticed). The bounds are the ones each check's docstring states: at most
floor(window / interval) + 1 CNPs per flow and none closer than 95% of the interval
(DCQCN NP: one CNP per flow per interval); go-back-N goodput never rises with the drop
rate beyond 0.5% sampling noise. Expected verdicts are written here, not derived."""

from __future__ import annotations

from controller.hosts.dcqcn import DcqcnParams
from controller.scenarios.checks import payload_capacity_bps
from controller.scenarios.scenario import FlowResult, RunResult, judge

US = 1000
CAP = payload_capacity_bps(10e9, 1024)


def run(
    goodputs: list[float],
    sweep: float | None = None,
    cnp_times: list[list[int]] | None = None,
    duration_ns: int = 1000 * US,
) -> RunResult:
    times = cnp_times or [[] for _ in goodputs]
    flows = [
        FlowResult(
            f"f{i}", "h1", "h3", 0x100 + i, goodput_bps=g, cnps=len(times[i]), cnp_times=times[i]
        )
        for i, g in enumerate(goodputs)
    ]
    return RunResult(
        "t",
        1,
        "",
        duration_ns,
        0,
        flows,
        {},
        {},
        {},
        DcqcnParams(),
        {},
        sweep_value=sweep,
        capacity_bps=CAP,
    )


def ok(expect: dict, runs: list[RunResult]) -> bool:
    (v,) = judge({"expect": expect}, runs)
    return v.ok


def test_cnp_count_bound_is_floor_plus_one():
    """1000 us, 50 us interval: at most 21 CNPs per flow. 22 CNPs 47.5 us apart pass the
    spacing rule (>= 0.95 x 50 us) and must still fail the count."""
    t21 = [i * 50 * US for i in range(21)]  # 0 .. 1000 us
    assert ok({"cnp_interval_us": 50}, [run([1e9], cnp_times=[t21])])
    t22 = [int(i * 47.5 * US) for i in range(22)]  # 0 .. 997.5 us
    assert not ok({"cnp_interval_us": 50}, [run([1e9], cnp_times=[t22])])


def test_cnp_spacing_allows_5_percent_not_more():
    assert ok({"cnp_interval_us": 50}, [run([1e9], cnp_times=[[0, 48 * US]])])
    assert not ok({"cnp_interval_us": 50}, [run([1e9], cnp_times=[[0, 47 * US]])])
    assert not ok({"cnp_interval_us": 50}, [run([1e9], cnp_times=[[0, 40 * US]])])


def test_goodput_rise_beyond_half_a_percent_is_not_monotone():
    base, lossy = run([9e9], sweep=0.0), run([3e9], sweep=0.01)
    small = [base, run([9.04e9], sweep=0.001), lossy]  # +0.44%: sampling noise
    assert ok({"goodput_monotone": True}, small)
    rise = [base, run([9.2e9], sweep=0.001), lossy]  # +2.2%: goodput rose with drops
    assert not ok({"goodput_monotone": True}, rise)
