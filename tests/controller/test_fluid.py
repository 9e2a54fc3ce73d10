"""The DCQCN fluid model's fixed point: plugged back into the paper's three rate equations
(written out again here, on purpose, as an independent oracle), every derivative is zero."""

from __future__ import annotations

import pytest

from controller.hosts.dcqcn import DcqcnParams
from controller.scenarios.fluid import fixed_point


def derivatives(p: float, alpha: float, rt: float, rc: float, prm: DcqcnParams, pkt_bits: float):
    """d alpha/dt, d R_T/dt, d R_C/dt of Zhu et al. (CoNEXT 2016), rates in packets/s."""
    tau, tau2, t = prm.cnp_interval_ns / 1e9, prm.alpha_timer_ns / 1e9, prm.rate_timer_ns / 1e9
    b, f, ai, g = (
        prm.byte_counter * 8 / pkt_bits,
        prm.fast_recovery_steps,
        prm.rate_ai_bps / pkt_bits,
        prm.g,
    )
    keep = 1 - p
    da = g / tau2 * ((1 - keep ** (tau2 * rc)) - alpha)
    drt = (
        -(rt - rc) / tau * (1 - keep ** (tau * rc))
        + ai * rc * p * keep ** (f * b) / (keep ** (-b) - 1)
        + ai * rc * p * keep ** (f * t * rc) / (keep ** (-t * rc) - 1)
    )
    drc = (
        -rc * alpha / (2 * tau) * (1 - keep ** (tau * rc))
        + (rt - rc) / 2 * rc * p / (keep ** (-b) - 1)
        + (rt - rc) / 2 * rc * p / (keep ** (-t * rc) - 1)
    )
    return da, drt, drc


@pytest.mark.parametrize("n", [2, 4, 8])
def test_fixed_point_zeroes_the_paper_equations(n):
    prm = DcqcnParams()
    bits = 1106 * 8
    fp = fixed_point(n, 10e9, prm, 1106, 1, 19, 1.0)
    assert fp.rate_bps == pytest.approx(10e9 / n)
    rc, rt = fp.rate_bps / bits, fp.target_bps / bits
    da, drt, drc = derivatives(fp.p, fp.alpha, rt, rc, prm, bits)
    # relative to the size of the terms that cancel (the additive increase R_AI / T)
    scale = prm.rate_ai_bps / bits / (prm.rate_timer_ns / 1e9)
    assert abs(da) < 1e-6 and abs(drt) < 1e-6 * scale and abs(drc) < 1e-6 * scale * rc
    # a slightly different p does not zero them: the test can fail
    _, drt2, _ = derivatives(fp.p * 1.05, fp.alpha, rt, rc, prm, bits)
    assert abs(drt2) > 1e-3 * scale
    assert 1 < fp.queue_pkts < 19 and rt > rc


def test_more_flows_need_more_marking():
    prm = DcqcnParams()
    ps = [fixed_point(n, 10e9, prm, 1106, 1, 19, 1.0).p for n in (2, 4, 8)]
    assert ps[0] < ps[1] < ps[2]
