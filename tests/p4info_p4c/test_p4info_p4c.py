"""p4sim's P4Info equals real p4c-bm2-ss's for every program of p4sim's corpus that both
load (`python -m tests.p4info_p4c`), in the BMv2 tier (it needs p4c). The corpus is split in
SHARDS tests so that xdist spreads the compiles over its workers; p4c's P4Infos are cached
by source hash (compare.CACHE), so a second run compiles only what changed.

Negative controls: a planted difference is seen (one line naming the field), and an
exception for a program that compares equal fails as stale.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.targets.toolchain import toolchain
from tests.p4info_p4c.compare import (
    canonical,
    compare_program,
    corpus_programs,
    diff,
    p4sim_p4info,
)

pytestmark = pytest.mark.only_target("bmv2")

SHARDS = 6
PROGRAMS = corpus_programs()


@pytest.fixture(scope="module")
def tc():
    t = toolchain()
    why = t.p4c_problem()
    if why:
        if t.configured:  # a prefix was given: one that cannot run is a failure
            pytest.fail(f"needs p4c: {why}")
        pytest.skip(f"needs p4c: {why}")
    return t


@pytest.mark.parametrize("shard", range(SHARDS))
def test_corpus_p4info_equals_p4c(tc, tmp_path, shard: int) -> None:
    outcomes = [compare_program(p, tc, tmp_path) for p in PROGRAMS[shard::SHARDS]]
    failures = [line for o in outcomes if o.failed for line in o.lines]
    assert failures == [], "\n".join(failures[:30])
    # most of the corpus is v1model that p4c takes: the comparison is not vacuous
    assert sum(o.status == "equal" for o in outcomes) >= len(outcomes) * 3 // 4


def test_roce_switch_p4info_equals_p4c(tc, tmp_path) -> None:
    """The project's program, whole messages (test_p4c.py checks names and ids)."""
    o = compare_program(Path(__file__).parents[2] / "p4src" / "roce_switch.p4", tc, tmp_path)
    assert o.status == "equal", "\n".join(o.lines)


def test_a_planted_difference_is_seen() -> None:
    ours = p4sim_p4info(Path(__file__).parents[1] / "p4sim" / "programs" / "action_params.p4")
    planted = canonical(ours)
    assert diff(canonical(ours), planted) == []
    planted.actions[-1].params[0].bitwidth += 1
    lines = diff(canonical(ours), planted)
    assert len(lines) == 1 and ".params[" in lines[0] and "bitwidth" in lines[0], lines
    del planted.tables[0]
    assert any("only in p4c's" in x for x in diff(canonical(ours), planted))


def test_a_stale_exception_fails(tc, tmp_path) -> None:
    program = PROGRAMS[0]
    o = compare_program(program, tc, tmp_path, {program.stem: "planted: not a difference"})
    assert o.status == "stale" and o.failed, o
    assert "stale exception" in o.lines[0]
