"""A congested lab: a lab file's topology on namespaces, one P4 switch process per switch,
tc-shaped links, DCQCN agents, and the counters that show what the congestion did.

    python -m lab.congested                       # lab/topologies/two_switch.yaml (make lab)
    python -m lab.congested two_switch --no-ecn   # the control: same load, no ECN marking
    python -m lab.congested my_lab.yaml --target bmv2 --p4-artifacts build/p4

Steps:
1. Load the lab file (`lab.labfile`: the fabric's Topology plus flows, policy, DCQCN knobs).
2. One namespace per host, its `eth0` a veth whose other end is a switch port; one veth
   pair per switch-to-switch link. tc (`lab.shape`): netem delay on every end, the line
   rate on hosts' NICs only.
3. One switch process per switch (p4sim-switch; or simple_switch_grpc), each port's egress
   rate set to its link's speed (`--port-rate`, BMv2 `set_queue_rate`): a slower link
   makes the queue build in that switch's egress, where the P4 program marks ECN.
4. Program each switch over P4Runtime as the fabric does (`controller.fabric.routing`:
   L3 routes between switches, then the lab's `rocelab apply` policy: classes, ECN, PFC, CNP).
5. A `lab.dcqcn_agent` in every host: senders paced by the DCQCN reaction point, receivers
   answering CE marks with CNPs. While they run the switches' queue depths are sampled
   (roce_switch.p4's pfc_qdepth register); afterwards every switch's counters are read
   back over P4Runtime and printed with the agents' own counters.
Exit status: 0 when every agent finished (and, with --check, the congestion checks held),
1 otherwise, 2 on bad usage. Everything created is removed at the end, also on failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from controller.config import ConfigError, names_from_target
from controller.fabric.routing import compile_switch, compute_routes, program_switch
from controller.targets import Target, netns, registry
from controller.targets.base import Program, RegisterQuery, TargetError
from controller.targets.config import ConfigError as TargetConfigError
from controller.targets.config import TargetConfig
from controller.targets.registry import TargetKind
from controller.targets.switches import SwitchProcess, SwitchStartError

from .labfile import LabFileError, LabSpec, lab_names, load_lab
from .run import REPORT_COUNTERS, per_port
from .shape import ShapeError, netem_available, shape

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PROGRAM = REPO_ROOT / "p4src" / "roce_switch.p4"
DEFAULT_LAB = "two_switch"
DATA_TC = 3  # the class the agents' data (DSCP 26) is mapped to by the lab policies
SAMPLE_EVERY_S = 0.2
FRAME_BYTES = 1098  # a full 1024-byte RoCE data frame (for BMv2's packets/s queue rates)


class CongestedLab:
    """Hosts, links, shapers and switch processes for one lab file. `backend`: "netns" (our
    namespaces and veth pairs) or "mininet" (`lab.congested_mininet`); the switches, the
    shaping and everything after are the same code on both."""

    def __init__(self, spec: LabSpec, log_dir: Path, backend: str = "netns"):
        self.spec, self.log_dir, self.backend = spec, log_dir, backend
        self.nets: netns.NetnsSet | None = None
        self.mn = None
        self.switches: dict[str, SwitchProcess] = {}
        self.configs: dict[str, TargetConfig] = {}  # each switch's, to open it with
        self.port_maps: dict[str, dict[int, str]] = {s: {} for s in spec.topology.switches}
        self.host_ns: dict[str, str] = {}
        self.shaping: list[str] = []
        try:
            if backend == "mininet":
                self._build_mininet()
            else:
                self._build_netns()
            if netem_available() is False:
                self.shaping.append(
                    "this kernel has no sch_netem: link delays are not "
                    "emulated (rates are: tbf on the hosts, the switches' "
                    "egress rates)"
                )
        except BaseException:
            self.close()
            raise

    def _build_netns(self) -> None:
        topo = self.spec.topology
        self.nets = netns.NetnsSet()
        for i, h in enumerate(topo.hosts.values(), start=1):
            ns = self.nets.add_netns(netns.name("h", i))
            outer = netns.name("p", i)
            # no kernel address: the agent is the RoCE NIC (see lab.topo)
            self.nets.add_veth(outer, "eth0", ns, mac=h.mac)
            self.host_ns[h.name] = ns
            self.port_maps[h.switch][h.port] = outer
            _, _, lk = topo.peer(h.name, 0)
            self._shape(f"{h.name}/eth0", "eth0", lk.delay_ns, lk.bps, ns)
            self._shape(outer, outer, lk.delay_ns)
        for j, lk in enumerate(
            lk for lk in topo.links if lk.a[0] in topo.switches and lk.b[0] in topo.switches
        ):
            ea, eb = netns.name("x", j), netns.name("y", j)
            self.nets.add_veth(ea, eb)
            self.port_maps[lk.a[0]][lk.a[1]] = ea
            self.port_maps[lk.b[0]][lk.b[1]] = eb
            for end in (ea, eb):
                self._shape(end, end, lk.delay_ns)

    def _build_mininet(self) -> None:
        from .congested_mininet import MininetNetwork

        topo = self.spec.topology
        self.mn = MininetNetwork(self.spec)
        self.port_maps = self.mn.port_maps
        for h in topo.hosts.values():
            inner, outer = self.mn.host_links[h.name]
            _, _, lk = topo.peer(h.name, 0)
            self._shape(f"{h.name}/{inner}", inner, lk.delay_ns, lk.bps, self.mn.prefix(h.name))
            self._shape(outer, outer, lk.delay_ns)
        for ea, eb, delay in self.mn.switch_links:
            for end in (ea, eb):
                self._shape(end, end, delay)

    def _shape(
        self,
        label: str,
        iface: str,
        delay_ns: int,
        rate_bps: float | None = None,
        ns: str | list[str] | None = None,
    ) -> None:
        argv = shape(iface, delay_ns, rate_bps, ns)
        if argv:
            self.shaping.append(f"{label}: {' '.join(argv[3:])}")

    def host_iface(self, host: str) -> str:
        return self.mn.host_iface[host] if self.mn is not None else "eth0"

    def port_rates(self, switch: str) -> dict[int, float]:
        return {
            port: lk.bps for port, (_p, _pp, lk) in self.spec.topology.switch_ports(switch).items()
        }

    def start_switches(self, kind: TargetKind, cfg: TargetConfig) -> None:
        """Every switch at once (each compiles the program while the others do), each
        port's egress at its link's rate (BMv2: packets/s at FRAME_BYTES, set once programmed)."""
        names = list(self.spec.topology.switches)
        for k, s in enumerate(names, start=1):
            self.configs[s] = dataclasses.replace(
                cfg, device_id=k, port_rates=self.port_rates(s), rate_frame_bytes=FRAME_BYTES
            )

        def start(s: str) -> SwitchProcess:
            return kind.start(self.configs[s], self.port_maps[s], log_dir=self.log_dir / s)

        with ThreadPoolExecutor(len(names)) as pool:
            futures = {s: pool.submit(start, s) for s in names}
        errors = []
        for s, f in futures.items():  # keep every one that started, so close() stops it
            try:
                self.switches[s] = f.result()
            except Exception as e:  # noqa: BLE001 (each failure is reported, none leaks a switch)
                errors.append(f"{s}: {e}")
        if errors:
            raise SwitchStartError("; ".join(errors))

    def popen_host(self, host: str, argv: list[str], **kw) -> subprocess.Popen:
        if self.mn is not None:
            return self.mn.popen(host, argv, **kw)
        assert self.nets is not None
        return self.nets.popen(argv, netns=self.host_ns[host], **kw)

    def close(self) -> None:
        for sw in self.switches.values():
            sw.close()
        if self.mn is not None:
            self.mn.close()
        if self.nets is not None:
            self.nets.close()


def agent_argvs(
    spec: LabSpec, start_at: float, iface: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """The `lab.dcqcn_agent` command line of every host in a flow. Flow i uses QP
    0x100 + 2i at its source and 0x101 + 2i at its destination; frames go to the
    host's switch (its router MAC), which routes them."""
    topo = spec.topology
    peers: dict[str, list[str]] = {}
    for i, f in enumerate(spec.flows):
        src, dst = topo.hosts[f.src], topo.hosts[f.dst]
        sq, dq = 0x100 + 2 * i, 0x101 + 2 * i
        peers.setdefault(f.src, []).append(
            f"{topo.switches[src.switch].router_mac},{dst.ip},{sq:#x},{dq:#x}"
        )
        peers.setdefault(f.dst, []).append(
            f"{topo.switches[dst.switch].router_mac},{src.ip},{dq:#x},{sq:#x}"
        )
    senders = {f.src for f in spec.flows}
    params = json.dumps(asdict(spec.dcqcn))
    out = {}
    for name, plist in peers.items():
        h = topo.hosts[name]
        argv = [
            sys.executable,
            "-m",
            "lab.dcqcn_agent",
            "--iface",
            (iface or {}).get(name, "eth0"),
            "--mac",
            h.mac,
            "--ip",
            h.ip,
            "--line-rate",
            str(spec.host_rate[name]),
            "--duration",
            f"{spec.duration_s:g}",
            "--dcqcn",
            params,
            "--timeout",
            f"{spec.duration_s + 60:g}",
            "--start-at",
            f"{start_at:.3f}",
        ]
        for p in plist:
            argv += ["--peer", p]
        if name in senders:
            argv.append("--send")
        out[name] = argv
    return out


def sample_qdepth(
    targets: dict[str, Target], ports: dict[str, list[int]], peak: dict[str, dict[int, int]]
) -> None:
    """Raise `peak[switch][port]` to the data class's queue depth the switch reports now
    (nothing for a switch that cannot read registers: BMv2's P4Runtime answers UNIMPLEMENTED)."""
    for s, t in targets.items():
        for port in ports[s]:
            try:
                cells = t.read(RegisterQuery("pfc_qdepth", port * 8 + DATA_TC))
            except TargetError:
                return  # a program without the register: no samples, the counters still come
            if cells:
                peak[s][port] = max(peak[s].get(port, 0), cells[0].value)


def totals(res: dict) -> dict:
    """What the congestion checks read: sums over switches and agents."""
    sw = res["switches"].values()
    senders = [a for a in res["agents"].values() if a.get("role") == "sender"]
    recv = [a for a in res["agents"].values() if a.get("role") == "receiver"]

    def csum(name: str) -> int:
        return sum(v[0] for s in sw for v in s["counters"].get(name, {}).values())

    return {
        "ecn_marked": csum("ecn_marked"),
        "cnp_rx_switches": csum("cnp_rx"),
        "pfc_tx": csum("pfc_tx"),
        "drops": csum("drops"),
        # None: not sampled (the target cannot read registers over P4Runtime)
        "max_qdepth": max((d for s in sw for d in s["max_qdepth"].values()), default=None),
        "ce_marked_received": sum(a.get("ce_marked_received", 0) for a in recv),
        "cnps_sent": sum(a.get("cnps_sent", 0) for a in recv),
        "cnps_received": sum(a.get("rp_cnps", 0) for a in senders),
        "rate_reductions": sum(a.get("rate_reductions", 0) for a in senders),
        "rate_min_bps": min((a.get("rate_min_bps", 0) for a in senders), default=0),
        "pfc_pauses_received": sum(a.get("pfc_xoff_received", 0) for a in senders),
        "goodput_bps": sum(a.get("goodput_bps", 0) for a in senders),
    }


def congestion_failures(t: dict) -> list[str]:
    """The checks `--check` (and the CI test) apply; each failure as one line."""
    out = []
    if t["ecn_marked"] <= 0:
        out.append("no ECN marks on any switch")
    if t["cnps_received"] <= 0:
        out.append("no CNP reached a sender")
    if t["rate_reductions"] <= 0:
        out.append("no DCQCN rate reduction")
    return out


def _print(res: dict) -> None:
    for s, row in res["switches"].items():
        names = [n for n in REPORT_COUNTERS if n in row["counters"]]
        print(
            f"switch {s} counters (packets) per port, read over P4Runtime; qmax: peak "
            f"class-{DATA_TC} queue sampled:"
        )
        print("port " + "".join(f"{n:>11}" for n in names) + f"{'qmax':>6}")
        for port in sorted(int(p) for p in row["counters"][names[0]]):
            print(
                f"{port:>4} "
                + "".join(f"{row['counters'][n][str(port)][0]:>11}" for n in names)
                + f"{row['max_qdepth'].get(str(port), '-'):>6}"
            )
    for name, a in res["agents"].items():
        keys = (
            "frames_sent",
            "messages_completed",
            "messages_received",
            "ce_marked_received",
            "cnps_sent",
            "rp_cnps",
            "rate_reductions",
            "rate_min_bps",
            "rate_final_bps",
            "goodput_bps",
            "pfc_xoff_received",
            "paused_ms",
            "retransmitted",
            "timeouts",
        )
        print(f"{name} ({a.get('role', '?')}): " + ", ".join(f"{k}={a[k]}" for k in keys if k in a))
    print("lab: wall time " + ", ".join(f"{k} {v} s" for k, v in res["phases_s"].items()))
    t = res["totals"]
    peak = (
        "not sampled (no register reads on this target)"
        if t["max_qdepth"] is None
        else f"{t['max_qdepth']} pkts"
    )
    print(
        f"lab: ECN marks {t['ecn_marked']}, CNPs {t['cnps_sent']} sent / {t['cnps_received']} "
        f"received by senders, rate reductions {t['rate_reductions']}, PFC frames "
        f"{t['pfc_tx']}, peak queue {peak}, goodput {t['goodput_bps'] / 1e6:.2f} Mb/s"
    )


def run(
    spec: LabSpec,
    target_kind: str = "p4sim",
    program_path: Path = DEFAULT_PROGRAM,
    p4_artifacts: Path | None = None,
    ecn: bool = True,
    log_dir: Path | None = None,
    backend: str = "netns",
) -> dict:
    """Run the lab once; returns the results (agents, per-switch counters, totals)."""
    policy = dict(spec.policy)
    if not ecn:
        policy.pop("ecn", None)
    spec.policy = policy
    try:
        kind = registry.switch_kind(target_kind)  # the switch process this kind runs as
        # A switch that loads the program when it starts needs no push (nor a compile here).
        cfg = TargetConfig(
            kind=kind.name,
            program=program_path,
            push=not kind.loads_program,
            options={"p4_artifacts": p4_artifacts},
        )
        kind.check(cfg, "lab")
        program: Program | None = None if kind.loads_program else kind.program(cfg)
    except TargetConfigError as e:
        raise SystemExit(f"lab.congested: {e}") from None
    netns.sweep_stale()
    logs = log_dir or Path(tempfile.mkdtemp(prefix="rocelab-lab-"))
    lab = CongestedLab(spec, logs, backend)
    targets: dict[str, Target] = {}
    procs: dict[str, subprocess.Popen] = {}
    try:
        t0 = time.monotonic()
        phases: dict[str, float] = {}  # wall seconds per step, for the report
        lab.start_switches(kind, cfg)
        phases["switches"] = time.monotonic() - t0
        print(
            f"lab: {spec.description or spec.topology.name} on {lab.backend}; "
            f"{len(lab.switches)} {target_kind} switches up in {time.monotonic() - t0:.1f} s"
        )
        for line in lab.shaping:
            print(f"  tc {line}")
        routes = compute_routes(spec.topology)
        for s, sw in lab.switches.items():
            t = kind.open(lab.configs[s], program, sw)  # pushed if needed, BMv2's rates set
            targets[s] = t
            prog = compile_switch(spec.topology, s, routes[s], policy, names_from_target(t))
            program_switch(t, prog)
            print(
                f"controller: {s}: {len(prog.entities)} entities "
                f"({', '.join(f'{p} -> port {ps}' for p, ps in routes[s].routes.items())})"
            )
        phases["program"] = time.monotonic() - t0 - sum(phases.values())
        start_at = time.time() + 1.5
        ifaces = {h: lab.host_iface(h) for h in spec.topology.hosts}
        for name, argv in agent_argvs(spec, start_at, ifaces).items():
            procs[name] = lab.popen_host(
                name, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(REPO_ROOT)
            )
        senders = {f.src for f in spec.flows}
        ports = {s: sorted(lab.port_maps[s]) for s in lab.switches}
        peak: dict[str, dict[int, int]] = {s: {} for s in lab.switches}
        deadline = time.monotonic() + spec.duration_s + 90
        while time.monotonic() < deadline and any(procs[h].poll() is None for h in senders):
            sample_qdepth(targets, ports, peak)
            time.sleep(SAMPLE_EVERY_S)
        time.sleep(0.3)  # the last ACKs and CNPs in flight
        for name, p in procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM if name not in senders else signal.SIGKILL)
        agents: dict[str, dict] = {}
        for name, p in procs.items():
            try:
                out, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            try:
                agents[name] = json.loads(out.decode().strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                agents[name] = {"ok": False, "error": err.decode(errors="replace")[-800:]}
        phases["traffic"] = time.monotonic() - t0 - sum(phases.values())
        res: dict = {
            "lab": spec.topology.name,
            "path": spec.path,
            "target": target_kind,
            "backend": lab.backend,
            "ecn": ecn,
            "agents": agents,
            "switches": {},
            "shaping": lab.shaping,
        }
        for s, t in targets.items():
            counters = per_port(t, ports[s])
            res["switches"][s] = {
                "counters": {
                    n: {str(p): list(v) for p, v in row.items()} for n, row in counters.items()
                },
                "max_qdepth": {str(p): d for p, d in sorted(peak[s].items())},
            }
        phases["counters"] = time.monotonic() - t0 - sum(phases.values())
        res["phases_s"] = {k: round(v, 1) for k, v in phases.items()}
        res["totals"] = totals(res)
        res["ok"] = all(a.get("ok") for a in agents.values())
        return res
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        for t in targets.values():
            t.close()
        lab.close()
        if log_dir is None:
            shutil.rmtree(logs, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.congested", description=__doc__.split("\n")[0])
    ap.add_argument(
        "lab",
        nargs="?",
        default=DEFAULT_LAB,
        help=f"a lab file, or one of: {', '.join(lab_names())}",
    )
    ap.add_argument(
        "--target",
        choices=registry.names(lambda k: k.switch_kind is not None),
        default="p4sim",
        help="the switches' target kind (run as processes)",
    )
    ap.add_argument(
        "--backend",
        choices=["auto", "mininet", "netns"],
        default="netns",
        help="who builds hosts and links: our namespaces (default), Mininet, or "
        "auto (Mininet when it can run here)",
    )
    ap.add_argument("--program", type=Path, default=DEFAULT_PROGRAM)
    ap.add_argument(
        "--p4-artifacts",
        type=Path,
        default=None,
        help="P4Info + BMv2 JSON from p4c (for --target bmv2)",
    )
    ap.add_argument(
        "--no-ecn",
        action="store_true",
        help="the control: drop the policy's ECN marking (same load)",
    )
    ap.add_argument("--duration", type=float, default=None, help="override the file's duration (s)")
    ap.add_argument(
        "--check",
        action="store_true",
        help="exit 1 unless ECN marks, CNPs at the senders and rate cuts are all > 0",
    )
    ap.add_argument("--log-dir", type=Path, default=None, help="keep the switch logs here")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args(argv)
    if not netns.is_root():
        print(
            "lab.congested: needs root (network namespaces, veth pairs, tc, AF_PACKET)",
            file=sys.stderr,
        )
        return 2
    try:
        spec = load_lab(args.lab)
    except LabFileError as e:
        print(f"lab.congested: {e}", file=sys.stderr)
        return 2
    if args.duration is not None:
        if not 0 < args.duration <= 600:
            print("lab.congested: --duration must be in (0, 600] s", file=sys.stderr)
            return 2
        spec.duration_s = args.duration
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if registry.get(args.target).in_process:  # the embedded kind: its switch processes run
        from controller.targets.p4sim import profile_line  # p4sim (they inherit the profile)

        print(f"lab.congested: {profile_line()}", file=sys.stderr)
    backend = args.backend
    if backend != "netns":
        from .mininet_lab import mininet_unavailable

        why = mininet_unavailable()
        if why and backend == "mininet":
            print(f"lab.congested: --backend mininet: {why}", file=sys.stderr)
            return 2
        backend = "netns" if why else "mininet"
    try:
        res = run(
            spec,
            args.target,
            args.program,
            args.p4_artifacts,
            not args.no_ecn,
            args.log_dir,
            backend,
        )
    except (ConfigError, ShapeError, SwitchStartError, TargetError) as e:
        print(f"lab.congested: {e}", file=sys.stderr)
        return 1
    _print(res)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    failed = (
        []
        if res["ok"]
        else [
            "an agent did not finish: "
            + ", ".join(
                f"{n}: {a.get('error', 'not ok')[-200:]}"
                for n, a in res["agents"].items()
                if not a.get("ok")
            )
        ]
    )
    if args.check:
        failed += congestion_failures(res["totals"])
    for f in failed:
        print(f"lab: FAILED: {f}")
    if not failed:
        print("lab: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
