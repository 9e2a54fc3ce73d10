"""Fabric scenarios: each is a function of flat parameters (sweepable) returning flat metrics,
and a judge that turns the metrics of a run and of its control into verdicts.

- spreading: incast behind leaf0 on the 2x4x4 leaf-spine; a victim flow h1_1 -> h2_1 that
  never touches leaf0 shares upstream ports with the incast. Params: incast (0/1),
  dcqcn (0/1: ECN marking at every queue + the NICs' RP; 0: PFC only).
- deadlock: a ring of 4 switches routed one way round (clockwise), each host writing to the
  host two hops on: a cyclic buffer dependency. Params: flows (h_i -> h_(i+2) for i < flows),
  hosts (per switch; each of r_i's hosts writes to the same-numbered host of r_(i+2)),
  watchdog (0 none, 1 forward, 2 drop). The ACKs ride class 3 clockwise round the rest of
  the ring, so flow i's data makes r_i:cw wait on r_(i+1):cw and its ACKs make r_(i+2):cw
  wait on r_(i+3):cw: any even flow with any odd one closes the cycle (flows >= 2 with
  hosts 1); flows=1 (only r0's hosts, hosts=2 for a 2:1 queue that PFC pauses) is open.
- storm: h0_0's NIC stuck sending XOFF from 50 us on; params: stuck (0/1), watchdog (0 none,
  1 action forward = ignore pause, 2 action drop).

Each run function takes `report` (a dict it fills with the fabric's telemetry) besides its
parameters. Durations are CI-sized (about a millisecond of virtual time at 10 Gb/s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from controller.hosts.dcqcn import DcqcnParams
from controller.targets.base import CounterQuery

from .engine import Fabric
from .params import PARAMS, bounds
from .telemetry import fabric_telemetry
from .topology import clockwise_edges, leaf_spine, ring
from .watchdog import FrozenQueues, PauseTracker, PfcWatchdog, deadlock_cycles

US = 1000


def policy(xoff: int = 32, xon: int = 16, buffer: int = 400, ecn: bool = False) -> dict:
    """The fabric-wide switch config (controller.config keys)."""
    p: dict = {
        "roce_mtu": 1024,
        "classes": {"dscp": {26: 3, 48: 6}},
        "pfc": {
            "classes": [3],
            "xoff": f"{xoff} pkts",
            "xon": f"{xon} pkts",
            "quanta": 65535,
            "refresh_us": 20,
            "headroom": "20KB",
        },
        "buffer": {"packets": buffer},
        "cnp": {"mode": "host", "class": 6, "dscp": 48, "interval_us": 50},
    }
    if ecn:
        p["ecn"] = {
            "profiles": {"dcqcn": {"kmin": "1 pkts", "kmax": "20KB", "pmax": 1.0}},
            "apply": [{"ports": "all", "class": 3, "profile": "dcqcn"}],
        }
    return p


def _telemetry(report: dict | None, fab: Fabric, wd: PfcWatchdog | None) -> None:
    """`report`, when given, gets the fabric's telemetry (every switch's counters per port
    and class, with the watchdog's): the scenario file's report shows it."""
    if report is not None:
        report["telemetry"] = fabric_telemetry(fab, wd)


def _gbps(nbytes: int, ns: int) -> float:
    return nbytes * 8 / ns if ns else 0.0


def _pauses(fab: Fabric, switches: list[str]) -> int:
    return sum(fab.targets[s].tm_stats()["pauses_total"] for s in switches)


def _pfc_sent(fab: Fabric) -> int:
    """PFC frames the switches sent (XOFF, refresh, XON), from roce_switch.p4's pfc_tx."""
    return sum(c.packets for t in fab.targets.values() for c in t.read(CounterQuery("pfc_tx")))


def run_spreading(
    incast: int = 1,
    dcqcn: int = 0,
    duration_us: int = 1000,
    seed: int = 0,
    report: dict | None = None,
) -> dict:
    fab = Fabric(
        leaf_spine(2, 4, 4),
        policy(ecn=bool(dcqcn)),
        seed=seed,
        nic={"rp": bool(dcqcn)},
        dcqcn=DcqcnParams(),
    )
    victim = fab.add_flow("h1_1", "h2_1", 1 << 30)
    if incast:
        for leaf in (1, 2, 3):
            for k in range(4):
                n = f"h{leaf}_{k}"
                if n not in ("h1_1", "h2_1"):
                    fab.add_flow(n, "h0_0", 1 << 30)
    dur = duration_us * US
    half = dur // 2
    spines = [s for s in fab.targets if s.startswith("spine")]
    tr = PauseTracker(fab)
    fab.run(half)
    v0 = fab.delivered(victim)
    p0 = _pauses(fab, spines)
    inc0 = sum(fab.delivered(f) for f in fab.flows[1:])
    fab.run(dur - 50 * US)
    fz = FrozenQueues(fab, tr)
    fz.mark()
    fab.run(dur)
    frozen = fz.frozen()
    _telemetry(report, fab, None)
    return {
        "deadlocked": int(bool(deadlock_cycles(fab, frozen))),
        "frozen_queues": len(frozen),
        "paused_queues_now": sum(1 for q in tr.paused_until if tr.paused(q)),
        "victim_gbps": _gbps(fab.delivered(victim) - v0, dur - half),
        "incast_gbps": _gbps(sum(fab.delivered(f) for f in fab.flows[1:]) - inc0, dur - half),
        "spine_pauses": _pauses(fab, spines),
        "spine_pauses_late": _pauses(fab, spines) - p0,
        "leaf1_pauses": _pauses(fab, ["leaf1"]),
        "victim_cnps": fab.hosts["h1_1"].rps[victim.qpn].cnps,
        "frames": fab.frames_to_switches,
    }


def run_deadlock(
    flows: int = 4,
    watchdog: int = 0,
    duration_us: int = 400,
    seed: int = 0,
    detect_us: int = 100,
    hosts: int = 1,
    report: dict | None = None,
) -> dict:
    if not 1 <= flows <= 4:
        raise ValueError("deadlock: flows must be 1..4")
    if not 1 <= hosts <= 2:
        raise ValueError("deadlock: hosts must be 1..2")
    topo = ring(4, hosts)
    fab = Fabric(
        topo,
        policy(xoff=8, xon=4, buffer=200),
        only=clockwise_edges(topo),
        seed=seed,
        nic={"rp": False},
    )
    tr = PauseTracker(fab)
    wd = (
        PfcWatchdog(
            fab,
            detect_ns=detect_us * US,
            restore_ns=2 * detect_us * US,
            tracker=tr,
            action="drop" if watchdog == 2 else "forward",
        )
        if watchdog
        else None
    )
    fl = [
        fab.add_flow(f"h{i}_{k}", f"h{(i + 2) % 4}_{k}", 1 << 30)
        for i in range(flows)
        for k in range(hosts)
    ]
    dur = duration_us * US
    window = 50 * US
    fab.run(dur - window)
    fz = FrozenQueues(fab, tr)
    fz.mark()
    d0 = sum(fab.delivered(f) for f in fl)
    fab.run(dur)
    frozen = fz.frozen()
    cycles = deadlock_cycles(fab, frozen)
    out = {
        "goodput_gbps": _gbps(sum(fab.delivered(f) for f in fl) - d0, window),
        "frozen_queues": len(frozen),
        "cycle": " ".join(f"{s}:{p}:{c}" for s, p, c in (cycles[0] if cycles else [])),
        "deadlocked": int(bool(cycles)),
        "pfc_frames_sent": _pfc_sent(fab),
        "frames": fab.frames_to_switches,
    }
    out.update(
        wd.counters()
        if wd
        else {
            "pfcwd_detected": 0,
            "pfcwd_restored": 0,
            "pfcwd_ignored_frames": 0,
            "pfcwd_in_storm": 0,
            "pfcwd_dropped": 0,
        }
    )
    _telemetry(report, fab, wd)
    return out


def run_storm(
    stuck: int = 1,
    watchdog: int = 0,
    duration_us: int = 600,
    seed: int = 0,
    detect_us: int = 100,
    stuck_until_us: int = 0,
    report: dict | None = None,
) -> dict:
    """stuck_until_us > 0: the NIC recovers then (its last XOFF), so a watchdog restores."""
    topo = leaf_spine(2, 4, 4)
    fab = Fabric(topo, policy(), seed=seed, nic={"rp": False})
    tr = PauseTracker(fab)
    wd = (
        PfcWatchdog(
            fab,
            detect_ns=detect_us * US,
            restore_ns=2 * detect_us * US,
            tracker=tr,
            action="drop" if watchdog == 2 else "forward",
        )
        if watchdog
        else None
    )
    to_stuck = fab.add_flow("h1_0", "h0_0", 1 << 30)  # toward the stuck NIC
    innocent = [
        fab.add_flow("h2_0", "h0_1", 1 << 30),  # same leaf as the stuck NIC
        fab.add_flow("h3_0", "h1_1", 1 << 30),  # never touches leaf0
        fab.add_flow("h2_2", "h3_2", 1 << 30),
    ]
    if stuck:
        fab.stuck_nic("h0_0", 50 * US, stop_ns=stuck_until_us * US if stuck_until_us > 0 else None)
    dur = duration_us * US
    half = dur // 2
    fab.run(half)
    d0 = [fab.delivered(f) for f in innocent]
    s0 = fab.delivered(to_stuck)
    fab.run(dur)
    paused_switches = sorted(s for s, t in fab.targets.items() if t.tm_stats()["pauses_total"])
    paused_hosts = sorted(n for n, h in fab.hosts.items() if h.stats.pfc_received)
    out = {
        f"innocent{i}_gbps": _gbps(fab.delivered(f) - a, dur - half)
        for i, (f, a) in enumerate(zip(innocent, d0, strict=True))
    }
    out["stuck_flow_gbps"] = _gbps(fab.delivered(to_stuck) - s0, dur - half)
    out["innocent_min_gbps"] = min(out[f"innocent{i}_gbps"] for i in range(len(innocent)))
    out.update(
        {
            "paused_switches": len(paused_switches),
            "paused_hosts": len(paused_hosts),
            "paused_switch_names": " ".join(paused_switches),
            "frames": fab.frames_to_switches,
        }
    )
    out.update(
        wd.counters()
        if wd
        else {
            "pfcwd_detected": 0,
            "pfcwd_restored": 0,
            "pfcwd_ignored_frames": 0,
            "pfcwd_in_storm": 0,
            "pfcwd_dropped": 0,
        }
    )
    ev = wd.events if wd else []
    out["wd_first_detect_us"] = next((t / US for t, k, _ in ev if k == "detected"), -1.0)
    out["wd_last_restore_us"] = next((t / US for t, k, _ in reversed(ev) if k == "restored"), -1.0)
    _telemetry(report, fab, wd)
    return out


def run_spray(
    flows: int = 3,
    spray: int = 0,
    skew_ns: int = 0,
    duration_us: int = 400,
    seed: int = 0,
    sr: int = 0,
    reorder_psns: int = 0,
    report: dict | None = None,
) -> dict:
    """`flows` WRITE QPs h0_k -> h1_k (leaf0 to leaf1, two spines), ECMP-hashed (spray=0) or
    sprayed per packet at leaf0 (spray=1); spine1's cables `skew_ns` longer than spine0's
    (unequal paths reorder a sprayed flow). The NICs' transport (rc.py): go-back-N (sr=0),
    or selective repeat (sr=1: the responder keeps what arrives beyond a hole, the requester
    resends only what it infers lost, once a NACK has passed it by more than `reorder_psns`
    PSNs). Reordering depth: sprayed round robin over two paths, a packet of the longer one
    arrives about skew / frame time PSNs late (3 us at 10 Gb/s, 1,106 B on the wire: 3 us /
    0.885 us = 3.4), so `reorder_psns` 8 covers it with room; 0 is IRN's rule (any NACK past
    it), which resends in-flight packets.
    In this lossless fabric (PFC, no drops: `drops`) every NAK and resend is spurious."""
    if not 1 <= flows <= 4:
        raise ValueError("spray: flows must be 1..4")
    if skew_ns < 0:
        raise ValueError("spray: skew_ns must be >= 0")
    d = 1000
    fab = Fabric(
        leaf_spine(2, 4, 4, spine_delay_ns=[d, d + skew_ns]),
        policy(),
        seed=seed,
        nic={"rp": False, "transport": "sr" if sr else "gbn"},
    )
    fl = [fab.add_flow(f"h0_{k}", f"h1_{k}", 1 << 30) for k in range(flows)]
    for f in fl:
        fab.hosts[f.src].qps[f.qpn].requester.reorder_psns = reorder_psns if sr else 0
    if spray:
        for f in fl:
            fab.spray(f, "leaf0")
    dur = duration_us * US
    warm = 100 * US
    fab.run(warm)
    d0 = [fab.delivered(f) for f in fl]
    s0 = {s: fab.targets[s].switch.stats["rx"] for s in ("spine0", "spine1")}
    fab.run(dur)
    per = [_gbps(fab.delivered(f) - a, dur - warm) for f, a in zip(fl, d0, strict=True)]
    s1 = {s: fab.targets[s].switch.stats["rx"] - s0[s] for s in s0}
    reqs = [fab.hosts[f.src].qps[f.qpn].requester.stats for f in fl]
    _telemetry(report, fab, None)
    return {
        "goodput_gbps": sum(per),
        "min_flow_gbps": min(per),
        "spine_share_max": max(s1.values()) / max(1, sum(s1.values())),
        "naks": sum(r.naks for r in reqs),
        "retransmitted": sum(r.retransmitted_packets for r in reqs),
        "drops": sum(t.tm_stats()["drops_total"] for t in fab.targets.values()),
        "frames": fab.frames_to_switches,
    }


@dataclass(frozen=True)
class FabricScenario:
    name: str
    run: Callable[..., dict]
    params: dict  # name -> default (int)

    def bounds(self, key: str) -> tuple[int, int]:
        """Allowed values of a parameter (a sweep refuses the others before running)."""
        return bounds(key)


_RUNS = {
    "spreading": run_spreading,
    "deadlock": run_deadlock,
    "spray": run_spray,
    "storm": run_storm,
}
SCENARIOS = {name: FabricScenario(name, _RUNS[name], dict(p)) for name, p in PARAMS.items()}


@dataclass
class Verdict:
    name: str
    ok: bool
    detail: str


def judge_spreading_pfc(base: dict, pfc: dict) -> list[Verdict]:
    """base: no incast; pfc: incast, PFC only. Pauses climb from the incast's leaf to the
    spines and the victim, which shares an upstream port, loses throughput."""
    return [
        Verdict(
            "pauses reach the spines",
            pfc["spine_pauses"] > 0 and base["spine_pauses"] == 0,
            f"spine pauses {pfc['spine_pauses']} with incast, {base['spine_pauses']} without",
        ),
        Verdict(
            "victim loses throughput under PFC",
            pfc["victim_gbps"] < 0.5 * base["victim_gbps"],
            f"victim {pfc['victim_gbps']:.2f} vs {base['victim_gbps']:.2f} Gb/s alone",
        ),
    ]


def judge_dcqcn(pfc: dict, dc: dict) -> list[Verdict]:
    """pfc: incast, PFC only; dc: the same with DCQCN (ECN marks, the senders' RP)."""
    return [
        Verdict(
            "DCQCN: victim recovers",
            dc["victim_gbps"] > 2 * pfc["victim_gbps"],
            f"victim {dc['victim_gbps']:.2f} with DCQCN vs {pfc['victim_gbps']:.2f} PFC only",
        ),
        Verdict(
            "DCQCN: spreading stops",
            dc["spine_pauses_late"] < 0.5 * pfc["spine_pauses_late"],
            f"spine pauses in the 2nd half {dc['spine_pauses_late']} vs {pfc['spine_pauses_late']}",
        ),
    ]


def judge_spreading(base: dict, pfc: dict, dc: dict) -> list[Verdict]:
    """base: no incast; pfc: incast, PFC only; dc: incast with DCQCN."""
    return judge_spreading_pfc(base, pfc) + judge_dcqcn(pfc, dc)


def judge_deadlock(m: dict) -> list[Verdict]:
    return [
        Verdict(
            "deadlock",
            m["deadlocked"] == 1 and m["goodput_gbps"] == 0.0 and m["frozen_queues"] >= 4,
            f"goodput {m['goodput_gbps']:.2f} Gb/s, frozen {m['frozen_queues']}, "
            f"cycle [{m['cycle']}]",
        )
    ]


def judge_storm(m: dict, control: dict) -> list[Verdict]:
    """m: a stuck NIC; control: the same traffic without it."""
    return [
        Verdict(
            "storm spreads",
            m["paused_switches"] >= 2
            and control["paused_switches"] == 0
            and m["innocent_min_gbps"] < 0.5 * control["innocent_min_gbps"],
            f"{m['paused_switches']} switches paused ({m['paused_switch_names']}), "
            f"slowest innocent flow {m['innocent_min_gbps']:.2f} vs "
            f"{control['innocent_min_gbps']:.2f} Gb/s",
        )
    ]


def judge_ecmp_collision(ecmp: dict, sprayed: dict) -> list[Verdict]:
    """Few flows hashed by ECMP land on one spine (a collision) and get about half of what
    the same flows sprayed over both spines get."""
    return [
        Verdict(
            "ECMP collision",
            ecmp["spine_share_max"] > 0.8 and ecmp["goodput_gbps"] < 0.6 * sprayed["goodput_gbps"],
            f"ECMP: {ecmp['spine_share_max']:.0%} of the spine frames on one spine, "
            f"{ecmp['goodput_gbps']:.2f} vs {sprayed['goodput_gbps']:.2f} Gb/s sprayed",
        )
    ]


def judge_spray_balance(sprayed: dict) -> list[Verdict]:
    """Per-packet spray on equal paths splits the frames evenly and reorders nothing."""
    return [
        Verdict(
            "spray balances the spines",
            sprayed["spine_share_max"] < 0.6 and sprayed["naks"] == 0,
            f"sprayed: {sprayed['spine_share_max']:.0%} on the busier spine, "
            f"{sprayed['naks']} NAKs on equal paths",
        )
    ]


def judge_spray_gbn(sprayed: dict, sprayed_skew: dict, ecmp_skew: dict) -> list[Verdict]:
    """Go-back-N NICs, spine1's path longer: spray reorders, each late packet is a spurious
    NAK and a resent tail; ECMP on the same paths keeps each flow in order."""
    return [
        Verdict(
            "spray + go-back-N: spurious NAKs on unequal paths",
            sprayed_skew["naks"] > 0
            and sprayed_skew["retransmitted"] > 0
            and ecmp_skew["naks"] == 0
            and sprayed_skew["goodput_gbps"] < 0.9 * sprayed["goodput_gbps"],
            f"skewed: {sprayed_skew['naks']} NAKs, {sprayed_skew['retransmitted']} "
            f"retransmitted, {sprayed_skew['goodput_gbps']:.2f} Gb/s (equal paths "
            f"{sprayed['goodput_gbps']:.2f}); ECMP on the same paths {ecmp_skew['naks']} NAKs",
        )
    ]


def judge_spray(ecmp: dict, sprayed: dict, sprayed_skew: dict, ecmp_skew: dict) -> list[Verdict]:
    """ECMP vs per-packet spray for the same flows on equal paths, then with spine1's path
    longer (go-back-N NICs)."""
    return (
        judge_ecmp_collision(ecmp, sprayed)
        + judge_spray_balance(sprayed)
        + judge_spray_gbn(sprayed, sprayed_skew, ecmp_skew)
    )


def judge_spray_sr(sprayed: dict, gbn_skew: dict, sr_skew: dict) -> list[Verdict]:
    """Spray on unequal paths with a reorder-tolerant receiver (selective repeat with a
    reordering window) against go-back-N on the same paths, both held to equal-path spray:
    the reordering costs selective repeat (almost) nothing and go-back-N most of its goodput."""
    return [
        Verdict(
            "spray + selective repeat tolerates reordering",
            sr_skew["goodput_gbps"] > 2 * gbn_skew["goodput_gbps"]
            and sr_skew["goodput_gbps"] >= 0.9 * sprayed["goodput_gbps"]
            and sr_skew["retransmitted"] < gbn_skew["retransmitted"],
            f"skewed paths: selective repeat {sr_skew['goodput_gbps']:.2f} Gb/s "
            f"({sr_skew['retransmitted']} resent, {sr_skew['naks']} NACKs), go-back-N "
            f"{gbn_skew['goodput_gbps']:.2f} Gb/s ({gbn_skew['retransmitted']} resent, "
            f"{gbn_skew['naks']} NAKs); equal-path spray {sprayed['goodput_gbps']:.2f}",
        )
    ]


def judge_watchdog(without: dict, with_wd: dict, key: str) -> list[Verdict]:
    """The watchdog trips and the metric `key` (0 when frozen) comes back."""
    return [
        Verdict(
            "watchdog breaks it",
            with_wd["pfcwd_detected"] > 0
            and with_wd[key] > 4.5
            and with_wd[key] > 4 * max(without[key], 0.1),
            f"{key} {with_wd[key]:.2f} with the watchdog vs {without[key]:.2f}; "
            f"detected {with_wd['pfcwd_detected']}, "
            f"ignored {with_wd['pfcwd_ignored_frames']} pause frames",
        )
    ]
