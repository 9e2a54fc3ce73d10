"""Every p4src STF through `controller.stf` (what `rocelab stf` runs) on p4sim-switch over
P4Runtime (frames on veth pairs, as root), and the negative controls of the STF runner and of
the differential. The same STFs on BMv2 and the differential p4sim == BMv2 are the BMv2 tier's
(tests/p4src/test_stf_bmv2.py); the switches are tests/p4src/conftest.py's.

Negative controls: a wrong expectation, an extra frame, a planted difference in the
differential and an STF that requires virtual time all fail (or are refused) here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.differential import compare
from controller.stf import Observed, Unsupported

STFS = sorted((Path(__file__).resolve().parents[2] / "p4src" / "tests").glob("*.stf"))


@pytest.mark.parametrize("stf", STFS, ids=[p.stem for p in STFS])
def test_stf_on_p4sim_grpc(p4sim_grpc, stf: Path) -> None:
    r = p4sim_grpc.run(stf, strict=True)
    assert r.result.ok, r.result.report()
    assert r.result.packets_checked > 0


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


def test_a_frame_no_wire_carries_is_one_error_not_a_traceback(p4sim_grpc, tmp_path) -> None:
    """p4c's samples send 6-byte frames; AF_PACKET refuses them (EINVAL): an StfError naming
    the port and the size (what `rocelab stf` prints as one line, exit 2)."""
    from controller.stf import StfError

    p = tmp_path / "short.stf"
    p.write_text("packet 1 000000000000\n")
    with pytest.raises(StfError, match="port 1: a 6-byte frame cannot be sent"):
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
