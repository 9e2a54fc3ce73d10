"""Every program of the p4sim corpus runs with its STF through p4sim's STF runner.

- tests/p4sim/programs/NAME.p4 with NAME.stf: the STF must pass.
- tests/p4sim/programs/reject_*.p4: loading must fail at the line:column and with the message
  fragment their header comment gives (`// expect: LINE:COL: fragment`, see the README there).
- p4src/roce_switch.p4 with every p4src/tests/*.stf.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4sim.frontend.errors import P4SourceError
from p4sim.lower import load_program
from p4sim.stf import run_stf

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "p4sim" / "programs"
P4SRC = ROOT / "p4src"

RUN = sorted(p for p in CORPUS.glob("*.p4") if not p.name.startswith("reject_"))
REJECT = sorted(CORPUS.glob("reject_*.p4"))
ROCE_STF = sorted((P4SRC / "tests").glob("*.stf"))

_cache: dict[str, object] = {}


def _compiled(path: Path, include=()):
    key = str(path)
    if key not in _cache:
        _cache[key] = load_program(str(path), include_dirs=[str(d) for d in include])
    return _cache[key]


@pytest.mark.parametrize("prog", RUN, ids=lambda p: p.stem)
def test_corpus_program(prog: Path):
    stf = prog.with_suffix(".stf")
    assert stf.exists(), f"{prog.name} has no STF file"
    res = run_stf(_compiled(prog), str(stf), strict=True)  # our STFs: every port checked
    assert res.ok, res.report()
    assert res.packets_sent > 0


_EXPECT = re.compile(
    r"expect[^:]*:\s*(?:[\w./-]*\.p4:)?(\d+):(\d+):?\s*(?:error:\s*)?(.+?)\s*(?:\*/)?$"
)


def _expectation(path: Path) -> tuple[int, int, str]:
    for line in path.read_text().splitlines()[:15]:
        m = _EXPECT.search(line)
        if m:
            return int(m.group(1)), int(m.group(2)), m.group(3).strip()
    raise AssertionError(f"{path.name}: no `expect: LINE:COL: fragment` comment in its header")


_KNOWN: dict[str, str] = {}  # reject programs p4sim is known to locate wrongly: none now


@pytest.mark.parametrize(
    "prog",
    [
        pytest.param(p, marks=pytest.mark.xfail(reason=_KNOWN[p.stem], strict=False))
        if p.stem in _KNOWN
        else p
        for p in REJECT
    ],
    ids=lambda p: p.stem,
)
def test_corpus_reject(prog: Path):
    line, col, fragment = _expectation(prog)
    with pytest.raises(P4SourceError) as ei:
        load_program(str(prog))
    e = ei.value
    assert (e.span.line, e.span.column) == (line, col), e.headline()
    assert fragment in e.headline(), e.headline()


@pytest.mark.parametrize("stf", ROCE_STF, ids=lambda p: p.stem)
def test_roce_switch_stf(stf: Path):
    prog = _compiled(P4SRC / "roce_switch.p4", include=[P4SRC])
    res = run_stf(prog, str(stf), strict=True)
    assert res.ok, res.report()
