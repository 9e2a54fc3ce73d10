"""issue 37's formal proofs (hdl/formal/prove.py, `make formal`) at DATA_WIDTH 64: per wrapper
the BMC proof, the k-induction where it closes, every cover reached, and each planted protocol
bug (a shim on the DUT's outputs, the wrapper's PLANT parameter) failing with a counterexample
that names the property it breaks. yosys elaborates each wrapper once (cached in build/formal
under a file lock, shared by xdist workers); most smtbmc runs here take seconds (roce_np's
BMC and covers: see prove.py's TARGETS)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hdl" / "formal"))
import prove  # noqa: E402

CHECKS = [
    (name, mode)
    for name, t in sorted(prove.TARGETS.items())
    for mode in ("cover", *(("bmc",) if t.proven else ()), *(("induction",) if t.induction else ()))
]
PLANTED = [(name, bug) for name, t in sorted(prove.TARGETS.items()) for bug in sorted(t.planted)]


@pytest.mark.parametrize(("name", "mode"), CHECKS)
def test_proof(name: str, mode: str) -> None:
    t = prove.TARGETS[name]
    steps = {"induction": t.induction, "bmc": t.bmc_depth or t.depth}.get(mode, t.depth)
    o = prove.smtbmc(prove.models(name) / "plant0.smt2", mode, steps)
    assert o.passed, (
        f"{name} {mode}: failed {o.failed_asserts} unreached {o.unreached}\n{o.log[-3000:]}"
    )
    if mode == "cover":  # every cover statement of the wrapper, none left unreached
        wrapper = (prove.HERE / f"{t.wrapper}.sv").read_text()
        assert o.reached == sorted(set(prove.re.findall(r"(c_\w+): cover", wrapper))), o.reached


@pytest.mark.parametrize(("name", "bug"), PLANTED)
def test_planted_bug_is_caught(name: str, bug: str, tmp_path: Path) -> None:
    t = prove.TARGETS[name]
    plant, prop = t.planted[bug]
    o = prove.smtbmc(
        prove.models(name) / f"plant{plant}.smt2",
        "bmc",
        t.depth,
        trace=tmp_path / "trace.vcd",
        keep_going=t.keep_going,
    )
    assert not o.passed and prop in o.failed_asserts, (
        f"{name} {bug}: {o.failed_asserts}\n{o.log[-2000:]}"
    )
    assert (tmp_path / "trace.vcd").stat().st_size > 0  # the counterexample
