"""The scenario checks can fail: `judge` on hand-made results, one breaking each law
(unfair flows, drops, unread counters, goodput rising with drops, a lone sweep point,
CNPs too many or too close, goodput above the wire's capacity, an idle queue), and every
check fails on no data. Expected verdicts are written here, not derived."""

from __future__ import annotations

import pytest

from controller.hosts.dcqcn import DcqcnParams
from controller.scenarios.checks import payload_capacity_bps, registered
from controller.scenarios.scenario import FlowResult, RunResult, judge

US = 1000
CAP = payload_capacity_bps(10e9, 1024)
FRAMES = {"switch_frames_in": 1000}


def run(
    goodputs: list[float],
    counters: dict[str, int] | None = None,
    sweep: float | None = None,
    cnp_times: list[list[int]] | None = None,
    duration_ns: int = 1000 * US,
    queue: dict | None = None,
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
        counters or {},
        queue or {},
        DcqcnParams(),
        {},
        sweep_value=sweep,
        capacity_bps=CAP,
    )


def verdict(expect: dict, runs: list[RunResult]) -> dict[str, bool]:
    return {v.name: v.ok for v in judge({"expect": expect}, runs)}


def test_wire_model_is_one_model():
    """The judge's payload capacity, the TM's serialisation, the hosts' NIC and the config's
    headroom arithmetic use the same per-frame overhead (FCS 4 + preamble/SFD 8 + IFG 12)."""
    from controller.config import WIRE_GAP
    from controller.hosts.host import ETH_OVERHEAD
    from p4sim.runtime.tm import PREAMBLE_SFD_IFG_BYTES, WIRE_OVERHEAD_BYTES

    assert ETH_OVERHEAD == WIRE_OVERHEAD_BYTES == 24 and WIRE_GAP == PREAMBLE_SFD_IFG_BYTES == 20
    assert CAP == pytest.approx(10e9 * 1024 / 1106)  # 9.259 Gb/s


def test_fair_share_fails_outside_the_tolerance():
    assert verdict({"fair_share": 0.10}, [run([4.6e9, 5.0e9])]) == {"fair share": True}
    # mean 4.5: 3.9 is 13% below it
    assert verdict({"fair_share": 0.10}, [run([3.9e9, 5.1e9])]) == {"fair share": False}
    assert verdict({"fair_share": 0.10}, [run([0.0, 0.0])]) == {"fair share": False}
    assert verdict({"fair_share": 0.10}, [run([5e9])]) == {"fair share": False}  # one flow


def test_utilization_has_a_floor_and_the_wire_as_ceiling():
    name = "bottleneck utilized"
    assert verdict({"utilization": 0.9}, [run([4.6e9, 4.6e9])])[name] is True
    assert verdict({"utilization": 0.9}, [run([4.0e9, 4.0e9])])[name] is False  # 86%
    # 9.46 Gb/s of payload through a 10 Gb/s port is above the wire's 9.26: an accounting bug
    assert verdict({"utilization": 0.9}, [run([4.73e9, 4.73e9])])[name] is False


def test_queue_band_fails_idle_overflowing_or_unprofiled():
    name = "queue held in Kmin..Kmax"
    band = {"kmin": 5, "kmax": 20, "buffer": 92}
    ok = dict(band, p10=2, p50=8, p90=15, max=30)
    assert verdict({"queue_in_band": True}, [run([1e9], queue=ok)])[name] is True
    idle = dict(band, p10=0, p50=0, p90=2, max=4)  # never reaches Kmin: link not kept busy
    assert verdict({"queue_in_band": True}, [run([1e9], queue=idle)])[name] is False
    full = dict(band, p10=91, p50=92, p90=92, max=92)  # no reaction point: at the buffer
    assert verdict({"queue_in_band": True}, [run([1e9], queue=full)])[name] is False
    spike = dict(ok, max=92)  # in band at p90 but it overflowed once
    assert verdict({"queue_in_band": True}, [run([1e9], queue=spike)])[name] is False
    assert verdict({"queue_in_band": True}, [run([1e9], queue={"p90": 3, "p50": 1})])[name] is False


def test_zero_drops_fails_on_drops_unread_counters_and_no_traffic():
    ok = {"switch_drops": 0, "tm_drops": 0, **FRAMES}
    assert verdict({"zero_drops": True}, [run([1e9], ok)]) == {"zero drops": True}
    assert verdict({"zero_drops": True}, [run([1e9], {**ok, "tm_drops": 1})]) == {
        "zero drops": False
    }
    assert verdict({"zero_drops": True}, [run([1e9], {**ok, "switch_drops": 3})]) == {
        "zero drops": False
    }
    blind = {"tm_drops": 0, "counters_unavailable": 1, **FRAMES}
    assert verdict({"zero_drops": True}, [run([1e9], blind)]) == {"zero drops": False}
    idle = {"switch_drops": 0, "tm_drops": 0, "switch_frames_in": 0}  # --duration-us 0 and the like
    assert verdict({"zero_drops": True}, [run([0.0], idle)]) == {"zero drops": False}


def test_goodput_monotone_fails_when_it_rises_on_one_point_and_on_zeros():
    name = "goodput falls as drops rise"
    falling = [run([9e9], sweep=0.0), run([8e9], sweep=0.001), run([3e9], sweep=0.01)]
    assert verdict({"goodput_monotone": True}, falling)[name] is True
    rising = [run([9e9], sweep=0.0), run([8e9], sweep=0.001), run([8.5e9], sweep=0.01)]
    assert verdict({"goodput_monotone": True}, rising)[name] is False
    assert verdict({"goodput_monotone": True}, [run([9e9], sweep=0.0)])[name] is False
    zeros = [run([0.0], sweep=0.0), run([0.0], sweep=0.001), run([0.0], sweep=0.01)]
    assert verdict({"goodput_monotone": True}, zeros)[name] is False  # the lossy 0-duration run
    flat = [run([9e9], sweep=0.0), run([9e9], sweep=0.01)]
    assert verdict({"goodput_monotone": True}, flat)[name] is False  # loss must cost something
    assert verdict({"collapse_below": 0.5}, falling)["go-back-N collapse"] is True  # 33% < 50%
    assert verdict({"collapse_below": 0.3}, falling)["go-back-N collapse"] is False
    assert verdict({"collapse_below": 0.5}, zeros)["go-back-N collapse"] is False


def test_cnp_rate_bound_fails_on_too_many_too_close_or_none():
    name = "CNP rate bound"
    spaced = [[0, 50 * US, 100 * US], [10 * US, 61 * US]]
    assert verdict({"cnp_interval_us": 50}, [run([1e9, 1e9], cnp_times=spaced)])[name] is True
    # a burst: two CNPs 1 us apart, then silence -- within the count bound, not the spacing
    burst = [[0, 1 * US], []]
    assert verdict({"cnp_interval_us": 50}, [run([1e9, 1e9], cnp_times=burst)])[name] is False
    # 100 us window: at most floor(100/50) + 1 = 3 CNPs per flow; 4 (evenly 25 us apart) fail
    many = [[0, 25 * US, 50 * US, 75 * US]]
    assert (
        verdict({"cnp_interval_us": 50}, [run([1e9], cnp_times=many, duration_ns=100 * US)])[name]
        is False
    )
    assert verdict({"cnp_interval_us": 50}, [run([1e9, 1e9])])[name] is False  # no CNPs at all


def test_min_pauses_counts_the_switch():
    v = verdict({"min_pauses": 2}, [run([1e9], {"pfc_tx": 2, "host_pfc_rx": 2})])
    assert v == {"PFC pauses sent": True}
    v = verdict({"min_pauses": 2}, [run([1e9], {"pfc_tx": 1, "host_pfc_rx": 5})])
    assert v == {"PFC pauses sent": False}
    assert verdict({"min_pauses": 2}, [run([1e9], {})]) == {"PFC pauses sent": False}


def test_every_registered_check_fails_on_no_data():
    """No flows, no samples, no counters: a check that passes blind cannot be trusted."""
    empty = RunResult("t", 1, "", 1000 * US, 0, [], {}, {}, {}, DcqcnParams(), {})
    values = {"true": True, "fraction": 0.5, "count": 1, "us": 50}
    for key, check in registered().items():  # the scenario kinds' checks (fabric_*) too
        (v, *_) = judge({"expect": {key: values[check.kind]}}, [empty])
        assert not v.ok and v.no_data, key
        assert check.physics, f"{key} has no docstring saying its physics"
        # as a negative control, a blind check does not count as the predicted failure
        (c,) = judge({"expect_fail": {key: values[check.kind]}}, [empty])[:1]
        assert not c.ok, key


def test_negative_control_passes_only_when_its_check_fails_on_data():
    drops = {"switch_drops": 0, "tm_drops": 5, **FRAMES}
    clean = {"switch_drops": 0, "tm_drops": 0, **FRAMES}
    (v,) = judge({"expect_fail": {"zero_drops": True}}, [run([1e9], drops)])
    assert v.ok and v.name == "control: zero drops"
    (v,) = judge({"expect_fail": {"zero_drops": True}}, [run([1e9], clean)])
    assert not v.ok and "PASSED" in v.detail
