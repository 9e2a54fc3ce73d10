"""The ECN marking curve of roce_switch.p4 measured on p4sim: the probability that a packet
is CE-marked at queue depths across Kmin..Kmax against the RED line
p(d) = Pmax * (d - Kmin) / (Kmax - Kmin), with a binomial bound, plus the exact edges
(p(Kmin) = 0, p(Kmax) = Pmax, p(Kmax + 1) = 1).

The depth a packet sees is pinned with the program's `debug_qdepth` table, so each packet is
an independent Bernoulli trial of the program's own `random()` (p4sim seeded: the counts
are reproducible). `test_ecn_follows_the_real_queue_depth` (test_p4src_timing.py) checks
the real enq_qdepth feeds the same code.

The mutants (a step marker, and off-by-one ramps at either edge) are planted in a copy of
the P4 source and must each fail the curve check: a check that a broken marker also passes
is no check.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import sys
from pathlib import Path

import pytest

from p4sim.lower import load_program
from p4sim.runtime.switch import Switch
from p4sim.stf import StfRunner

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "p4src_gen_stf_curve", ROOT / "p4src" / "tests" / "gen_stf.py"
)
gen = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gen
_spec.loader.exec_module(gen)

KMIN, KMAX = 10, 30
PMAX_NUM = 1 << 23  # Pmax 50% in the program's 2^24 fixed point
PMAX = PMAX_NUM / (1 << 24)
TRIALS = 400  # packets per depth
Z = 4.5  # binomial bound: a correct marker fails a point with probability ~7e-6
RAMP_DEPTHS = (11, 15, 20, 25, 29)


def red(depth: int) -> float:
    """The RED/DCQCN line, written here on purpose as an oracle independent of ecn.p4."""
    if depth <= KMIN:
        return 0.0
    if depth > KMAX:
        return 1.0
    return PMAX * (depth - KMIN) / (KMAX - KMIN)


def marked_fraction(compiled, depth: int, seed: int) -> int:
    """How many of TRIALS ECT(0) RoCEv2 packets leave CE-marked at a pinned depth."""
    s = gen.Stf("curve", "curve")
    gen.l2(s, 2, gen.HOST_MAC[2])
    s.add("dscp_to_tc", {"dscp": "26"}, "set_tc_from_dscp", {"tc": 3})
    gen._ecn_profile(s, 2, 3, KMIN, KMAX, PMAX_NUM)
    gen._depth(s, 2, depth)
    sw = Switch(compiled, seed=seed)
    result = StfRunner(sw, "<setup>", strict=True).run_text("\n".join(s.lines))
    assert result.ok, result.report()
    frame = gen.roce_v2(ecn=2)
    ce = gen.rewrite(frame, ecn=3)
    marks = 0
    for _ in range(TRIALS):
        sw.send(1, frame)
        sw.run_until_idle()
        (out,) = [p.data for p in sw.receive() if p.port == 2]
        assert out in (frame, ce)
        marks += out == ce
    return marks


def curve_failures(compiled) -> list[str]:
    """Every depth where the measured marking count is off the RED line: the edges must be
    exact (0 at Kmin, all above Kmax), the ramp within Z binomial standard deviations."""
    bad = []
    for i, depth in enumerate((KMIN, *RAMP_DEPTHS, KMAX, KMAX + 1)):
        k = marked_fraction(compiled, depth, seed=1000 + i)
        p = red(depth)
        if p in (0.0, 1.0):
            ok = k == round(p * TRIALS)
        else:
            ok = abs(k - TRIALS * p) <= Z * math.sqrt(TRIALS * p * (1 - p)) + 1
        if not ok:
            bad.append(f"depth {depth}: {k}/{TRIALS} marked, RED line {p:.3f}")
    return bad


@pytest.fixture(scope="module")
def compiled():
    return load_program(str(ROOT / "p4src" / "roce_switch.p4"))


def test_marking_curve_follows_the_red_line(compiled) -> None:
    assert curve_failures(compiled) == []


ORIG_RAMP = "bit<64> rhs = (bit<64>)meta.ecn_pmax * (bit<64>)(meta.qdepth - meta.ecn_kmin);"
ORIG_OVER = "bool over = meta.qdepth > meta.ecn_kmax;"
ORIG_BAND = "if (!over && meta.qdepth > meta.ecn_kmin) {"
MUTANTS = {
    # Pmax everywhere in (Kmin, Kmax]
    "step": [
        (
            ORIG_RAMP,
            "bit<64> rhs = (bit<64>)meta.ecn_pmax * (bit<64>)(meta.ecn_kmax - meta.ecn_kmin);",
        )
    ],
    # the ramp starts one packet early: p(Kmin) = Pmax / (Kmax - Kmin)
    "kmin-early": [
        (ORIG_BAND, "if (!over && meta.qdepth >= meta.ecn_kmin) {"),
        (
            ORIG_RAMP,
            "bit<64> rhs = (bit<64>)meta.ecn_pmax * (bit<64>)(meta.qdepth - meta.ecn_kmin + 1);",
        ),
    ],
    # the ramp ends one packet early: depth Kmax always marked
    "kmax-early": [(ORIG_OVER, "bool over = meta.qdepth >= meta.ecn_kmax;")],
    # the ramp ends one packet late: depth Kmax + 1 marked with Pmax * 21/20 only
    "kmax-late": [(ORIG_OVER, "bool over = meta.qdepth > meta.ecn_kmax + 1;")],
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_marker_mutant_fails_the_curve(tmp_path, name) -> None:
    src = ROOT / "p4src"
    dst = tmp_path / "p4src"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("tests"))
    ecn = dst / "include" / "ecn.p4"
    text = ecn.read_text()
    for old, new in MUTANTS[name]:
        assert text.count(old) == 1, f"mutant {name}: {old!r} not found once in ecn.p4"
        text = text.replace(old, new)
    ecn.write_text(text)
    failures = curve_failures(load_program(str(dst / "roce_switch.p4")))
    assert failures, f"the {name} mutant of ecn.p4 passed the marking-curve check"
