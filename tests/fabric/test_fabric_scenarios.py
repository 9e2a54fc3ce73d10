"""Fabric scenarios: each verdict on its run and on a control that must fail it."""

from __future__ import annotations

import pytest

from controller.fabric.scenarios import (
    judge_deadlock,
    judge_spreading,
    judge_storm,
    judge_watchdog,
    run_deadlock,
    run_spreading,
    run_storm,
)

pytestmark = pytest.mark.slow


def _ok(verdicts) -> bool:
    return all(v.ok for v in verdicts)


@pytest.fixture(scope="module")
def deadlock():
    return {
        "cycle": run_deadlock(flows=4),
        "open": run_deadlock(flows=1, hosts=2),
        "wd": run_deadlock(flows=4, watchdog=1),
    }


def test_ring_deadlock_is_detected_and_names_the_cycle(deadlock):
    m = deadlock["cycle"]
    assert _ok(judge_deadlock(m)), judge_deadlock(m)
    # the four clockwise ring queues (port 2 = clockwise with one host per switch), class 3
    assert m["cycle"] == "r0:2:3 r1:2:3 r2:2:3 r3:2:3"
    assert m["goodput_gbps"] == 0.0


def test_open_chain_does_not_deadlock(deadlock):
    """Control: PFC pauses, but the channel dependencies have no cycle. Both of r0's hosts
    write to r2 (2:1 into r0's clockwise queue, so PFC acts); their data makes r0:cw wait on
    r1:cw, the ACKs from r2 make r2:cw wait on r3:cw, nothing closes the ring."""
    m = deadlock["open"]
    assert not _ok(judge_deadlock(m))
    assert m["deadlocked"] == 0 and m["frozen_queues"] == 0 and m["goodput_gbps"] > 5
    assert m["pfc_frames_sent"] > 0, "the control must exercise PFC, not just idle"


def test_acks_close_the_cycle_of_a_three_flow_chain():
    """Three data flows look open (r0 -> r1 -> r2 -> r3), but the ACKs of h1 -> h3 ride
    class 3 from r3 through r0's clockwise queue: r3:cw waits on r0:cw and the ring closes.
    With PFC on the egress queue's depth (p4src/README.md, "PFC generation") a port feeding
    even one ACK into a queue over XOFF is paused, so this deadlocks too (within 800 us here;
    an ASIC's ingress accounting would not pause r0 for a trickle of ACKs, which is why i16
    saw it flow on the old program)."""
    m = run_deadlock(flows=3, duration_us=800)
    assert _ok(judge_deadlock(m)), judge_deadlock(m)
    assert m["cycle"] == "r0:2:3 r1:2:3 r2:2:3 r3:2:3"


def test_watchdog_breaks_the_deadlock(deadlock):
    wd, no = deadlock["wd"], deadlock["cycle"]
    assert _ok(judge_watchdog(no, wd, "goodput_gbps")), judge_watchdog(no, wd, "goodput_gbps")
    assert wd["deadlocked"] == 0 and wd["pfcwd_detected"] >= 1 and wd["pfcwd_ignored_frames"] > 0
    # control: the verdict fails on the run without a watchdog
    assert not _ok(judge_watchdog(no, no, "goodput_gbps"))


@pytest.fixture(scope="module")
def storm():
    return {
        "calm": run_storm(stuck=0),
        "storm": run_storm(stuck=1),
        "wd": run_storm(stuck=1, watchdog=1),
    }


def test_pause_storm_spreads_beyond_the_leaf(storm):
    m, calm = storm["storm"], storm["calm"]
    assert _ok(judge_storm(m, calm)), judge_storm(m, calm)
    assert "leaf0" in m["paused_switch_names"] and "spine" in m["paused_switch_names"]
    assert not _ok(judge_storm(calm, calm))  # control: no stuck NIC, no storm


def test_watchdog_contains_the_storm(storm):
    wd, m = storm["wd"], storm["storm"]
    assert _ok(judge_watchdog(m, wd, "innocent_min_gbps")), judge_watchdog(
        m, wd, "innocent_min_gbps"
    )
    assert wd["pfcwd_in_storm"] >= 1 and wd["pfcwd_ignored_frames"] > 0
    assert not _ok(judge_watchdog(m, m, "innocent_min_gbps"))


@pytest.fixture(scope="module")
def spreading():
    return {
        "base": run_spreading(incast=0),
        "pfc": run_spreading(incast=1, dcqcn=0),
        "dc": run_spreading(incast=1, dcqcn=1),
    }


def test_congestion_spreading_and_dcqcn_recovery(spreading):
    b, p, d = spreading["base"], spreading["pfc"], spreading["dc"]
    vs = judge_spreading(b, p, d)
    assert _ok(vs), vs
    assert b["victim_gbps"] > 8.5  # alone, near the 10 Gb/s line rate
    assert p["leaf1_pauses"] > 0  # the victim's own leaf was paused from the spines
    # congestion spreading is not a deadlock: queues are paused, yet no frozen cycle
    assert p["paused_queues_now"] > 0 and p["deadlocked"] == 0
    assert d["victim_cnps"] >= 0


def test_spreading_verdicts_fail_on_controls(spreading):
    b, p, d = spreading["base"], spreading["pfc"], spreading["dc"]
    # no incast: nothing spreads and the victim does not lose
    assert not judge_spreading(b, b, d)[0].ok and not judge_spreading(b, b, d)[1].ok
    # PFC only in place of DCQCN: no recovery
    assert not judge_spreading(b, p, p)[2].ok and not judge_spreading(b, p, p)[3].ok


@pytest.fixture(scope="module")
def spray():
    from controller.fabric.scenarios import run_spray

    return {
        "ecmp": run_spray(spray=0),
        "spray": run_spray(spray=1),
        "spray_skew": run_spray(spray=1, skew_ns=3000),
        "ecmp_skew": run_spray(spray=0, skew_ns=3000),
        "sr_skew": run_spray(spray=1, skew_ns=3000, sr=1, reorder_psns=8),
        "irn_skew": run_spray(spray=1, skew_ns=3000, sr=1, reorder_psns=0),
    }


def test_ecmp_collision_spray_gain_and_go_back_n_naks(spray):
    from controller.fabric.scenarios import judge_spray

    e, s, ss, es = spray["ecmp"], spray["spray"], spray["spray_skew"], spray["ecmp_skew"]
    vs = judge_spray(e, s, ss, es)
    assert _ok(vs), vs
    assert s["goodput_gbps"] > 17  # two 10 Gb/s uplinks both used
    assert e["naks"] == 0 and es["naks"] == 0  # ECMP keeps a flow on one path: in order


def test_spray_verdicts_fail_on_controls(spray):
    from controller.fabric.scenarios import judge_spray

    e, s, ss, es = spray["ecmp"], spray["spray"], spray["spray_skew"], spray["ecmp_skew"]
    # sprayed flows in place of the ECMP run: no collision
    assert not judge_spray(s, s, ss, es)[0].ok
    # ECMP in place of the sprayed run: the spines are not balanced
    assert not judge_spray(e, e, ss, es)[1].ok
    # equal paths in place of the skewed spray: no spurious NAKs
    assert not judge_spray(e, s, s, es)[2].ok


def test_spray_with_selective_repeat_keeps_its_gain_on_unequal_paths(spray):
    from controller.fabric.scenarios import judge_spray_sr

    s, gbn, sr, irn = spray["spray"], spray["spray_skew"], spray["sr_skew"], spray["irn_skew"]
    vs = judge_spray_sr(s, gbn, sr)
    assert _ok(vs), vs
    assert sr["drops"] == 0 and gbn["drops"] == 0  # lossless: every NAK/resend is spurious
    assert gbn["naks"] > 0 and gbn["retransmitted"] > 0
    assert sr["retransmitted"] == 0 and sr["naks"] > 0  # NACKed, never taken for lost
    assert sr["goodput_gbps"] > 17
    # IRN's rule (no reordering window) resends packets still on the long path
    assert irn["retransmitted"] > 0 and irn["goodput_gbps"] < sr["goodput_gbps"]


def test_spray_sr_verdict_fails_on_controls(spray):
    from controller.fabric.scenarios import judge_spray_sr

    s, gbn, irn = spray["spray"], spray["spray_skew"], spray["irn_skew"]
    # go-back-N expected to reach selective repeat's goodput: it does not
    assert not _ok(judge_spray_sr(s, gbn, gbn))
    # selective repeat without a reordering window: far from equal-path spray
    assert not _ok(judge_spray_sr(s, gbn, irn))


def test_watchdog_restores_the_queue_after_the_storm_ends(storm):
    """The NIC recovers at 200 us (its last XOFF): restore_ns (200 us) after the last pause
    frame the queue honours pauses again; while the NIC stays stuck it never does."""
    m = run_storm(stuck=1, watchdog=1, stuck_until_us=200)
    assert m["pfcwd_detected"] == 1 and m["pfcwd_restored"] == 1 and m["pfcwd_in_storm"] == 0
    assert 150 <= m["wd_first_detect_us"] < 200  # paused from ~50 us, detect after 100 us
    # last XOFF sent just before 200 us, arrives 1 us later; restored on the first poll
    # (10 us) at least 200 us after it
    assert 380 <= m["wd_last_restore_us"] <= 420
    assert m["innocent_min_gbps"] > 9
    forever = storm["wd"]
    assert forever["pfcwd_restored"] == 0 and forever["pfcwd_in_storm"] == 1


def test_fabric_telemetry_carries_the_watchdog_counters():
    from controller.fabric.engine import Fabric
    from controller.fabric.scenarios import policy
    from controller.fabric.telemetry import fabric_telemetry
    from controller.fabric.topology import leaf_spine
    from controller.fabric.watchdog import PfcWatchdog

    fab = Fabric(leaf_spine(1, 2, 2), policy(), nic={"rp": False})
    wd = PfcWatchdog(fab, detect_ns=50_000, restore_ns=100_000)
    fab.add_flow("h1_0", "h0_0", 1 << 30)
    fab.stuck_nic("h0_0", 10_000)
    fab.run(150_000)
    tel = fabric_telemetry(fab, wd)
    row = next(r for r in tel["leaf0"]["per_port_class"] if r["port"] == 1 and r["class"] == 3)
    assert row["pfcwd_detected"] == 1 and row["pfcwd_ignored"] > 0
    assert row["roce_tx"] > 0  # the switch's own counters are there too
    others = [r for s in tel.values() for r in s["per_port_class"] if r is not row]
    assert all(r["pfcwd_detected"] == 0 for r in others)
    assert all(r["pfcwd_detected"] == 0 for r in fabric_telemetry(fab)["leaf0"]["per_port_class"])


def test_watchdog_drop_action_starves_only_the_stuck_port(storm):
    """Action drop: the frames the storm queue would send to the stuck NIC are discarded
    (forward delivers them); the innocent flows recover either way."""
    drop, fwd = run_storm(stuck=1, watchdog=2), storm["wd"]
    assert drop["pfcwd_detected"] == 1 and drop["pfcwd_dropped"] > 0
    assert drop["stuck_flow_gbps"] == 0.0 and fwd["stuck_flow_gbps"] > 5
    assert fwd["pfcwd_dropped"] == 0
    assert drop["innocent_min_gbps"] > 9
