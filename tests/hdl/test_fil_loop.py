"""FPGA-in-the-loop: the 2:1 incast on p4sim with h3's NIC receive path in RTL
(roce_parser -> roce_np, hdl/rtl/roce_rx.v), in virtual time (controller.fil).

CI size: a few hundred virtual microseconds (bench/fil.py and `make fil` run longer).
Every frame's RTL record is cross-checked against decode() and p4sim's parser inside the
loop (a mismatch stops the run); here we check that the loop really closed (the RTL's
CNPs went back through p4sim and cut the senders' rates), that two runs are identical,
and that the broken NPs (test-only defines) stop the run naming the CNP.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller.fil.loop import FilMismatch, cross_check, p4_parsed
from controller.fil.run import run_fil, run_sim
from controller.packets import decode
from controller.packets.build import roce_frame
from controller.targets import DEFAULT_PROGRAM
from controller.targets.p4sim import P4SimTarget

SENDER_QPS = {0x100, 0x101}


def _need(sim: str) -> None:
    reason = run_sim.prepare_env(sim)
    if reason and (sim == "verilator" or os.geteuid() == 0):
        pytest.fail(reason)
    if reason:
        pytest.skip(reason)


def _closed_loop(out: dict) -> None:
    assert out["error"] is None, out["error"]
    st, run = out["stats"], out["run"]
    assert st.mismatches == 0
    assert st.records_checked >= 0.95 * st.frames_in and st.records_checked > 50
    assert st.p4_checked == st.records_checked  # p4sim's parser saw every frame too
    assert {q for _t, q in st.cnp_times} == SENDER_QPS, "both senders get RTL CNPs"
    c = run.counters
    # the RTL's CNPs, and only those, crossed the switch back to the senders' RPs
    assert c["host_cnps_sent"] == st.cnps == c["host_cnps_rx"] == c["cnp_rx"] > 0
    assert sum(f.cnps for f in run.flows) == st.cnps
    for f in run.flows:
        assert f.cnps > 0 and f.final_rate_bps < 0.9 * run.line_bps, f"{f.name} did not react"


@pytest.mark.slow
def test_fil_incast_verilator_repeatable(tmp_path: Path) -> None:
    _need("verilator")
    a = run_fil("incast-dcqcn", tmp_path / "a", sim="verilator", width=64, duration_us=200)
    _closed_loop(a)
    b = run_fil("incast-dcqcn", tmp_path / "b", sim="verilator", width=64, duration_us=200)
    assert a["stats"].cnp_times == b["stats"].cnp_times
    assert a["run"].series == b["run"].series and a["run"].counters == b["run"].counters


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "duration_us", "names"),
    [
        ("ROCE_NP_FAULT_QP", 25, "bth_dqpn"),
        ("ROCE_NP_FAULT_INTERVAL", 70, "the NP model sends no CNP here"),
    ],
)
def test_fil_broken_np_stops_the_run(
    fault: str, duration_us: int, names: str, tmp_path: Path
) -> None:
    _need("icarus")
    out = run_fil("incast-dcqcn", tmp_path, sim="icarus", duration_us=duration_us, fault=fault)
    assert out["error"] is not None and "CNP" in out["error"] and names in out["error"], out[
        "error"
    ]
    assert out["sim_run"].failed, "the cocotb test must fail on a mismatch"


def test_cross_check_names_the_frame_and_fields() -> None:
    f = roce_frame("10.0.0.1", "10.0.0.3", "WRITE_MIDDLE", 0x200, 7, bytes(64), ecn=3)
    rec = decode(f)
    cross_check(3, 100, f, rec, {"bth_psn": 7})
    bad = decode(f)
    bad.bth_psn = 8
    with pytest.raises(FilMismatch, match=r"frame 3 at 100 ns.*decode\(\) in \{'bth_psn'"):
        cross_check(3, 100, f, bad, None)
    with pytest.raises(FilMismatch, match=r"frame 4 .*p4sim's parser in \{'bth_dqpn'"):
        cross_check(4, 100, f, rec, {"bth_dqpn": 0x201})


def test_p4_parsed_fields_of_a_roce_frame() -> None:
    """p4sim's compiled parser on a frame gives the record's header fields (an
    independent parser: the P4 program's)."""
    sw = P4SimTarget(DEFAULT_PROGRAM, seed=1)._sw()
    f = roce_frame(
        "10.0.0.1",
        "10.0.0.3",
        "WRITE_FIRST",
        0x200,
        9,
        bytes(64),
        ecn=3,
        va=0x1234,
        rkey=77,
        dlen=4096,
    )
    got = p4_parsed(sw, f)
    want = decode(f).as_dict()
    assert {"eth_dst", "ip_src", "ecn", "udp_sport", "bth_dqpn", "bth_psn", "reth_va"} <= set(got)
    assert {k: want[k] for k in got} == got


@pytest.mark.slow
def test_fil_incast_icarus_ipv6_vlan_backpressure(tmp_path: Path) -> None:
    """Icarus (the IPv4 incast runs on Verilator above): the incast in IPv6 with every host's frames 802.1Q-tagged, and h3's RTL outputs
    stalling with random tready (seeded; the RTL clocked at 312.5 MHz, so that 60% ready
    still keeps up with the saturated 10 Gb/s link): every CNP equals the Python host's, frame for
    frame, for exactly the CE frames the Python NP answers; the loop closes."""
    _need("icarus")
    out = run_fil(
        "incast-dcqcn",
        tmp_path,
        sim="icarus",
        duration_us=60,
        ready=0.6,
        ipv6=True,
        vlan=100,
        clock_ps=3200,
    )
    _closed_loop(out)


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "names"), [("ROCE_NP_FAULT_PCP", "vlan_pcp")])
def test_fil_broken_np_ipv6_vlan(fault: str, names: str, tmp_path: Path) -> None:
    """Negative control: the tagged CNP without the CNP PCP stops the same run at the
    first CNP (ROCE_NP_FAULT_NH6 stops it too; the NP testbench's negative controls
    catch both at a fraction of the cost)."""
    _need("icarus")
    out = run_fil(
        "incast-dcqcn",
        tmp_path,
        sim="icarus",
        duration_us=25,
        ready=0.6,
        ipv6=True,
        vlan=100,
        clock_ps=3200,
        fault=fault,
    )
    assert out["error"] is not None and names in out["error"], out["error"]
    assert out["sim_run"].failed, "the cocotb test must fail on a mismatch"


def _pairs_in_order(out: dict) -> None:
    assert out["error"] is None, out["error"]
    st = out["stats"]
    assert st.mismatches == 0
    # every frame but the last few (handed to the loop within its sync window of the end,
    # or still in the parser) has its record checked
    assert st.records_checked >= st.frames_in - 3 and st.records_checked > 20, st
    assert st.p4_checked == st.records_checked


@pytest.mark.slow
def test_fil_records_pair_in_order_at_a_longer_latency(tmp_path: Path) -> None:
    """roce_parser built with ROCE_PARSER_SLOW_RECORD (each record 16 cycles later: latency
    19, records of several frames in flight at once): RtlPort still pairs every record
    with its frame, in order, and the loop runs clean."""
    _need("icarus")
    out = run_fil(
        "incast-dcqcn", tmp_path, sim="icarus", duration_us=25, fault="ROCE_PARSER_SLOW_RECORD"
    )
    _pairs_in_order(out)


@pytest.mark.slow
def test_fil_records_pair_across_idle_gaps(tmp_path: Path) -> None:
    """RtlPort keeps stepping while a record is in flight: at a 3.2 ns clock the frames
    reach h3 with idle cycles between them, so after a frame's last beat nothing else (no
    beat, no recent record or CNP) keeps the pump stepping, and at the slow build's latency
    (19) each record leaves well after its frame. Without that rule the pump sleeps until
    the next frame while the NP takes the record, and the first record is reported lost."""
    _need("icarus")
    out = run_fil(
        "incast-dcqcn",
        tmp_path,
        sim="icarus",
        duration_us=25,
        fault="ROCE_PARSER_SLOW_RECORD",
        clock_ps=3200,
    )
    _pairs_in_order(out)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "names"),
    [("ROCE_PARSER_FAULT_LOSE", "lost"), ("ROCE_PARSER_FAULT_DOUBLE", "offered twice")],
)
def test_fil_lost_or_doubled_record_stops_the_run(fault: str, names: str, tmp_path: Path) -> None:
    """Negative controls: a parser that loses every 8th record, or offers one twice, stops
    the loop with one line naming the record (RtlPort's pairing), not a field diff."""
    _need("icarus")
    out = run_fil("incast-dcqcn", tmp_path, sim="icarus", duration_us=25, fault=fault)
    assert out["error"] is not None and names in out["error"], out["error"]
    assert "RTL record of frame" in out["error"] and "\n" not in out["error"], out["error"]
    assert out["sim_run"].failed, "the cocotb test must fail on a lost or doubled record"
