"""The DCQCN fluid model's fixed point (Zhu et al., "ECN or Delay: Lessons Learnt from
Analysis of DCQCN and TIMELY", CoNEXT 2016, section 3), written from the paper's equations
to compare with what rocelab measures.

Model, per flow (rates in packets per second, p the marking probability at the queue):
    d alpha/dt = g/tau' * ((1 - (1-p)^(tau' R_C)) - alpha)
    d R_T/dt  = -(R_T - R_C)/tau * (1 - (1-p)^(tau R_C))
                + R_AI R_C p (1-p)^(F B) / ((1-p)^(-B) - 1)
                + R_AI R_C p (1-p)^(F T R_C) / ((1-p)^(-T R_C) - 1)
    d R_C/dt  = -R_C alpha/(2 tau) * (1 - (1-p)^(tau R_C))
                + (R_T - R_C)/2 * R_C p / ((1-p)^(-B) - 1)
                + (R_T - R_C)/2 * R_C p / ((1-p)^(-T R_C) - 1)
    p = RED(q): 0 below Kmin, Pmax (q - Kmin)/(Kmax - Kmin) up to Kmax, 1 above
with tau the CNP interval, tau' the alpha timer, T the rate-increase timer, B the byte
counter in packets, F the fast-recovery steps, R_AI the additive step.

At the fixed point the N flows share the link, R_C* = C/N; d alpha = 0 gives alpha*;
d R_C = 0 gives R_T* - R_C*; d R_T = 0 leaves one equation in p, solved by bisection
(its left side falls and its right side rises in p on the interval searched). The queue
follows from inverting the RED line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.hosts.dcqcn import DcqcnParams


@dataclass
class FixedPoint:
    n: int
    rate_bps: float  # R_C* per flow
    p: float  # marking probability
    alpha: float
    target_bps: float  # R_T*
    queue_pkts: float  # from the RED line (nan when p > Pmax: the model leaves the ramp)


def _over_expm1(p: float, x: float) -> float:
    """p / (e^x - 1), 0 where e^x overflows (the event never completes before a CNP)."""
    return p / math.expm1(x) if x < 700 else 0.0


def _terms(
    p: float, rc: float, prm: DcqcnParams, b_pkts: float
) -> tuple[float, float, float, float]:
    tau, t = prm.cnp_interval_ns / 1e9, prm.rate_timer_ns / 1e9
    q = math.log1p(-p)  # ln(1 - p), exact for small p
    no_cnp = -math.expm1(tau * rc * q)  # 1 - (1-p)^(tau R_C): a CNP in tau
    byte_ev = _over_expm1(p, -b_pkts * q)  # p / ((1-p)^-B - 1)
    time_ev = _over_expm1(p, -t * rc * q)  # p / ((1-p)^-(T R_C) - 1)
    return no_cnp, byte_ev, time_ev, q


def residual(p: float, n: int, c_pps: float, prm: DcqcnParams, pkt_bits: float) -> float:
    """d R_T/dt at the fixed point for a given p (zero at the solution)."""
    rc = c_pps / n
    ai = prm.rate_ai_bps / pkt_bits
    b = prm.byte_counter * 8 / pkt_bits
    t = prm.rate_timer_ns / 1e9
    no_cnp, byte_ev, time_ev, q = _terms(p, rc, prm, b)
    alpha = -math.expm1(prm.alpha_timer_ns / 1e9 * rc * q)
    if byte_ev + time_ev == 0:
        return -math.inf  # no increase event survives: the cuts win
    gap = alpha * no_cnp / ((prm.cnp_interval_ns / 1e9) * (byte_ev + time_ev))  # R_T - R_C
    cut = gap / (prm.cnp_interval_ns / 1e9) * no_cnp
    grow = (
        ai
        * rc
        * (
            math.exp(prm.fast_recovery_steps * b * q) * byte_ev
            + math.exp(prm.fast_recovery_steps * t * rc * q) * time_ev
        )
    )
    return grow - cut


def fixed_point(
    n: int, line_bps: float, prm: DcqcnParams, pkt_bytes: int, kmin: float, kmax: float, pmax: float
) -> FixedPoint:
    pkt_bits = pkt_bytes * 8.0
    c = line_bps / pkt_bits
    lo, hi = 1e-9, 0.5
    f_lo = residual(lo, n, c, prm, pkt_bits)
    if f_lo * residual(hi, n, c, prm, pkt_bits) > 0:
        raise ValueError(
            "the fluid model has no fixed point in p = 1e-9 .. 0.5 for these parameters"
        )
    for _ in range(200):
        mid = math.sqrt(lo * hi)  # p spans decades: bisect in log space
        f = residual(mid, n, c, prm, pkt_bits)
        if (f > 0) == (f_lo > 0):
            lo, f_lo = mid, f
        else:
            hi = mid
    p = math.sqrt(lo * hi)
    rc = c / n
    no_cnp, byte_ev, time_ev, q = _terms(p, rc, prm, prm.byte_counter * 8 / pkt_bits)
    alpha = -math.expm1(prm.alpha_timer_ns / 1e9 * rc * q)
    gap = alpha * no_cnp / ((prm.cnp_interval_ns / 1e9) * (byte_ev + time_ev))
    queue = kmin + p / pmax * (kmax - kmin) if p <= pmax else math.nan
    return FixedPoint(n, rc * pkt_bits, p, alpha, (rc + gap) * pkt_bits, queue)
