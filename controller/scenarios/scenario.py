"""Declarative scenarios: a YAML file describes the switch config, the hosts' NICs, the
flows and what the physics must show; `run_scenario` runs it on a target in virtual time.

Scenario keys:
    name, title
    duration_us, warmup_us (the measurement window is [warmup, duration]), seed
    link: {speed: 10G, prop_ns: 1000}          # every host link
    nic: {window: 256, timeout_us: 1000, ack_every: 16, rp: true}
    dcqcn: {g: 0.0039, rate_ai_bps: 40e6, ...}  # controller.hosts.dcqcn.DcqcnParams fields
    switch: {...}                               # the switch config (controller.config schema)
    flows: [{src: h1, dst: h3, op: WRITE, bytes: 1GB, message: 1MB, start_us: 0}]
    watch: {port: 3, class: 3}                  # the bottleneck queue to sample and judge
    sample_us: 5
    sweep: {drop_rate: [0, 0.0001, 0.001, 0.01]}  # run once per value (lossy)
    expect: {fair_share: 0.1, queue_in_band: true, zero_drops: true, min_pauses: 1,
             goodput_monotone: true, collapse_below: 0.8, cnp_interval_us: 50}
"""

from __future__ import annotations

import copy
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config import (
    Config,
    ConfigError,
    apply_config,
    check,
    load_yaml,
    parse_config,
    parse_size,
    parse_speed,
)
from controller.hosts.dcqcn import DcqcnParams
from controller.hosts.host import Host, HostSpec
from controller.targets.base import Target
from controller.telemetry import Telemetry, from_counters
from controller.telemetry import read as read_telemetry

from .engine import Engine, Progress

SCENARIO_DIR = Path(__file__).resolve().parent
QPN_SRC_BASE = 0x100
QPN_DST_BASE = 0x200


def list_scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


def load_scenario(name_or_path: str) -> dict:
    p = Path(name_or_path)
    if not p.suffix:
        p = SCENARIO_DIR / f"{name_or_path}.yaml"
    if not p.is_file():
        raise FileNotFoundError(f"no scenario {name_or_path!r} (known: {', '.join(list_scenarios())})")
    data = load_yaml(p)  # YAML errors carry file:line:column
    if not isinstance(data, dict):
        raise ConfigError(str(p), "a scenario must be a YAML mapping")
    data.setdefault("name", p.stem)
    data["_path"] = str(p)
    return data


@dataclass
class FlowResult:
    name: str
    src: str
    dst: str
    qpn: int
    goodput_bps: float = 0.0  # in-order payload delivered in the window
    sent_bytes: int = 0
    retransmitted: int = 0
    naks: int = 0
    timeouts: int = 0
    cnps: int = 0
    ce: int = 0
    final_rate_bps: float = 0.0
    cnp_times: list[int] = field(default_factory=list)


@dataclass
class RunResult:
    scenario: str
    seed: int
    label: str  # sweep point, or ""
    duration_ns: int
    warmup_ns: int
    flows: list[FlowResult]
    series: dict[str, Any]  # time series for the plots
    counters: dict[str, int]
    queue: dict[str, float]
    dcqcn: DcqcnParams
    captures: dict[int, list[tuple[int, bytes]]]
    wall_s: float = 0.0
    line_bps: float = 10e9
    sweep_value: float | None = None
    notes: list[str] = field(default_factory=list)
    telemetry: Telemetry | None = None  # the switch's counters per port and class


@dataclass
class Verdict:
    name: str
    ok: bool
    detail: str


@dataclass
class ScenarioResult:
    scenario: dict
    runs: list[RunResult]
    verdicts: list[Verdict]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)


def _switch_config(sc: dict, flows: list[dict], sweep_value: float | None) -> tuple[Config, list]:
    raw = copy.deepcopy(sc.get("switch") or {})
    hosts = raw.setdefault("hosts", {})
    for h in hosts.values():
        h.setdefault("qps", [])
    for f in flows:
        hosts[f["src"]]["qps"].append({"qpn": f["qpn"], "peer": f["dst"], "peer_qpn": f["peer_qpn"]})
        hosts[f["dst"]]["qps"].append({"qpn": f["peer_qpn"], "peer": f["src"], "peer_qpn": f["qpn"]})
    if sweep_value is not None and "drop_rate" in (sc.get("sweep") or {}):
        faults = raw.setdefault("faults", [])
        if sweep_value > 0:
            n = max(1, round(1 / sweep_value))
            for f in flows:
                faults.append({"kind": "every_nth", "host": f["dst"], "qpn": f["peer_qpn"], "n": n})
    cfg, errors = parse_config(raw, f"{sc['_path']}:switch")
    return cfg, errors


def _flows(sc: dict) -> list[dict]:
    out = []
    for i, f in enumerate(sc.get("flows") or []):
        f = dict(f)
        f.setdefault("name", f"{f['src']}->{f['dst']}")
        f["qpn"] = int(f.get("qpn", QPN_SRC_BASE + i))
        f["peer_qpn"] = int(f.get("peer_qpn", QPN_DST_BASE + i))
        out.append(f)
    return out


def run_once(sc: dict, target: Target, seed: int, sweep_value: float | None = None,
             duration_us: float | None = None, progress: bool = True,
             nic_hook: Callable[[Engine, dict[str, Host]], None] | None = None) -> RunResult:
    """One run. `nic_hook(engine, hosts)`, called once the hosts and QPs are set up,
    may replace a host's NIC receive path (controller.fil: RTL or a real port)."""
    import time as _time

    wall0 = _time.perf_counter()
    flows = _flows(sc)
    cfg, errors = _switch_config(sc, flows, sweep_value)
    findings = [f for f in check(cfg, errors) if f.level == "error"]
    if findings:
        raise ConfigError(findings[0].key, findings[0].message)
    link = sc.get("link") or {}
    speed = parse_speed(link.get("speed", "10G"), "link.speed")
    prop = int(link.get("prop_ns", 1000))
    nic = sc.get("nic") or {}
    dcqcn = DcqcnParams(**(sc.get("dcqcn") or {}))
    dcqcn.validate()
    dur_ns = int((duration_us if duration_us is not None else sc.get("duration_us", 2000)) * 1000)
    warm_ns = int(min(sc.get("warmup_us", 0) * 1000, dur_ns // 2))
    sample_ns = int(sc.get("sample_us", 5) * 1000)

    comp = apply_config(cfg, target)
    eng = Engine(target)
    t0 = eng.now()

    # hosts
    hosts: dict[str, Host] = {}
    series: dict[str, Any] = {"t": [], "queue": [], "rate": {}, "tx": {}, "goodput": {},
                              "ce": [], "pfc": [], "paused": {}}

    def on_tx(host: str, qpn: int, t: int, nbytes: int, rate: float) -> None:
        key = f"{host}:{qpn:#x}"
        series["rate"].setdefault(key, []).append((t - t0, rate))

    for name, h in cfg.hosts.items():
        spec = HostSpec(
            name, h.mac, h.ip, h.port, link_bps=speed, prop_ns=prop, mtu=cfg.roce_mtu,
            dscp=int(nic.get("dscp", 26)), pcp=3, cnp_dscp=cfg.cnp_dscp, cnp_pcp=cfg.cnp_class,
            data_priority=int(nic.get("priority", 3)),
            np_enabled=(cfg.cnp_mode == "host") and bool(nic.get("np", True)),
            rp_enabled=bool(nic.get("rp", True)), window=int(nic.get("window", 256)),
            timeout_ns=int(float(nic.get("timeout_us", 1000)) * 1000),
            ack_every=int(nic.get("ack_every", 16)),
            gateway_mac=cfg.router_mac if cfg.routing == "l3" else None)
        host = Host(spec, eng, dcqcn, on_tx)
        hosts[name] = host
        eng.attach(host, h.port, prop)
    for m in cfg.mirror:
        eng.capture(int(m["port"]))
    flow_objs = []
    for f in flows:
        src, dst = hosts[f["src"]], hosts[f["dst"]]
        src.add_qp(f["qpn"], f["peer_qpn"], dst.spec.ip, dst.spec.mac)
        dst.add_qp(f["peer_qpn"], f["qpn"], src.spec.ip, src.spec.mac)
        total = parse_size(f.get("bytes", "1GB"), "flows.bytes").to_bytes(cfg.frame_bytes)
        msg = parse_size(f.get("message", "1MB"), "flows.message").to_bytes(cfg.frame_bytes)
        op = str(f.get("op", "WRITE")).upper()
        start = t0 + int(float(f.get("start_us", 0)) * 1000)

        def post(src=src, qpn=f["qpn"], op=op, total=total, msg=msg) -> None:
            left = total
            while left > 0:
                n = min(msg, left)
                src.qps[qpn].requester.post(op, n, eng.now())
                left -= n
            src.kick()

        eng.at(start, post)
        flow_objs.append((f, src, dst))

    if nic_hook is not None:
        nic_hook(eng, hosts)
    watch = sc.get("watch") or {}
    wport, wclass = watch.get("port"), int(watch.get("class", 3))
    last_good = {f["name"]: 0 for f in flows}
    last_ce = [0]
    last_pfc = [0]

    def sample() -> None:
        t = eng.now() - t0
        series["t"].append(t)
        depth = target.queue_depth(wport, wclass) if wport is not None else None
        series["queue"].append(depth if depth is not None else 0)
        for f, src, dst in flow_objs:
            got = delivered(f, src, dst)
            series["goodput"].setdefault(f["name"], []).append(
                (got - last_good[f["name"]]) * 8e9 / sample_ns)
            last_good[f["name"]] = got
            rp = src.rps[f["qpn"]]
            series["tx"].setdefault(f["name"], []).append(rp.rc)
            series["paused"].setdefault(f["name"], []).append(int(src.is_paused(3)))
        ce = sum(h.stats.ce_received for h in hosts.values())
        series["ce"].append(ce - last_ce[0])
        last_ce[0] = ce
        pfc = sum(h.stats.pfc_received for h in hosts.values())
        series["pfc"].append(pfc - last_pfc[0])
        last_pfc[0] = pfc
        if eng.now() + sample_ns <= t0 + dur_ns:
            eng.at(eng.now() + sample_ns, sample)

    eng.at(t0 + sample_ns, sample)
    good_at_warm: dict[str, int] = {}

    def mark_warm() -> None:
        for f, _src, dst in flow_objs:
            good_at_warm[f["name"]] = delivered(f, _src, dst)

    eng.at(t0 + warm_ns, mark_warm)
    label = sc["name"] + (f" drop={sweep_value:g}" if sweep_value is not None else "")
    prog = Progress(dur_ns, label, enabled=progress)
    eng.run(t0 + dur_ns, prog)
    prog.done()

    window_s = (dur_ns - warm_ns) / 1e9
    results = []
    for f, src, dst in flow_objs:
        qp = src.qps[f["qpn"]]
        got = delivered(f, src, dst) - good_at_warm.get(f["name"], 0)
        st = qp.requester.stats
        results.append(FlowResult(
            f["name"], f["src"], f["dst"], f["qpn"], got * 8 / window_s if window_s else 0.0,
            st.bytes_sent, st.retransmitted_packets, st.naks, st.timeouts,
            src.rps[f["qpn"]].cnps, dst.qps[f["peer_qpn"]].responder.stats.ce_marked,
            src.rps[f["qpn"]].rc, list(src.rps[f["qpn"]].cnp_times)))
    counters, telemetry = _switch_counters(target, hosts, eng, sorted(cfg.ports), comp.notes)
    qs = [d for t, d in zip(series["t"], series["queue"], strict=True) if t >= warm_ns]
    queue = {}
    if qs:
        srt = sorted(qs)
        queue = {"mean": sum(qs) / len(qs), "min": srt[0], "max": srt[-1],
                 "p10": srt[len(srt) // 10], "p50": srt[len(srt) // 2],
                 "p90": srt[min(len(srt) - 1, (len(srt) * 9) // 10)]}
    prof = next(iter(cfg.ecn_profiles.values()), None)
    if prof is not None:
        queue["kmin"] = prof.kmin.to_packets(cfg.frame_bytes)
        queue["kmax"] = prof.kmax.to_packets(cfg.frame_bytes)
    queue["frame_bytes"] = cfg.frame_bytes
    if wport is not None:  # which queue was sampled (plots say so)
        queue["port"], queue["class"] = wport, wclass
    return RunResult(sc["name"], seed, label, dur_ns, warm_ns, results, series, counters, queue,
                     dcqcn, {p: c.frames for p, c in eng.captures.items()},
                     _time.perf_counter() - wall0, speed, sweep_value, comp.notes, telemetry)


def delivered(f: dict, src: Host, dst: Host) -> int:
    """Payload bytes delivered in order so far: at the responder for SEND/WRITE, back at
    the requester for READ (its responses carry the data)."""
    if str(f.get("op", "WRITE")).upper() == "READ":
        return src.qps[f["qpn"]].requester.stats.acked_bytes
    return dst.qps[f["peer_qpn"]].responder.stats.bytes_received


def _switch_counters(target: Target, hosts: dict[str, Host], eng: Engine, ports: list[int],
                     notes: list[str]) -> tuple[dict[str, int], Telemetry | None]:
    """Totals from the program's telemetry counters (the configured ports' cells), the TM
    and the hosts."""
    out: dict[str, int] = {}
    try:
        cnt = read_telemetry(target, ports)
    except Exception as exc:  # counters are a report, not the run: flag them (checks fail)
        out["counters_unavailable"] = 1
        notes.append(f"switch counters could not be read: {type(exc).__name__}: {exc}")
        cnt = {}
    for name, cells in cnt.items():
        short = name.rsplit(".", 1)[-1]
        if short == "drops":
            # consumed MAC-control frames are not losses
            out["switch_drops"] = sum(p for i, (p, _b) in enumerate(cells) if i % 16 != 7)
            out["mac_control_consumed"] = sum(p for i, (p, _b) in enumerate(cells) if i % 16 == 7)
        else:
            out[short] = sum(p for p, _b in cells)
    tm = target.tm_stats() or {}
    out["tm_drops"] = int(_sum_drops(tm))
    out["host_pfc_rx"] = sum(h.stats.pfc_received for h in hosts.values())
    out["host_cnps_sent"] = sum(h.stats.cnps_sent for h in hosts.values())
    out["host_cnps_rx"] = sum(h.stats.cnps_received for h in hosts.values())
    out["host_ce_rx"] = sum(h.stats.ce_received for h in hosts.values())
    out["switch_frames_in"] = eng.switch_rx
    out["switch_frames_out"] = eng.switch_tx
    return out, (from_counters(cnt) if cnt else None)


def _sum_drops(stats: dict) -> int:
    total = 0
    for k, v in stats.items():
        if "drop" in str(k):
            if isinstance(v, int | float):
                total += int(v)
            elif isinstance(v, dict):
                total += sum(int(x) for x in v.values() if isinstance(x, int | float))
    return total


# ------------------------------------------------------------------ physics


def judge(sc: dict, runs: list[RunResult]) -> list[Verdict]:
    exp = sc.get("expect") or {}
    out: list[Verdict] = []
    first = runs[0]
    if "fair_share" in exp:
        tol = float(exp["fair_share"])
        goods = [f.goodput_bps for f in first.flows]
        mean = sum(goods) / len(goods)
        worst = max(abs(g - mean) / mean for g in goods) if mean else math.inf
        out.append(Verdict("fair share", worst <= tol,
                           f"flows {', '.join(f'{g / 1e9:.2f}' for g in goods)} Gb/s; worst "
                           f"{worst * 100:.1f}% from the mean (limit {tol * 100:.0f}%)"))
    if exp.get("queue_in_band"):
        # Held near Kmin..Kmax: the control works in the marking band, i.e. the queue
        # regularly reaches Kmin (p90 >= Kmin) and rarely exceeds Kmax (p90 <= Kmax).
        q = first.queue
        lo, hi = q.get("kmin", 0), q.get("kmax", math.inf)
        ok = lo <= q.get("p90", -1) <= hi
        out.append(Verdict("queue held near Kmin..Kmax", ok,
                           f"median {q.get('p50', 0):.0f}, mean {q.get('mean', 0):.1f}, "
                           f"10-90% {q.get('p10', 0):.0f}..{q.get('p90', 0):.0f} pkts; "
                           f"Kmin..Kmax = {lo}..{hi} pkts"))
    if "utilization" in exp:
        # payload goodput vs what the bottleneck can carry (MTU-sized frames + overheads)
        mtu = first.queue.get("frame_bytes", 1098) - 74
        # a middle packet: 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + payload + 4 ICRC,
        # plus 24 B of preamble, FCS and inter-frame gap on the wire
        cap = float(first.line_bps) * mtu / (mtu + 58 + 24)
        tot = sum(f.goodput_bps for f in first.flows)
        need = float(exp["utilization"])
        out.append(Verdict("bottleneck utilized", tot >= need * cap,
                           f"{tot / 1e9:.2f} Gb/s of {cap / 1e9:.2f} Gb/s payload capacity "
                           f"({tot / cap * 100:.0f}%, limit {need * 100:.0f}%)"))
    if exp.get("zero_drops"):
        for r in runs:
            d = r.counters.get("switch_drops", 0) + r.counters.get("tm_drops", 0)
            # unread pipeline counters are not zero drops: the check cannot pass blind
            blind = bool(r.counters.get("counters_unavailable"))
            out.append(Verdict(f"zero drops{' ' + r.label if len(runs) > 1 else ''}",
                               d == 0 and not blind,
                               f"{r.counters.get('tm_drops', 0)} queue drops, "
                               + ("pipeline drop counters could not be read" if blind else
                                  f"{r.counters.get('switch_drops', 0)} pipeline drops")))
    # at least N of a switch counter; the hosts' side of it shown next to it
    for key, title, counter, what, host_counter, host_what in (
            ("min_pauses", "PFC pauses sent", "pfc_tx", "PFC frames from the switch",
             "host_pfc_rx", "received by hosts"),
            ("min_switch_cnps", "switch NP emulation", "cnp_tx", "CNPs generated by the switch",
             "host_cnps_sent", "by hosts")):
        if key in exp:
            n = first.counters.get(counter, 0)
            out.append(Verdict(title, n >= int(exp[key]), f"{n} {what}, "
                               f"{first.counters.get(host_counter, 0)} {host_what}"))
    if exp.get("goodput_monotone"):
        pts = sorted(((r.sweep_value or 0.0), sum(f.goodput_bps for f in r.flows)) for r in runs)
        # one point shows no trend: it must not pass as "monotone"
        mono = len(pts) >= 2 and all(b[1] <= a[1] * 1.005 for a, b in zip(pts, pts[1:], strict=False))
        out.append(Verdict("goodput falls as drops rise", mono,
                           "; ".join(f"{v:g}: {g / 1e9:.2f} Gb/s" for v, g in pts)))
        if "collapse_below" in exp and len(pts) > 1 and pts[0][1] > 0:
            frac = pts[-1][1] / pts[0][1]
            out.append(Verdict("go-back-N collapse", frac < float(exp["collapse_below"]),
                               f"at drop rate {pts[-1][0]:g} goodput is {frac * 100:.0f}% of "
                               f"lossless (limit {float(exp['collapse_below']) * 100:.0f}%)"))
    if "cnp_interval_us" in exp:
        iv = float(exp["cnp_interval_us"]) * 1000
        window = first.duration_ns
        worst = 0
        for f in first.flows:
            bound = math.floor(window / iv) + 1
            worst = max(worst, f.cnps - bound)
        total = sum(f.cnps for f in first.flows)
        gen = first.counters.get("cnp_tx", 0)
        # the count bound misses bursts (two CNPs 1 us apart, then silence): also check the
        # spacing of arrivals, allowing 5% for queueing jitter on the way back
        gaps = [b - a for f in first.flows for a, b in zip(f.cnp_times, f.cnp_times[1:], strict=False)]
        min_gap = min(gaps) if gaps else math.inf
        spaced = min_gap >= 0.95 * iv
        gap_txt = f"closest two {min_gap / 1000:.1f} us apart" if gaps else "no two CNPs in one flow"
        out.append(Verdict("CNP rate bound", total > 0 and worst <= 0 and spaced,
                           f"{total} CNPs received ({gen} generated by the switch), at most "
                           f"1 per flow per {iv / 1000:g} us ({math.floor(window / iv) + 1} per flow); "
                           f"{gap_txt}"))
    return out


def run_scenario(sc: dict, target_factory, seed: int | None = None,
                 duration_us: float | None = None, progress: bool = True) -> ScenarioResult:
    """Run every point of the scenario (a fresh target per point) and judge the physics."""
    seed = int(sc.get("seed", 1) if seed is None else seed)
    points = (sc.get("sweep") or {}).get("drop_rate")
    runs = []
    for value in (points if points else [None]):
        target = target_factory(seed)
        try:
            runs.append(run_once(sc, target, seed, value, duration_us, progress))
        finally:
            target.close()
    return ScenarioResult(sc, runs, judge(sc, runs))


def reproduce_command(sc: dict, seed: int, duration_us: float | None = None) -> str:
    cmd = ["rocelab", "run", sc["name"] if Path(sc["_path"]).parent == SCENARIO_DIR else sc["_path"],
           "--seed", str(seed)]
    if duration_us is not None:
        cmd += ["--duration-us", f"{duration_us:g}"]
    return shlex.join(cmd)
