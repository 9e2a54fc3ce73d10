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
    expect_fail: {zero_drops: true}             # a negative control: these checks must fail
    extends: incast-dcqcn                       # start from a shipped scenario, override keys
                                                # (mappings merge, null deletes a key)
    capture: {ports: [3], snaplen: 0, cpu: true}  # wire taps (both directions), 0 = full
                                                # frames; cpu: also the CPU port's PacketIns

Another kind of scenario file holds its kind's key (kinds.py): a fabric scenario file has
`fabric: {scenario: storm, runs: {LABEL: {PARAM: int}}}` in place of link/nic/switch/flows
(controller/fabric/runner.py validates and runs it; its checks are `fabric_*`).

The keys, their types and ranges are checked by `schema.validate`; the checks `expect:`
names are the registered functions of `checks.py`.

Interface for other drivers (the FPGA-in-the-loop co-simulation): `load_scenario` gives the
validated dict; `run_once(sc, target, seed)` needs only a `Target` with virtual time (the
Engine drives it by `send`/`advance`/`receive`), builds the hosts from `sc` and returns a
`RunResult`; `judge(sc, runs)` turns results into verdicts. Hosts attach to switch ports
through `Engine.attach(host, port, prop_ns)`: a port is the whole boundary.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.config import (
    Config,
    apply_config,
    check,
    load_yaml,
    parse_config,
    parse_size,
    parse_speed,
)
from controller.hosts.dcqcn import DcqcnParams
from controller.inputs import read_text
from controller.targets.base import Target

from . import schema
from .checks import judge as judge
from .checks import payload_capacity_bps
from .kinds import kind_of
from .results import FlowResult, RunResult, ScenarioResult

if TYPE_CHECKING:  # the host models (and scapy under them) load when a run starts, so a
    # bad scenario is refused before that import
    from controller.hosts.host import Host
    from controller.telemetry import Telemetry

    from .engine import Engine

SCENARIO_DIR = Path(__file__).resolve().parent
QPN_SRC_BASE = 0x100
QPN_DST_BASE = 0x200


def list_scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


def _merge(base: dict, over: dict) -> dict:
    """`over` on top of `base`: mappings merge key by key, a null deletes, the rest replaces."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _read(p: Path, depth: int = 0) -> tuple[dict, dict[str, int]]:
    data = load_yaml(p)  # YAML errors carry file:line:column
    if not isinstance(data, dict):
        raise schema.ScenarioError(str(p), "a scenario must be a YAML mapping")
    lines = schema.key_lines(read_text(p))  # bounded as load_yaml's read
    base = data.get("extends")
    if base is not None:
        # only shipped scenarios by name: `extends` never reads an arbitrary file
        if not isinstance(base, str) or base not in list_scenarios():
            raise schema.ScenarioError(
                f"{p}: extends",
                f"{base!r} is not a shipped scenario (known: {', '.join(list_scenarios())})",
            )
        if depth >= 4:
            raise schema.ScenarioError(f"{p}: extends", "more than 4 levels of extends (a loop?)")
        parent, _ = _read(SCENARIO_DIR / f"{base}.yaml", depth + 1)
        parent.pop("name", None)
        parent.pop("title", None)
        data = _merge(parent, {k: v for k, v in data.items() if k != "extends"}) | {"extends": base}
    return data, lines


def load_scenario(name_or_path: str) -> dict:
    """A shipped scenario by name or a YAML file, `extends` resolved, validated by the
    schema (ScenarioError names the bad key)."""
    p = Path(name_or_path)
    if not p.suffix:
        p = SCENARIO_DIR / f"{name_or_path}.yaml"
    if not p.is_file():
        raise FileNotFoundError(
            f"no scenario {name_or_path!r} (known: {', '.join(list_scenarios())})"
        )
    data, lines = _read(p)
    data.setdefault("name", p.stem)
    data["_path"] = str(p)
    schema.validate(data, lines)
    if kind_of(data) is None:  # another kind's switches (a fabric's) are its own business
        check_switch(data)
    return data


def check_switch(sc: dict) -> None:
    """The switch block through the config parser and its checks, with the flows' QPs."""
    cfg, errors = _switch_config(sc, _flows(sc), None)
    findings = [f for f in check(cfg, errors) if f.level == "error"]
    if findings:
        raise schema.ScenarioError(findings[0].key, findings[0].message)


def _switch_config(sc: dict, flows: list[dict], sweep_value: float | None) -> tuple[Config, list]:
    raw = copy.deepcopy(sc.get("switch") or {})
    hosts = raw.setdefault("hosts", {})
    for h in hosts.values():
        h.setdefault("qps", [])
    for f in flows:
        hosts[f["src"]]["qps"].append(
            {"qpn": f["qpn"], "peer": f["dst"], "peer_qpn": f["peer_qpn"]}
        )
        hosts[f["dst"]]["qps"].append(
            {"qpn": f["peer_qpn"], "peer": f["src"], "peer_qpn": f["qpn"]}
        )
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


def run_once(
    sc: dict,
    target: Target,
    seed: int,
    sweep_value: float | None = None,
    duration_us: float | None = None,
    progress: bool = True,
    nic_hook: Callable[[Engine, dict[str, Host]], None] | None = None,
) -> RunResult:
    """One run. `nic_hook(engine, hosts)`, called once the hosts and QPs are set up,
    may replace a host's NIC receive path (controller.fil: RTL or a real port)."""
    import time as _time

    from controller.hosts.host import Host, HostSpec

    from .engine import Engine, Progress

    wall0 = _time.perf_counter()
    schema.validate(sc, duration_us=duration_us)
    flows = _flows(sc)
    cfg, errors = _switch_config(sc, flows, sweep_value)
    findings = [f for f in check(cfg, errors) if f.level == "error"]
    if findings:
        raise schema.ScenarioError(findings[0].key, findings[0].message)
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
    series: dict[str, Any] = {
        "t": [],
        "queue": [],
        "rate": {},
        "tx": {},
        "goodput": {},
        "ce": [],
        "pfc": [],
        "paused": {},
        "cnp": {},
        "retx": {},
        "naks": {},
    }

    def on_tx(host: str, qpn: int, t: int, nbytes: int, rate: float) -> None:
        key = f"{host}:{qpn:#x}"
        series["rate"].setdefault(key, []).append((t - t0, rate))

    for name, h in cfg.hosts.items():
        spec = HostSpec(
            name,
            h.mac,
            h.ip,
            h.port,
            link_bps=speed,
            prop_ns=prop,
            mtu=cfg.roce_mtu,
            dscp=int(nic.get("dscp", 26)),
            pcp=3,
            cnp_dscp=cfg.cnp_dscp,
            cnp_pcp=cfg.cnp_class,
            data_priority=int(nic.get("priority", 3)),
            np_enabled=(cfg.cnp_mode == "host") and bool(nic.get("np", True)),
            rp_enabled=bool(nic.get("rp", True)),
            window=int(nic.get("window", 256)),
            timeout_ns=int(float(nic.get("timeout_us", 1000)) * 1000),
            ack_every=int(nic.get("ack_every", 16)),
            gateway_mac=cfg.router_mac if cfg.routing == "l3" else None,
        )
        host = Host(spec, eng, dcqcn, on_tx)
        hosts[name] = host
        eng.attach(host, h.port, prop)
    for m in cfg.mirror:
        eng.capture(int(m["port"]))
    watch = sc.get("watch") or {}
    cap = sc.get("capture") or {}
    tap_ports = cap.get("ports", [watch["port"]] if "port" in watch else [])
    for port in tap_ports:
        eng.tap(int(port))
    cpu = getattr(target, "cpu_port", None)
    if cap.get("cpu", True) and cpu is not None:  # whatever the program sends to the CPU
        eng.tap_cpu(int(cpu))
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
    wport, wclass = watch.get("port"), int(watch.get("class", 3))
    last_good = {f["name"]: 0 for f in flows}
    last_flow: dict[tuple[str, str], int] = {}

    def delta(kind: str, name: str, value: int) -> int:
        d = value - last_flow.get((kind, name), 0)
        last_flow[(kind, name)] = value
        return d

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
                (got - last_good[f["name"]]) * 8e9 / sample_ns
            )
            last_good[f["name"]] = got
            rp = src.rps[f["qpn"]]
            series["tx"].setdefault(f["name"], []).append(rp.rc)
            series["paused"].setdefault(f["name"], []).append(int(src.is_paused(3)))
            st = src.qps[f["qpn"]].requester.stats
            for kind, value in (
                ("cnp", rp.cnps),
                ("retx", st.retransmitted_packets),
                ("naks", st.naks),
            ):
                series[kind].setdefault(f["name"], []).append(delta(kind, f["name"], value))
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
        results.append(
            FlowResult(
                f["name"],
                f["src"],
                f["dst"],
                f["qpn"],
                got * 8 / window_s if window_s else 0.0,
                st.bytes_sent,
                st.retransmitted_packets,
                st.naks,
                st.timeouts,
                src.rps[f["qpn"]].cnps,
                dst.qps[f["peer_qpn"]].responder.stats.ce_marked,
                src.rps[f["qpn"]].rc,
                _window_mean(series["t"], series["tx"].get(f["name"], []), warm_ns),
                list(src.rps[f["qpn"]].cnp_times),
            )
        )
    counters, telemetry = _switch_counters(target, hosts, eng, sorted(cfg.ports), comp.notes)
    qs = [d for t, d in zip(series["t"], series["queue"], strict=True) if t >= warm_ns]
    queue = {}
    if qs:
        srt = sorted(qs)
        queue = {
            "mean": sum(qs) / len(qs),
            "min": srt[0],
            "max": srt[-1],
            "p10": srt[len(srt) // 10],
            "p50": srt[len(srt) // 2],
            "p90": srt[min(len(srt) - 1, (len(srt) * 9) // 10)],
        }
    prof = next(iter(cfg.ecn_profiles.values()), None)
    if prof is not None:
        queue["kmin"] = prof.kmin.to_packets(cfg.frame_bytes)
        queue["kmax"] = prof.kmax.to_packets(cfg.frame_bytes)
    queue["frame_bytes"] = cfg.frame_bytes
    queue["buffer"] = cfg.buffer_packets
    if wport is not None:  # which queue was sampled (plots say so)
        queue["port"], queue["class"] = wport, wclass
    bottleneck = cfg.ports[wport].speed if wport in cfg.ports else speed
    return RunResult(
        sc["name"],
        seed,
        label,
        dur_ns,
        warm_ns,
        results,
        series,
        counters,
        queue,
        dcqcn,
        {p: c.frames for p, c in eng.captures.items()},
        _time.perf_counter() - wall0,
        speed,
        sweep_value,
        comp.notes,
        telemetry,
        payload_capacity_bps(bottleneck, cfg.roce_mtu),
        {
            p: t.frames for p, t in eng.taps.items() if t.frames or t is not eng.cpu_tap
        },  # an idle CPU port: no file
        int(cap.get("snaplen", 0)),
    )


def _window_mean(t: list[int], values: list[float], warm_ns: int) -> float:
    """Mean of a sampled series over the measurement window (samples at t >= warm-up)."""
    vals = [v for ti, v in zip(t, values, strict=False) if ti >= warm_ns]
    return sum(vals) / len(vals) if vals else 0.0


def delivered(f: dict, src: Host, dst: Host) -> int:
    """Payload bytes delivered in order so far: at the responder for SEND/WRITE, back at
    the requester for READ (its responses carry the data)."""
    if str(f.get("op", "WRITE")).upper() == "READ":
        return src.qps[f["qpn"]].requester.stats.acked_bytes
    return dst.qps[f["peer_qpn"]].responder.stats.bytes_received


def _switch_counters(
    target: Target, hosts: dict[str, Host], eng: Engine, ports: list[int], notes: list[str]
) -> tuple[dict[str, int], Telemetry | None]:
    """Totals from the program's telemetry counters (the configured ports' cells), the TM
    and the hosts."""
    from controller.telemetry import from_counters
    from controller.telemetry import read as read_telemetry

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


def run_scenario(
    sc: dict,
    target_factory,
    seed: int | None = None,
    duration_us: float | None = None,
    progress: bool = True,
) -> ScenarioResult:
    """Run every point of the scenario (a fresh target per point) and judge the physics.
    A file of another kind (a fabric's, `fabric:`) is run by its kind instead (no
    target_factory: a fabric has one p4sim per switch)."""
    kind = kind_of(sc)
    if kind is not None:
        return kind.run(sc, seed, duration_us, progress)
    seed = int(sc.get("seed", 1) if seed is None else seed)
    schema.validate(sc, duration_us=duration_us)
    points = (sc.get("sweep") or {}).get("drop_rate")
    runs = []
    for value in points if points else [None]:
        target = target_factory(seed)
        try:
            runs.append(run_once(sc, target, seed, value, duration_us, progress))
        finally:
            target.close()
    return ScenarioResult(sc, runs, judge(sc, runs))


def reproduce_command(sc: dict, seed: int, duration_us: float | None = None) -> str:
    cmd = [
        "rocelab",
        "run",
        sc["name"] if Path(sc["_path"]).parent == SCENARIO_DIR else sc["_path"],
        "--seed",
        str(seed),
    ]
    if duration_us is not None:
        cmd += ["--duration-us", f"{duration_us:g}"]
    return shlex.join(cmd)
