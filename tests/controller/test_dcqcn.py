"""DCQCN RP/NP arithmetic against values worked by hand from the paper's equations
(Zhu et al. 2015): cut R_C *= (1 - alpha/2), alpha = (1-g)alpha + g; fast recovery
R_C = (R_T + R_C)/2; additive R_T += R_AI; hyper R_T += i*R_HAI."""

from __future__ import annotations

import pytest

from controller.hosts.dcqcn import DcqcnParams, NotificationPoint, ReactionPoint

G = 10e9
US = 1000


def test_paper_defaults():
    p = DcqcnParams()
    assert p.g == 1 / 256 and p.alpha_timer_ns == 55 * US and p.rate_timer_ns == 55 * US
    assert p.byte_counter == 10 * 2**20 and p.fast_recovery_steps == 5
    assert p.rate_ai_bps == 40e6 and p.rate_hai_bps == 100e6 and p.cnp_interval_ns == 50 * US
    rows = dict(p.as_table())
    assert rows["g"].startswith("0.00390625 (1/256)") and rows["rate_ai_bps"] == "40 Mb/s"


def test_cut_fast_recovery_additive_sequence():
    rp = ReactionPoint(G)
    assert rp.on_cnp(0)
    # alpha starts at 1: the first cut halves the rate; alpha = 255/256 + 1/256 = 1
    assert rp.rc == pytest.approx(5e9) and rp.rt == pytest.approx(10e9)
    assert rp.alpha == pytest.approx(1.0)
    rp.tick(55 * US)  # rate timer: T=1, fast recovery to (10+5)/2; alpha timer: no CNP
    assert rp.rc == pytest.approx(7.5e9)
    assert rp.alpha == pytest.approx(255 / 256)
    rp.on_cnp(60 * US)  # R_T = 7.5G, R_C = 7.5G * (1 - 0.99609375/2)
    assert rp.rt == pytest.approx(7.5e9)
    assert rp.rc == pytest.approx(3.7646484375e9)
    assert rp.alpha == pytest.approx(0.9961090087890625)
    for k in range(1, 5):  # T = 1..4: fast recovery halves the distance to R_T
        rp.tick(60 * US + k * 55 * US)
        assert rp.stage == "fast"
    assert rp.rc == pytest.approx(7.26654052734375e9)
    rp.tick(60 * US + 5 * 55 * US)  # T = 5 = F: additive increase, R_T += 40 Mb/s
    assert rp.rt == pytest.approx(7.54e9)
    assert rp.rc == pytest.approx(7.403270263671875e9)
    rp.tick(60 * US + 6 * 55 * US)  # T = 6, BC = 0: still additive
    assert rp.rt == pytest.approx(7.58e9)
    assert rp.rc == pytest.approx(7.4916351318359375e9)


def test_hyper_increase_needs_both_counters_past_f():
    p = DcqcnParams(byte_counter=1000, rate_timer_ns=10**12)  # byte counter only
    rp = ReactionPoint(G, p)
    rp.on_cnp(0)  # rc 5G, rt 10G
    rp.on_sent(5000)  # BC = 1..5: 4 fast-recovery steps, then additive (T = 0 < F)
    assert rp.rt == pytest.approx(10e9)  # additive step capped at the line rate
    p2 = DcqcnParams(byte_counter=1000, rate_timer_ns=1000, alpha_timer_ns=10**12)
    rp = ReactionPoint(G, p2)
    rp.on_cnp(0)
    rp.rc = rp.rt = 1e9  # a low operating point to watch the increments
    rp.t_count = rp.bc_count = 6  # both past F=5
    rp._increase()  # i = min(T, BC) - F = 1: R_T += 100 Mb/s
    assert rp.rt == pytest.approx(1.1e9) and rp.rc == pytest.approx(1.05e9)
    rp.t_count = rp.bc_count = 7
    rp._increase()  # i = 2
    assert rp.rt == pytest.approx(1.3e9) and rp.rc == pytest.approx(1.175e9)


def test_alpha_decays_without_cnp():
    rp = ReactionPoint(G)
    rp.on_cnp(0)
    rp.tick(10 * 55 * US)
    assert rp.alpha == pytest.approx((255 / 256) ** 10)


def test_rate_reduce_interval_and_floor():
    rp = ReactionPoint(G, DcqcnParams(rate_reduce_interval_ns=50 * US, min_rate_bps=1e9))
    assert rp.on_cnp(0)
    assert not rp.on_cnp(10 * US)  # too close to the last cut
    assert rp.cnp_times == [0, 10 * US] and rp.cnps == 2 and rp.cuts == 1  # counted, not cut
    for t in range(1, 10):
        rp.on_cnp(t * 50 * US)
    assert rp.rc == pytest.approx(1e9)  # never below the floor


def test_np_one_cnp_per_flow_per_interval():
    np_ = NotificationPoint(50 * US)
    sent = [t for t in range(0, 200 * US, US) if np_.on_ce(("10.0.0.1", 0x11), t)]
    assert sent == [0, 50 * US, 100 * US, 150 * US]
    assert np_.on_ce(("10.0.0.2", 0x12), 1)  # another flow has its own budget


@pytest.mark.parametrize(
    "knob,value,words",
    [
        ("g", 0, "dcqcn.g"),
        ("alpha_init", 1.5, "dcqcn.alpha_init"),
        ("byte_counter", 0, "dcqcn.byte_counter"),
        ("cnp_interval_ns", -1, "dcqcn.cnp_interval_ns"),
        ("min_rate_bps", 0, "rates must be positive"),
    ],
)
def test_params_out_of_range_are_named(knob, value, words):
    DcqcnParams().validate()  # the defaults are valid
    with pytest.raises(ValueError, match=words):
        DcqcnParams(**{knob: value}).validate()
