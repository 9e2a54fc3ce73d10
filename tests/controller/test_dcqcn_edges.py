"""DCQCN RP/NP edge cases a mutation review found untested. Each expected value follows
the DCQCN paper (Zhu et al., SIGCOMM 2015, sec. 3 and fig. 7) as the module docstring
restates it, worked by hand here on purpose as an independent oracle:
- a cut restarts the rate timer, the byte counter (bytes and BC) and the alpha timer;
- one byte-counter event per B bytes sent (B bytes exactly is one event);
- fast recovery while max(T, BC) < F, hyper increase only once min(T, BC) > F;
- alpha decays only after a whole alpha period with no CNP.
"""

from __future__ import annotations

import pytest

from controller.hosts.dcqcn import DcqcnParams, ReactionPoint

G = 10e9
US = 1000
NEVER = 10**15  # a timer period that never expires within a test


def test_cut_resets_the_byte_counter_stage():
    """BC restarts at 0 on a cut: the first timer event after it is fast recovery even if
    the byte counter had already passed F before the cut."""
    p = DcqcnParams(byte_counter=1000, rate_timer_ns=10 * US, alpha_timer_ns=NEVER)
    rp = ReactionPoint(G, p)
    rp.on_cnp(0)
    rp.on_sent(6 * 1000)  # BC = 6 > F before the next cut
    rp.on_cnp(1 * US)
    rc_cut, rt_cut = rp.rc, rp.rt
    rp.tick(11 * US)  # T = 1, BC = 0: fast recovery, R_T unchanged
    assert rp.rt == pytest.approx(rt_cut)
    assert rp.rc == pytest.approx((rt_cut + rc_cut) / 2)


def test_cut_resets_the_byte_count_toward_the_next_event():
    """Bytes sent before a cut do not count toward the first byte-counter event after it."""
    p = DcqcnParams(byte_counter=1000, rate_timer_ns=NEVER, alpha_timer_ns=NEVER)
    rp = ReactionPoint(G, p)
    rp.on_cnp(0)
    rp.on_sent(999)
    rp.on_cnp(1)
    rc_cut = rp.rc
    rp.on_sent(1)  # 1 byte since the cut: no event
    assert rp.rc == rc_cut
    rp.on_sent(999)  # 1000 bytes since the cut, exactly B: one fast-recovery event
    assert rp.rc == pytest.approx((rp.rt + rc_cut) / 2)


def test_exactly_b_bytes_is_one_byte_counter_event():
    p = DcqcnParams(byte_counter=1000, rate_timer_ns=NEVER, alpha_timer_ns=NEVER)
    rp = ReactionPoint(G, p)
    rp.on_cnp(0)  # rc 5G, rt 10G
    rp.on_sent(1000)
    assert rp.rc == pytest.approx(7.5e9)
    rp.on_sent(2999)  # two more events (2000 bytes), 999 left over
    assert rp.rc == pytest.approx(9.375e9)


def test_before_the_first_cut_nothing_counts():
    """DCQCN's increase machine starts at the first CNP: bytes and timer periods before it
    do not advance T or BC (the RP has nothing to recover)."""
    p = DcqcnParams(byte_counter=1000, rate_timer_ns=10 * US, alpha_timer_ns=NEVER)
    rp = ReactionPoint(G, p)
    rp.on_sent(10_000)
    rp.tick(100 * US)
    assert (rp.t_count, rp.bc_count, rp.bytes_since) == (0, 0, 0)
    assert rp.rc == G and rp.stage == "fast"


def test_full_recovery_stops_counting():
    """Back at line rate (R_C = R_T = line) the RP goes idle until the next CNP."""
    p = DcqcnParams(byte_counter=NEVER, rate_timer_ns=1 * US, alpha_timer_ns=NEVER)
    rp = ReactionPoint(G, p)
    rp.on_cnp(0)
    rp.tick(200 * US)  # fast recovery halves the gap 40+ times: R_C reaches 10G in floats
    assert rp.rc == G and rp.rt == G and not rp.active
    t = rp.t_count
    rp.tick(300 * US)
    rp.on_sent(10**6)
    assert rp.t_count == t and rp.bytes_since == 0


def test_cut_restarts_the_alpha_timer():
    """alpha decays only after K with no CNP: a cut at 50 us pushes the next alpha update
    from 55 us to 105 us."""
    rp = ReactionPoint(G)  # K = 55 us
    rp.on_cnp(50 * US)
    a = rp.alpha
    rp.tick(104 * US)
    assert rp.alpha == a
    rp.tick(105 * US)
    assert rp.alpha == pytest.approx(a * 255 / 256)


def test_a_cnp_inside_the_period_blocks_the_alpha_decay():
    """A CNP the rate-reduce interval did not act on still counts as 'a CNP was seen' for
    the alpha timer: no decay in that period, decay in the next quiet one."""
    p = DcqcnParams(rate_reduce_interval_ns=100 * US)
    rp = ReactionPoint(G, p)
    rp.on_cnp(0)
    a = rp.alpha
    assert not rp.on_cnp(10 * US)  # too soon to cut
    rp.tick(55 * US)
    assert rp.alpha == a
    rp.tick(110 * US)
    assert rp.alpha == pytest.approx(a * 255 / 256)


def test_rate_reduce_interval_boundary_cuts():
    """A CNP exactly one interval after the last cut is acted on."""
    rp = ReactionPoint(G, DcqcnParams(rate_reduce_interval_ns=50 * US))
    assert rp.on_cnp(0)
    assert not rp.on_cnp(50 * US - 1)
    assert rp.on_cnp(50 * US)
    assert rp.cuts == 2


def test_t_equal_f_both_is_additive_not_hyper():
    """min(T, BC) == F is still additive increase (R_T += R_AI); hyper needs both > F."""
    p = DcqcnParams(alpha_timer_ns=NEVER, rate_timer_ns=NEVER, byte_counter=NEVER)
    rp = ReactionPoint(G, p)
    rp.on_cnp(0)
    rp.rc = rp.rt = 1e9
    rp.t_count = rp.bc_count = 5
    assert rp.stage == "additive"
    rp._increase()
    assert rp.rt == pytest.approx(1e9 + 40e6) and rp.rc == pytest.approx(1e9 + 20e6)
    rp.t_count, rp.bc_count = 9, 5  # one counter far past F, the other at F: additive
    rp._increase()
    assert rp.rt == pytest.approx(1e9 + 80e6)
