"""Run a lab: hosts, a P4 switch, the controller over P4Runtime, RoCEv2 traffic, counters.

    python -m lab.run --target p4sim                 # 2 hosts, p4sim-switch (make lab)
    python -m lab.run --target bmv2 --p4-artifacts build/p4
    python -m lab.run --topo incast --backend netns  # 4:1 incast, 5 hosts

Steps: build the topology (Mininet when it can run here, else network namespaces), start
the switch on the switch ends of the links, connect as the P4Runtime primary controller,
push the program, install one L2 entry per host, start a traffic agent (`lab.agent`) in
every host, wait for them, then read the switch's counters over P4Runtime and print them.
Exit status 0 when every agent completed its exchange. Everything created is removed at
the end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from controller.targets import TableEntry, Target, registry
from controller.targets.base import Exact, Program
from controller.targets.config import ConfigError, TargetConfig
from controller.targets.netns import is_root, sweep_stale
from controller.telemetry import DROP_REASONS, port_cells  # drops cell = port * 16 + reason

from .topo import TOPOLOGIES, Host, Topology

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PROGRAM = REPO_ROOT / "p4src" / "roce_switch.p4"
# Counters printed per port (names as in P4Info, resolved by unique suffix).
REPORT_COUNTERS = ("roce_rx", "roce_tx", "ecn_marked", "cnp_rx", "pfc_tx", "pfc_rx", "drops")
CELLS_PER_PORT = {"drops": 16, "pause_rx": 1, "rocev1_rx": 1}  # others: 8 traffic classes


def make_lab(topology: Topology, backend: str, log_dir: Path | None):
    """The lab network for `backend` (auto: Mininet when it can run here, else netns)."""
    from .mininet_lab import MininetLab, mininet_unavailable
    from .netns_lab import NetnsLab

    if backend == "auto":
        backend = "netns" if mininet_unavailable() else "mininet"
    if backend == "mininet":
        why = mininet_unavailable()
        if why:
            raise SystemExit(f"lab.run: --backend mininet: {why}")
        return MininetLab(topology, log_dir)
    return NetnsLab(topology, log_dir)


def l2_entries(topology: Topology) -> list[TableEntry]:
    """One exact-match L2 entry per host MAC -> its switch port."""
    return [
        TableEntry(
            "l2_fwd",
            {"hdr.ethernet.dst": Exact(int(h.mac.replace(":", ""), 16))},
            "l2_forward",
            {"port": h.port},
        )
        for h in topology.hosts
    ]


def agent_argv(
    topology: Topology,
    host: Host,
    iface: str,
    sends_to: list[Host],
    receives_from: list[Host],
    messages: int,
    size: int,
    start_at: float,
    timeout: float,
) -> list[str]:
    """The agent command line for `host`: one QP per peer it talks to."""
    peers = {p.name: p for p in sends_to + receives_from}
    argv = [
        sys.executable,
        "-m",
        "lab.agent",
        "--iface",
        iface,
        "--mac",
        host.mac,
        "--ip",
        host.ip,
        "--messages",
        str(messages if sends_to else 0),
        "--size",
        str(size),
        "--expect",
        str(messages * len(receives_from)),
        "--timeout",
        str(timeout),
        "--start-at",
        f"{start_at:.3f}",
    ]
    for p in peers.values():
        argv += ["--peer", f"{p.mac},{p.ip},{qpn(host, p):#x},{qpn(p, host):#x}"]
    return argv


def qpn(local: Host, remote: Host) -> int:
    """The QP number `local` uses for its connection with `remote`."""
    return (local.qpn << 8) | remote.port


def traffic_plan(topology: Topology) -> dict[str, tuple[list[Host], list[Host]]]:
    """host -> (hosts it sends to, hosts it receives from)."""
    hosts = list(topology.hosts)
    if topology.name == "pair":
        a, b = hosts
        return {a.name: ([b], [b]), b.name: ([a], [a])}
    *senders, sink = hosts  # incast: every sender writes to the last host
    plan = {h.name: ([sink], []) for h in senders}
    plan[sink.name] = ([], senders)
    return plan


def per_port(target: Target, ports: list[int]) -> dict[str, dict[int, tuple[int, int]]]:
    """Each reported counter summed per port (cells are indexed port * width + class or
    reason); only the lab's ports' cells are read, a few milliseconds each."""
    names = {n for n, _ in target.counter_names()}
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for short in REPORT_COUNTERS:
        full = next((n for n in names if n == short or n.endswith("." + short)), None)
        if full is None:
            continue
        width = CELLS_PER_PORT.get(short, 8)
        row = {}
        for port in ports:
            chunk = port_cells(target, full, port, width)
            row[port] = (sum(c[0] for c in chunk), sum(c[1] for c in chunk))
        out[short] = row
    return out


def print_counters(table: dict[str, dict[int, tuple[int, int]]], ports: list[int]) -> None:
    names = [n for n in REPORT_COUNTERS if n in table]
    print("switch counters (packets) per port, read over P4Runtime:")
    print("port " + "".join(f"{n:>11}" for n in names))
    for port in ports:
        print(f"{port:>4} " + "".join(f"{table[n][port][0]:>11}" for n in names))


def switch_profile(log: str) -> str:
    """The profile p4sim-switch's start line names (`profile fast (compiled backend, ...)`),
    or "" for a switch that names none (BMv2, hardware)."""
    for line in log.splitlines():
        if "serving P4Runtime" in line and "profile " in line:
            return line[line.index("profile ") :].rstrip(")") + ")"
    return ""


def run(args: argparse.Namespace) -> int:
    if not is_root():
        print("lab.run: needs root (network namespaces, veth pairs, AF_PACKET)", file=sys.stderr)
        return 2
    swept = sweep_stale()  # what earlier labs killed with SIGKILL left behind
    if swept:
        print(f"lab: removed {len(swept)} namespaces/links left by dead runs: {' '.join(swept)}")
    topology = TOPOLOGIES[args.topo]()
    try:
        kind = registry.switch_kind(args.target)  # the switch process this kind runs as
        cfg = TargetConfig(
            kind=kind.name,
            program=args.program,
            device_id=1,
            options={"p4_artifacts": args.p4_artifacts},
        )
        kind.check(cfg, "lab")
        program: Program = kind.program(cfg)
    except ConfigError as e:
        print(f"lab.run: {e}", file=sys.stderr)
        return 2

    # Switch logs: in --log-dir if given; else in a temp dir removed after a clean run and
    # kept (and named) when something failed.
    tmp_logs = None if args.log_dir else Path(tempfile.mkdtemp(prefix="rocelab-lab-"))
    lab = make_lab(topology, args.backend, args.log_dir or tmp_logs)
    target: Target | None = None
    procs: list[tuple[Host, subprocess.Popen]] = []
    passed = False
    try:
        t0 = time.monotonic()
        switch = lab.start_switch(cfg)
        print(
            f"lab: {topology.description} on {lab.backend}; switch {switch.kind} "
            f"(gRPC {switch.grpc_addr}, ports {lab.ports}) up in {time.monotonic() - t0:.1f} s"
        )
        started = ""
        for _ in range(20):  # the start line follows the server's first answer by a moment
            started = switch_profile(switch.log_tail(50))
            if started or not kind.name.startswith("p4sim"):
                break
            time.sleep(0.1)
        if started:  # which p4sim pieces run (fast, or the reference), as `make demo` says it
            print(f"lab: switch runs {started}")
        target = kind.open(cfg, program, switch)
        target.write(l2_entries(topology))
        print(f"controller: pushed {program.name}, installed {len(topology.hosts)} L2 entries")

        start_at = time.time() + args.start_delay
        plan = traffic_plan(topology)
        for h in topology.hosts:
            sends, recvs = plan[h.name]
            argv = agent_argv(
                topology,
                h,
                lab.host_iface(h),
                sends,
                recvs,
                args.messages,
                args.size,
                start_at,
                args.timeout,
            )
            procs.append(
                (
                    h,
                    lab.popen_host(
                        h, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(REPO_ROOT)
                    ),
                )
            )
        results: dict[str, dict] = {}
        ok = True
        for h, p in procs:
            try:
                out, err = p.communicate(timeout=args.timeout + args.start_delay + 30)
            except subprocess.TimeoutExpired:  # a hung agent is a failed exchange, not a traceback
                p.kill()
                out, err = p.communicate()
                err += b"\nlab: agent killed: no result within its timeout"
            try:
                results[h.name] = json.loads(out.decode().strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                results[h.name] = {"ok": False, "error": err.decode()[-500:]}
            ok = ok and p.returncode == 0 and results[h.name].get("ok", False)
        for name, r in results.items():
            print(f"{name}: " + ", ".join(f"{k}={v}" for k, v in r.items() if k != "ip"))
        counters = per_port(target, topology.ports)
        print_counters(counters, topology.ports)
        for port in topology.ports:
            if counters.get("drops", {}).get(port, (0, 0))[0]:
                cells = port_cells(target, "drops", port, 16)
                why = ", ".join(
                    f"{DROP_REASONS.get(i, i)}={p}" for i, (p, _) in enumerate(cells) if p
                )
                print(f"port {port} drops: {why}")
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {
                        "topology": topology.name,
                        "backend": lab.backend,
                        "target": args.target,
                        "agents": results,
                        "counters": {
                            n: {str(p): v for p, v in row.items()} for n, row in counters.items()
                        },
                    },
                    indent=1,
                )
            )
        print("lab: " + ("every exchange completed" if ok else "an exchange did NOT complete"))
        passed = ok
        return 0 if ok else 1
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if target is not None:
            target.close()
        lab.close()
        if tmp_logs is not None:
            if passed:
                shutil.rmtree(tmp_logs, ignore_errors=True)
            else:
                print(f"lab: switch logs kept in {tmp_logs}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.run", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--target",
        default="p4sim",
        choices=registry.names(lambda k: k.switch_kind is not None),
        help="the lab's switch, as a process: "
        + "; ".join(f"{n}: {k.help}" for n, k in registry.kinds().items() if k.switch_kind),
    )
    ap.add_argument("--topo", choices=sorted(TOPOLOGIES), default="pair")
    ap.add_argument("--backend", choices=["auto", "mininet", "netns"], default="auto")
    ap.add_argument("--program", type=Path, default=DEFAULT_PROGRAM)
    ap.add_argument(
        "--p4-artifacts",
        type=Path,
        default=None,
        help="P4Info + BMv2 JSON from p4c (kinds that run p4c's output)",
    )
    ap.add_argument("--messages", type=int, default=8, help="WRITEs per sender and peer")
    ap.add_argument("--size", type=int, default=4096, help="bytes per WRITE")
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument(
        "--start-delay",
        type=float,
        default=1.5,
        help="seconds for the agents to start before traffic begins",
    )
    ap.add_argument(
        "--log-dir",
        type=Path,
        default=None,
        help="keep switch logs here (default: a tmp dir, removed after a clean run)",
    )
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
