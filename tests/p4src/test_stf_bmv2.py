"""The BMv2 tier's STF tests (`make test-bmv2`; `make test` runs them with --target bmv2
when a toolchain is found): every p4src STF through `controller.stf` (what
`rocelab stf --target bmv2` runs) on simple_switch_grpc with roce_switch.p4 compiled by real
p4c, and the differential p4sim == BMv2 over the same inputs: each STF, the shared vectors
as one STF, and headline scenarios (incast-dcqcn, incast-pfc) recorded at the switch's ingress and replayed. Frames per
port (bytes, order), then every counter and register cell are compared
(controller/differential.py; timestamp registers by which cells are set).

One switch per kind for the whole module (tests/p4src/conftest.py; BMv2 starts in about a
second, p4sim-switch in two): each STF gets the pipeline pushed afresh and the clone sessions
it wrote deleted after it. The differential's negative control is in test_stf_targets.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.differential import Recorder, compare, record, replay, vectors_stf
from controller.packets.vectors import load

pytestmark = pytest.mark.only_target("bmv2")

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "roce_switch.p4"
STFS = sorted((ROOT / "p4src" / "tests").glob("*.stf"))
# p4c's sample bvec-hdr-bmv2 in p4sim's corpus: frames of 11 bytes, shorter than a wire carries
SHORT_FRAMES_STF = ROOT / "tests" / "p4sim" / "programs" / "header_struct_field.stf"
VECTOR_IN, VECTOR_OUT = 1, 2
# CNPs stay in class 0 as in tests/targets/test_vectors_dataplane.py
VECTOR_CNP = "set_cnp_config(cnp_tc:0, np_enable:0, interval_us:50, cnp_dscp:48)"


@pytest.mark.parametrize("stf", STFS, ids=[p.stem for p in STFS])
def test_stf_on_bmv2_and_same_as_p4sim(bmv2, p4sim_grpc, stf: Path, request) -> None:
    """The STF passes on BMv2, and BMv2 and p4sim-grpc left the same frames, counters and
    registers (one test, so that xdist keeps both runs of a file on one worker)."""
    b = bmv2.run(stf, strict=True)
    assert b.result.ok, "on BMv2: " + b.result.report()
    assert b.result.packets_checked > 0
    a = p4sim_grpc.run(stf, strict=True)
    assert a.observation.frames, "nothing came out: nothing was compared"
    diffs = compare(a.observation, b.observation, ("p4sim-grpc", "bmv2"))
    record(request.node, a.observation, b.observation, diffs)
    assert diffs == [], "p4sim-grpc and BMv2 differ:\n" + "\n".join(diffs[:20])


def test_the_sample_with_short_frames_is_not_run_on_bmv2(
    bmv2_toolchain, rocelab_stf, tmp_path
) -> None:
    """`rocelab stf --target bmv2` (p4c compiling the program) with p4c's bvec-hdr-bmv2 as
    p4sim's corpus has it: one NOT RUN line, exit 0; with 14-byte frames it runs and passes
    on BMv2 (the negative control)."""
    stf = SHORT_FRAMES_STF
    r = rocelab_stf(stf, "--target", "bmv2")
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        f"NOT RUN: {stf}: line 3: a frame of 11 bytes on port 0: a wire carries >= 14 bytes "
        "(an Ethernet header; p4c's runner uses pcap files, and padding would change what the "
        "program parses): in-process p4sim only",
        "0 passed, 0 failed, 1 not run (--target bmv2)",
    ]
    (tmp_path / "h.p4").write_bytes(stf.with_suffix(".p4").read_bytes())
    frame = "0315333310 4400444420 EEEEEEEE"  # 14 bytes: headers changed by the table, payload
    (tmp_path / "h.stf").write_text(f"packet 0 {frame}\nexpect 3 03F6333310 0315333311 EEEEEEEE$\n")
    r = rocelab_stf(tmp_path / "h.stf", "--target", "bmv2", "--strict")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "1 passed, 0 failed, 0 not run (--target bmv2)"


def _wire_vectors():
    # what a Linux link can carry (tests/targets/test_vectors_dataplane.py `sendable`)
    return [
        v
        for v in load()
        if len(v.frame) >= 14 and not (v.frame[12:14] == b"\x81\x00" and len(v.frame) < 18)
    ]


def test_differential_vectors(p4sim_grpc, bmv2, tmp_path, request) -> None:
    text = vectors_stf(_wire_vectors(), VECTOR_IN, VECTOR_OUT, VECTOR_CNP)
    path = tmp_path / "vectors.stf"
    a = p4sim_grpc.run(path, strict=False, text=text)
    b = bmv2.run(path, strict=False, text=text)
    assert len(a.observation.frames.get(VECTOR_OUT, [])) > 50, a.observation.frames.keys()
    diffs = compare(a.observation, b.observation, ("p4sim-grpc", "bmv2"))
    record(request.node, a.observation, b.observation, diffs)
    assert diffs == [], "\n".join(diffs[:20])


# headline scenarios recorded for 500 us (> 300 frames at the switch's ingress each)
REPLAYED = ["incast-dcqcn", "incast-pfc"]


@pytest.mark.parametrize("name", REPLAYED)
def test_differential_scenario_replay(p4sim_grpc, bmv2, name: str, request) -> None:
    """The first 500 us of a headline scenario (in-process p4sim, virtual time): the writes
    (routes, classes, ECN/PFC/CNP configuration, the mirror session) and the frames at the
    switch's ingress recorded, then replayed one by one on both switches; frames compared
    on every port (the mirror copies on port 9 too), then counters and registers.
    Queues stay empty in the replay (a frame every 3 ms), so marking and PFC generation are
    not compared here: queue-dependent behaviour is compared by the STFs that pin the depth
    on both targets (ecn_thresholds and ecn_non_ect through debug_qdepth, pfc_* through
    pfc_qdepth)."""
    from controller.scenarios.scenario import load_scenario, run_scenario
    from controller.targets.p4sim import P4SimTarget

    recs: list[Recorder] = []

    def factory(seed: int) -> Recorder:
        recs.append(Recorder(P4SimTarget(PROGRAM, seed=seed)))
        return recs[-1]

    run_scenario(load_scenario(name), factory, 1, 500, progress=False)
    (rec,) = recs
    assert len(rec.frames) > 300 and {p for p, _ in rec.frames} == {1, 2, 3}
    a = replay(p4sim_grpc, rec.writes, rec.frames)
    b = replay(bmv2, rec.writes, rec.frames)
    assert sum(map(len, a.frames.values())) > 300
    assert a.frames.get(9), "the mirror session's copies did not come out: not compared"
    diffs = compare(a, b, ("p4sim-grpc", "bmv2"))
    record(request.node, a, b, diffs)
    assert diffs == [], "\n".join(diffs[:20])
