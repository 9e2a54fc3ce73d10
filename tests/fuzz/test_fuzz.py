"""The random-program differential (tests/fuzz): generator determinism, and a fixed-seed
batch of 20 programs on p4c + BMv2 and on p4sim (the BMv2 tier's: `make test-bmv2`, run by
`make test` when a toolchain is found)."""

from __future__ import annotations

import os

import pytest

from tests.fuzz.gen import generate
from tests.fuzz.outcome import Outcome, differences


def test_same_seed_same_case():
    a, b = generate(123), generate(123)
    assert a.source == b.source and a.packets == b.packets and a.entries == b.entries
    assert generate(124).source != a.source


def test_differences_sees_a_changed_frame_and_register():
    ref = Outcome(packets=[{1: [b"\x01\x02"]}], registers={"I.reg": [0, 5]})
    assert differences(ref, ref) == []
    bad = Outcome(packets=[{1: [b"\x01\x03"]}], registers={"I.reg": [0, 5]})
    assert differences(ref, bad)  # negative control: a flipped bit is seen
    assert differences(ref, Outcome(packets=[{2: [b"\x01\x02"]}], registers={"I.reg": [0, 5]}))
    assert differences(ref, Outcome(packets=[{1: [b"\x01\x02"]}], registers={"I.reg": [1, 5]}))


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.only_target("bmv2")
def test_fixed_seed_batch_agrees(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (veth pairs for BMv2's ports)")
    from tests.fuzz.bmv2 import ToolchainMissing, tools

    try:
        tools()
    except ToolchainMissing as e:
        pytest.skip(f"needs p4c and BMv2 simple_switch: {e}")
    from tests.fuzz.__main__ import run_batch

    s = run_batch(seed=7, count=20, out=tmp_path, log=lambda m: None)
    assert s.programs == 20 and s.agreed + s.rejected_by_p4c + len(s.errors) == 20, s.report()
    assert not s.disagreements, s.report()
    assert s.agreed >= 18, s.report()


def test_the_batch_runs_p4sim_in_the_reference_profile_and_restores_the_setting(
    monkeypatch, tmp_path
):
    """The batch's p4sim switches run the reference profile by default (a C build per random
    program would be nearly all its cost), and the process's own setting comes back after:
    the batch runs inside a tier worker whose later tests use the default."""
    from p4sim.profile import ENV
    from p4sim.runtime.switch import Switch
    from tests.fuzz import p4sim_run

    monkeypatch.setenv(ENV, "fast")
    src = tmp_path / "program.p4"
    src.write_text(generate(5).source)
    with p4sim_run._profile(p4sim_run.DEFAULT_PROFILE):
        sw = Switch(str(src))
    assert p4sim_run.DEFAULT_PROFILE == "reference"
    assert sw._ns["__p4sim_backend__"] == "python"  # a no-op _profile would build C here
    assert os.environ[ENV] == "fast"  # restored


@pytest.mark.root
@pytest.mark.only_target("bmv2")
@pytest.mark.parametrize("first", [1899, 1982])
def test_a_table_p4c_removed_gets_no_entries(tmp_path, first):
    """Seed 13's programs 1899 and 1982 apply a table only in a branch p4c folds away (`if
    ((-1w0) == 1w0)`): BMv2's JSON has no such table and simple_switch_CLI answers "Invalid
    table name". The batch sets up only the tables the JSON has (both targets never apply the
    others); before, these were harness errors in the 2,000-program run."""
    if os.geteuid() != 0:
        pytest.skip("needs root (veth pairs for BMv2's ports)")
    from tests.fuzz.bmv2 import ToolchainMissing, tools

    try:
        tools()
    except ToolchainMissing as e:
        pytest.skip(f"needs p4c and BMv2 simple_switch: {e}")
    from tests.fuzz.__main__ import run_batch

    s = run_batch(seed=13, count=1, out=tmp_path, first=first, log=lambda m: None)
    assert s.agreed == 1 and not s.errors and not s.disagreements, s.report()
