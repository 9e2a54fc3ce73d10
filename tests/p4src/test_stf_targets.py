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

from controller.differential import compare, record, summary_line
from controller.stf import Observed, Unsupported

ROOT = Path(__file__).resolve().parents[2]
STFS = sorted((ROOT / "p4src" / "tests").glob("*.stf"))
# p4c's sample bvec-hdr-bmv2 in p4sim's corpus: frames of 11 bytes, shorter than a wire carries
SHORT_FRAMES_STF = ROOT / "tests" / "p4sim" / "programs" / "header_struct_field.stf"


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
    cases = {
        "good": good + f"expect 2 {frame}$\n",
        "byte": good + f"expect 2 {frame[:-2]}01$\n",
        "extra": good + f"expect 2 {frame}$\npacket 1 {frame}\n",
        "missing": good + f"expect 2 {frame}$\nexpect 2 {frame}$\n",
    }
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


def test_a_frame_shorter_than_a_wire_carries_is_refused_up_front(p4sim_grpc, tmp_path) -> None:
    """AF_PACKET refuses a frame shorter than an Ethernet header (EINVAL): the whole STF is
    refused before anything is written or sent (Unsupported, with line, size and port);
    14 bytes go through (the boundary), and so does any length on the CPU port (a PacketOut)."""
    from controller.stf import Unsupported

    short = tmp_path / "short.stf"
    short.write_text("packet 1 " + "00" * 14 + "\npacket 1 " + "00" * 13 + "\n")
    with pytest.raises(
        Unsupported,
        match=r"line 2: a frame of 13 bytes on port 1: a wire carries "
        r">= 14 bytes .*in-process p4sim only",
    ):
        p4sim_grpc.run(short)
    fits = tmp_path / "fits.stf"
    fits.write_text("packet 1 " + "00" * 14 + "\n")
    r = p4sim_grpc.run(fits)
    assert r.result.ok and r.result.packets_sent == 1, r.result.report()


def test_the_sample_with_short_frames_is_one_not_run_line(rocelab_stf, tmp_path) -> None:
    """`rocelab stf` on p4sim-grpc with p4c's bvec-hdr-bmv2 (in p4sim's corpus as
    header_struct_field: 11-byte frames): one NOT RUN line with its reason, exit 0 as for
    an STF that requires virtual time; in-process p4sim runs it; the same program with
    14-byte frames runs on p4sim-grpc (the negative control)."""
    stf = SHORT_FRAMES_STF
    r = rocelab_stf(stf, "--target", "p4sim-grpc")
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert r.stdout.splitlines() == [
        f"NOT RUN: {stf}: line 3: a frame of 11 bytes on port 0: a wire carries >= 14 bytes "
        "(an Ethernet header; p4c's runner uses pcap files, and padding would change what the "
        "program parses): in-process p4sim only",
        "0 passed, 0 failed, 1 not run (--target p4sim-grpc)",
    ]
    r = rocelab_stf(stf, "--target", "p4sim")
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    (tmp_path / "h.p4").write_bytes(stf.with_suffix(".p4").read_bytes())
    frame = "01B31234AA 09005678BB EEEEEEEE"  # 14 bytes: the headers, 4 bytes of payload
    (tmp_path / "h.stf").write_text(f"packet 0 {frame}\nexpect 1 {frame}$\n")
    r = rocelab_stf(tmp_path / "h.stf", "--target", "p4sim-grpc", "--strict")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "1 passed, 0 failed, 0 not run (--target p4sim-grpc)"


def test_the_differential_sees_a_difference() -> None:
    """compare() is not blind: one byte, one missing frame, one counter, one register."""
    a = Observed({2: [b"\x01\x02", b"\x03"]}, {"c": [(1, 64)]}, {"r": [5], "pfc_last_sent": [7]})
    assert compare(a, a) == []
    same_clock = Observed(
        {2: [b"\x01\x02", b"\x03"]}, {"c": [(1, 64)]}, {"r": [5], "pfc_last_sent": [9]}
    )
    assert compare(a, same_clock) == [], "timestamp registers compare by set / not set"
    for b in (
        Observed({2: [b"\x01\x03", b"\x03"]}, a.counters, a.registers),
        Observed({2: [b"\x01\x02"]}, a.counters, a.registers),
        Observed(a.frames, {"c": [(2, 64)]}, a.registers),
        Observed(a.frames, a.counters, {"r": [6], "pfc_last_sent": [7]}),
        Observed(a.frames, a.counters, {"r": [5], "pfc_last_sent": [0]}),
    ):
        assert len(compare(a, b)) == 1, b


def test_the_differential_line_counts_what_was_compared_and_each_difference() -> None:
    """The tier's closing differential line adds up what each comparison left on its test
    report: a planted difference (one byte of one frame) counts as one."""
    from types import SimpleNamespace

    a = Observed({2: [b"\x01\x02", b"\x03"], 3: [b"\x04"]}, {"c": [(1, 64), (0, 0)]}, {"r": [5]})
    b = Observed({2: [b"\x01\x02", b"\x04"], 3: [b"\x04"]}, a.counters, a.registers)
    node = SimpleNamespace(user_properties=[])
    record(node, a, a, compare(a, a))
    record(node, a, b, compare(a, b))
    runs = [v for _, v in node.user_properties]
    assert summary_line(runs) == (
        "differential p4sim == BMv2: 2 runs, 6 frames and 6 "
        "counter/register cells compared, 1 unexplained differences"
    )
