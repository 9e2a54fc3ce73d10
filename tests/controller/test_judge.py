"""The scenario checks can fail: `judge` on hand-made results, one breaking each law
(unfair flows, drops, unread counters, goodput rising with drops, a lone sweep point,
CNPs too many or too close). Expected verdicts are written here, not derived."""

from __future__ import annotations

from controller.hosts.dcqcn import DcqcnParams
from controller.scenarios.scenario import FlowResult, RunResult, judge

US = 1000


def run(goodputs: list[float], counters: dict[str, int] | None = None, sweep: float | None = None,
        cnp_times: list[list[int]] | None = None, duration_ns: int = 1000 * US) -> RunResult:
    times = cnp_times or [[] for _ in goodputs]
    flows = [FlowResult(f"f{i}", "h1", "h3", 0x100 + i, goodput_bps=g, cnps=len(times[i]),
                        cnp_times=times[i]) for i, g in enumerate(goodputs)]
    return RunResult("t", 1, "", duration_ns, 0, flows, {}, counters or {}, {}, DcqcnParams(), {},
                     sweep_value=sweep)


def verdict(expect: dict, runs: list[RunResult]) -> dict[str, bool]:
    return {v.name: v.ok for v in judge({"expect": expect}, runs)}


def test_fair_share_fails_outside_the_tolerance():
    assert verdict({"fair_share": 0.10}, [run([4.6e9, 5.0e9])]) == {"fair share": True}
    # mean 4.5: 3.9 is 13% below it
    assert verdict({"fair_share": 0.10}, [run([3.9e9, 5.1e9])]) == {"fair share": False}
    assert verdict({"fair_share": 0.10}, [run([0.0, 0.0])]) == {"fair share": False}


def test_zero_drops_fails_on_drops_and_on_unread_counters():
    ok = {"switch_drops": 0, "tm_drops": 0}
    assert verdict({"zero_drops": True}, [run([1e9], ok)]) == {"zero drops": True}
    assert verdict({"zero_drops": True}, [run([1e9], {**ok, "tm_drops": 1})]) == {"zero drops": False}
    assert verdict({"zero_drops": True}, [run([1e9], {**ok, "switch_drops": 3})]) == {"zero drops": False}
    blind = {"tm_drops": 0, "counters_unavailable": 1}
    assert verdict({"zero_drops": True}, [run([1e9], blind)]) == {"zero drops": False}


def test_goodput_monotone_fails_when_it_rises_and_on_one_point():
    name = "goodput falls as drops rise"
    falling = [run([9e9], sweep=0.0), run([8e9], sweep=0.001), run([3e9], sweep=0.01)]
    assert verdict({"goodput_monotone": True}, falling)[name] is True
    rising = [run([9e9], sweep=0.0), run([8e9], sweep=0.001), run([8.5e9], sweep=0.01)]
    assert verdict({"goodput_monotone": True}, rising)[name] is False
    assert verdict({"goodput_monotone": True}, [run([9e9], sweep=0.0)])[name] is False
    v = verdict({"goodput_monotone": True, "collapse_below": 0.5}, falling)
    assert v["go-back-N collapse"] is True  # 3/9 = 33% < 50%
    v = verdict({"goodput_monotone": True, "collapse_below": 0.3}, falling)
    assert v["go-back-N collapse"] is False


def test_cnp_rate_bound_fails_on_too_many_too_close_or_none():
    name = "CNP rate bound"
    spaced = [[0, 50 * US, 100 * US], [10 * US, 61 * US]]
    assert verdict({"cnp_interval_us": 50}, [run([1e9, 1e9], cnp_times=spaced)])[name] is True
    # a burst: two CNPs 1 us apart, then silence -- within the count bound, not the spacing
    burst = [[0, 1 * US], []]
    assert verdict({"cnp_interval_us": 50}, [run([1e9, 1e9], cnp_times=burst)])[name] is False
    # 100 us window: at most floor(100/50) + 1 = 3 CNPs per flow; 4 (evenly 25 us apart) fail
    many = [[0, 25 * US, 50 * US, 75 * US]]
    assert verdict({"cnp_interval_us": 50}, [run([1e9], cnp_times=many, duration_ns=100 * US)])[name] is False
    assert verdict({"cnp_interval_us": 50}, [run([1e9, 1e9])])[name] is False  # no CNPs at all


def test_min_pauses_counts_the_switch():
    v = verdict({"min_pauses": 2}, [run([1e9], {"pfc_tx": 2, "host_pfc_rx": 2})])
    assert v == {"PFC pauses sent": True}
    v = verdict({"min_pauses": 2}, [run([1e9], {"pfc_tx": 1, "host_pfc_rx": 5})])
    assert v == {"PFC pauses sent": False}
