"""Every p4src STF through `controller.stf` (what `rocelab stf` runs) on real switches, and
the differential p4sim == BMv2 over the same inputs.

- p4sim-grpc (p4sim-switch over P4Runtime, frames on veth pairs): always, as root;
- BMv2 simple_switch_grpc with roce_switch.p4 compiled by real p4c: when the toolchain is
  here (else skipped, one line saying what is missing);
- the differential: each STF, and the shared vectors as one STF, run on both switches;
  frames per port (bytes, order), then every counter and register cell compared
  (controller/differential.py; timestamp registers by which cells are set).

One switch per target for the whole module (BMv2 starts in about a second, p4sim-switch
in two): each STF gets the pipeline pushed afresh and the clone sessions it wrote deleted
after it. Negative controls: a wrong expectation, an extra frame, a planted difference in
the differential and an STF that requires virtual time all fail (or are refused) here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller.differential import Recorder, compare, replay, vectors_stf
from controller.packets.vectors import load
from controller.stf import Observed, StfSession, Unsupported, stf_ports
from controller.targets.config import TargetConfig, artifacts_program
from controller.targets.registry import from_p4
from controller.targets.toolchain import ensure_artifacts, toolchain

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "roce_switch.p4"
STFS = sorted((ROOT / "p4src" / "tests").glob("*.stf"))
PORTS = sorted(stf_ports(p.read_text() for p in STFS) | {1, 2, 3, 4})
VECTOR_IN, VECTOR_OUT = 1, 2
# CNPs stay in class 0 as in tests/targets/test_vectors_dataplane.py
VECTOR_CNP = "set_cnp_config(cnp_tc:0, np_enable:0, interval_us:50, cnp_dscp:48)"


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the switches run on veth pairs made here")


def _bmv2_artifacts(tmp: Path, target_config: TargetConfig) -> Path:
    """P4Info + BMv2 JSON of roce_switch.p4 from real p4c: --p4-artifacts / ROCELAB_P4_ARTIFACTS
    when given, else compiled here (controller/targets/toolchain.py: PATH or
    ROCELAB_BMV2_PREFIX); skipped (one line) without BMv2 or p4c."""
    tc = toolchain()
    given = target_config.options.get("p4_artifacts")
    problem = tc.bmv2_problem() or (None if given else tc.p4c_problem())
    if problem:
        if tc.configured:  # a prefix was given: one that cannot run is a failure, not a skip
            pytest.fail(f"needs BMv2 and p4c: {problem}")
        pytest.skip(f"needs BMv2 and p4c: {problem}")
    if given:
        return Path(given)
    return ensure_artifacts(PROGRAM, tmp / "p4", tc)


@pytest.fixture(scope="module")
def p4sim_grpc(tmp_path_factory):
    _needs_root()
    with StfSession(TargetConfig(kind="p4sim-grpc", device_id=0), from_p4(PROGRAM), PORTS,
                    log_dir=tmp_path_factory.mktemp("p4sim-logs")) as s:
        yield s


@pytest.fixture(scope="module")
def bmv2(tmp_path_factory, target_config):
    _needs_root()
    art = _bmv2_artifacts(tmp_path_factory.mktemp("bmv2"), target_config)
    with StfSession(TargetConfig(kind="bmv2", device_id=0), artifacts_program(art), PORTS,
                    log_dir=tmp_path_factory.mktemp("bmv2-logs")) as s:
        yield s


_RUNS: dict[tuple[str, str], object] = {}


def _run(session: StfSession, key: str, path: Path, text: str | None = None):
    """Each STF runs once per switch; the verdict tests and the differential share it."""
    k = (session.kind.name, key)
    if k not in _RUNS:
        _RUNS[k] = session.run(path, strict=text is None, text=text)
    return _RUNS[k]


@pytest.mark.parametrize("stf", STFS, ids=[p.stem for p in STFS])
def test_stf_on_p4sim_grpc(p4sim_grpc, stf: Path) -> None:
    r = _run(p4sim_grpc, stf.stem, stf)
    assert r.result.ok, r.result.report()
    assert r.result.packets_checked > 0


@pytest.mark.parametrize("stf", STFS, ids=[p.stem for p in STFS])
def test_stf_on_bmv2_and_same_as_p4sim(bmv2, p4sim_grpc, stf: Path) -> None:
    """The STF passes on BMv2, and BMv2 and p4sim-grpc left the same frames, counters and
    registers (one test, so that xdist keeps both runs of a file on one worker)."""
    b = _run(bmv2, stf.stem, stf)
    assert b.result.ok, "on BMv2: " + b.result.report()
    assert b.result.packets_checked > 0
    a = _run(p4sim_grpc, stf.stem, stf)
    assert a.observation.frames, "nothing came out: nothing was compared"
    diffs = compare(a.observation, b.observation, ("p4sim-grpc", "bmv2"))
    assert diffs == [], "p4sim-grpc and BMv2 differ:\n" + "\n".join(diffs[:20])


def _wire_vectors():
    # what a Linux link can carry (tests/targets/test_vectors_dataplane.py `sendable`)
    return [v for v in load() if len(v.frame) >= 14
            and not (v.frame[12:14] == b"\x81\x00" and len(v.frame) < 18)]


def test_differential_vectors(p4sim_grpc, bmv2, tmp_path) -> None:
    text = vectors_stf(_wire_vectors(), VECTOR_IN, VECTOR_OUT, VECTOR_CNP)
    path = tmp_path / "vectors.stf"
    a = _run(p4sim_grpc, "vectors", path, text)
    b = _run(bmv2, "vectors", path, text)
    assert len(a.observation.frames.get(VECTOR_OUT, [])) > 50, a.observation.frames.keys()
    diffs = compare(a.observation, b.observation, ("p4sim-grpc", "bmv2"))
    assert diffs == [], "\n".join(diffs[:20])


def test_differential_incast_replay(p4sim_grpc, bmv2) -> None:
    """The first 500 us of incast-dcqcn (in-process p4sim, virtual time): the writes and
    the frames at the switch's ingress recorded, then replayed one by one on both switches.
    Queues stay empty in the replay (a frame every 3 ms), so marking is not compared here:
    queue-dependent behaviour is compared by the STFs that pin the depth on both targets
    (ecn_thresholds and ecn_non_ect through debug_qdepth, pfc_* through pfc_qdepth)."""
    from controller.scenarios.scenario import load_scenario, run_scenario
    from controller.targets.p4sim import P4SimTarget

    recs: list[Recorder] = []

    def factory(seed: int) -> Recorder:
        recs.append(Recorder(P4SimTarget(PROGRAM, seed=seed)))
        return recs[-1]

    run_scenario(load_scenario("incast-dcqcn"), factory, 1, 500, progress=False)
    (rec,) = recs
    assert len(rec.frames) > 300 and {p for p, _ in rec.frames} == {1, 2, 3}
    a = replay(p4sim_grpc, rec.writes, rec.frames)
    b = replay(bmv2, rec.writes, rec.frames)
    assert sum(map(len, a.frames.values())) > 300
    diffs = compare(a, b, ("p4sim-grpc", "bmv2"))
    assert diffs == [], "\n".join(diffs[:20])


# ---------------------------------------------------------------- negative controls


def test_a_wrong_expectation_fails(p4sim_grpc, tmp_path) -> None:
    """The same l2 STF passes, then fails with one byte changed, then with a frame the
    test did not expect (strict: every port is checked)."""
    frame = "020000000002020000000001" + "88b5" + "00" * 46  # local experimental EtherType
    good = f"add l2_fwd ethernet.dst:0x020000000002 l2_forward(port:2)\npacket 1 {frame}\n"
    cases = {"good": good + f"expect 2 {frame}$\n",
             "byte": good + f"expect 2 {frame[:-2]}01$\n",
             "extra": good + f"expect 2 {frame}$\npacket 1 {frame}\n",
             "missing": good + f"expect 2 {frame}$\nexpect 2 {frame}$\n"}
    verdicts = {}
    for name, text in cases.items():
        p = tmp_path / f"{name}.stf"
        p.write_text(text)
        verdicts[name] = p4sim_grpc.run(p, strict=True).result.ok
    assert verdicts == {"good": True, "byte": False, "extra": False, "missing": False}


def test_virtual_time_stf_is_refused_with_its_reason(p4sim_grpc, tmp_path) -> None:
    p = tmp_path / "vt.stf"
    p.write_text("# requires: virtual_time (exact queue depths)\npacket 1 00\n")
    with pytest.raises(Unsupported, match="requires virtual_time"):
        p4sim_grpc.run(p)


def test_the_differential_sees_a_difference() -> None:
    """compare() is not blind: one byte, one missing frame, one counter, one register."""
    a = Observed({2: [b"\x01\x02", b"\x03"]}, {"c": [(1, 64)]}, {"r": [5], "pfc_last_sent": [7]})
    assert compare(a, a) == []
    same_clock = Observed({2: [b"\x01\x02", b"\x03"]}, {"c": [(1, 64)]}, {"r": [5], "pfc_last_sent": [9]})
    assert compare(a, same_clock) == [], "timestamp registers compare by set / not set"
    for b in (Observed({2: [b"\x01\x03", b"\x03"]}, a.counters, a.registers),
              Observed({2: [b"\x01\x02"]}, a.counters, a.registers),
              Observed(a.frames, {"c": [(2, 64)]}, a.registers),
              Observed(a.frames, a.counters, {"r": [6], "pfc_last_sent": [7]}),
              Observed(a.frames, a.counters, {"r": [5], "pfc_last_sent": [0]})):
        assert len(compare(a, b)) == 1, b
