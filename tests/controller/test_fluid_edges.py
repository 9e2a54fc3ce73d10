"""The fluid model's queue comes from inverting the RED marking line (Zhu et al., CoNEXT
2016): p = Pmax (q - Kmin) / (Kmax - Kmin) on the ramp. The RED function is written out
again here, on purpose, as an independent oracle: RED(queue) must give back p."""

from __future__ import annotations

import math

import pytest

from controller.hosts.dcqcn import DcqcnParams
from controller.scenarios.fluid import fixed_point


def red(q: float, kmin: float, kmax: float, pmax: float) -> float:
    if q <= kmin:
        return 0.0
    if q > kmax:
        return 1.0
    return pmax * (q - kmin) / (kmax - kmin)


@pytest.mark.parametrize("pmax", [0.2, 0.5, 1.0])
def test_queue_is_on_the_red_line(pmax):
    fp = fixed_point(8, 10e9, DcqcnParams(), 1106, 1, 19, pmax)
    assert 1 < fp.queue_pkts < 19
    assert red(fp.queue_pkts, 1, 19, pmax) == pytest.approx(fp.p, rel=1e-9)


def test_marking_above_pmax_leaves_the_ramp():
    """p* above Pmax cannot be reached on the ramp (RED jumps to 1 past Kmax): no queue."""
    fp = fixed_point(8, 10e9, DcqcnParams(), 1106, 1, 19, 0.01)
    assert fp.p > 0.01 and math.isnan(fp.queue_pkts)
