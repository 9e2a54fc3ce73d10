"""`make bench` section veth_forwarding: a switch forwarding RoCEv2 over veth pairs.

Issue 19's forwarding rows: roce_switch.p4 configured by `rocelab apply
controller/examples/lab.yaml` (as the lab does), ports 1 and 2 on veth pairs whose host ends
live in network namespaces (h1 and h2 of lab.yaml). h1 offers RoCEv2 RDMA WRITE frames to
h2 (class 0: DSCP 0, routed through the router MAC) at rising rates, with 64 B and 1,024 B
payloads; per rate the bench prints what was offered, what reached the switch's port, what
the switch delivered on port 2 (pps over the steady part of the step, and the loss once it
drained), and the switch's CPU per delivered frame. Targets: issue 19's 1.5x BMv2's
performance build (25.6k / 31.7k pps: 38.4k / 47.6k pps).

The sender is C: bench/sender.c (built at first use) paces `sendmmsg(2)` batches on an
AF_PACKET socket from a thread of its own, frames built once; it offers several times what
these switches forward (a Python pacing loop topped out near 60k pps, below p4sim's peak).
Each step prints what it offered (frames the kernel took), what was delivered, the loss and
the CPU per frame of the switch and of the sender; the rates rise until two steps in a row
lose over 10% without delivering more (past the peak).

Same-run baseline: a reflector with no switch (on by default; `--no-baseline` skips it): one Python
process moving frames port 1 -> port 2 with a plain `recv`/`send` per frame on the same
veths (what per-frame socket I/O in Python costs on this machine, whatever the tree).

Side by side with BMv2 (issue 34): with the real toolchain found (PATH or
ROCELAB_BMV2_PREFIX), each trial runs p4sim-switch (fast profile), BMv2's performance build
and its default build (`--no-bmv2-default`: not) on the same veths, rotated per trial, and
a table gives each peak as a ratio to the perf build's in the same trial
(bench/side_by_side.py); without it one line says why those columns are absent.

Commands (root; from the repository root):

    # side by side with BMv2's builds, 2 trials alternated
    ROCELAB_BMV2_PREFIX=../shared/refp4 .venv/bin/python -m bench veth_forwarding --trials 2

    # p4sim-switch (this tree), and the same in its performance configuration (bench.PERF_CONFIG,
    # where it builds; --no-perf-config: not); then an A/B with another checkout's, alternated per trial
    .venv/bin/python -m bench veth_forwarding
    .venv/bin/python -m bench veth_forwarding --trials 2 --against /path/to/other/checkout
    # BMv2: the bench makes the veths and starts the command ({port1}, {port2}: the switch's
    # interfaces; {addr}: a free 127.0.0.1 port), then configures it with rocelab apply
    make p4-bmv2
    .venv/bin/python -m bench veth_forwarding --p4info build/p4/roce_switch.p4info.txt \\
        --bmv2-json build/p4/roce_switch.json --switch-cmd 'simple_switch_grpc --device-id 0 \\
        --log-level off -i 1@{port1} -i 2@{port2} --no-p4 -- --cpu-port 255 --grpc-server-addr {addr}'
    # any P4Runtime switch already running, its ports 1 and 2 on interfaces you made: give
    # the host ends as NETNS/IFACE (or IFACE in this namespace), with h1's and h2's MACs
    # (lab.yaml); the bench runs rocelab apply on it unless --no-push
    .venv/bin/python -m bench veth_forwarding --grpc-addr 127.0.0.1:9559 --server-pid PID \\
        --send-if h1ns/eth0 --recv-if h2ns/eth0
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import PERF_CONFIG, REFERENCE_CONFIG, perf_config_available, side_by_side
from bench.sender import Sender

SMOKE = [
    "--rates",
    "5000,20000",
    "--step-s",
    "0.4",
    "--trials",
    "1",
    "--no-perf-config",
    "--no-bmv2",
]

ROOT = Path(__file__).resolve().parent.parent
BMV2_PERF = {64: 25_600, 1024: 31_700}  # issue 19: BMv2 1.15.5 performance build, 40k pps offered
MARGIN = 1.5
RATES = (
    10_000,
    20_000,
    40_000,
    60_000,
    80_000,
    120_000,
    160_000,
    240_000,
    320_000,
)  # until past the peak
PAYLOADS = (64, 1024)
RING = 64  # distinct frames (PSNs) cycled by the sender
CHECK_FRAMES = 8
# lab.yaml: h1 on port 1, h2 on port 2, routed through the router MAC; class 0 = DSCP 0
H1 = ("02:00:00:00:00:01", "10.0.0.1")
H2 = ("02:00:00:00:00:02", "10.0.0.2")
ROUTER_MAC = "02:00:00:00:00:fe"
DQPN = 0x102  # h2's QP


# ------------------------------------------------------------ frames and the sender


def frames(payload_len: int, n: int = RING) -> list[bytes]:
    from controller.packets.build import roce_frame

    body = bytes((i * 7 + 3) & 0xFF for i in range(payload_len))
    return [
        roce_frame(
            H1[1],
            H2[1],
            "WRITE_ONLY",
            DQPN,
            psn,
            body,
            eth_src=H1[0],
            eth_dst=ROUTER_MAC,
            dscp=0,
            sport=0xC000 + psn,
        )
        for psn in range(n)
    ]


# ------------------------------------------------------------ counters and processes


class NsCounters:
    """Interface counters of one namespace, read by a shell living in it (`ip netns exec`
    mounts the namespace's own /sys): about 0.1 ms a read, not a process per read."""

    def __init__(self, ns: str | None) -> None:
        argv = ["sh", "-c", 'while read f; do cat "$f" || echo -1; done']
        if ns is not None:
            argv = ["ip", "netns", "exec", ns, *argv]
        self._p = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def read(self, iface: str, name: str) -> int:
        assert self._p.stdin is not None and self._p.stdout is not None
        self._p.stdin.write(f"/sys/class/net/{iface}/statistics/{name}\n")
        self._p.stdin.flush()
        value = int(self._p.stdout.readline())
        if value < 0:
            raise RuntimeError(f"no counter {name} for {iface}")
        return value

    def close(self) -> None:
        if self._p.stdin is not None:
            self._p.stdin.close()
        self._p.wait(timeout=5)


def cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of a process (all its threads); 0 without a pid."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _split_if(text: str) -> tuple[str | None, str]:
    ns, sep, iface = text.rpartition("/")
    return (ns or None) if sep else None, iface


@dataclass
class Lab:
    """Where frames go in and come out: the host ends (NS, IFACE) of the sender and the
    receiver, and the switch's two interfaces (in this namespace) for a switch started here."""

    send: tuple[str | None, str]
    recv: tuple[str | None, str]
    port1: str = ""
    port2: str = ""
    nets: object | None = None

    @classmethod
    def make(cls) -> Lab:
        from controller.targets import netns

        nets = netns.NetnsSet()
        try:
            ends = []
            for port, (mac, _ip) in ((1, H1), (2, H2)):
                ns = nets.add_netns(netns.name("f", port))
                nets.add_veth(netns.name("v", port), "eth0", ns, mac=mac)
                ends.append(ns)
        except BaseException:
            nets.close()
            raise
        return cls(
            (ends[0], "eth0"), (ends[1], "eth0"), netns.name("v", 1), netns.name("v", 2), nets
        )

    def close(self) -> None:
        if self.nets is not None:
            self.nets.close()  # type: ignore[attr-defined]


@dataclass
class Dut:
    """A switch (or the reflector) under test: its process, pid and P4Runtime address."""

    label: str
    proc: subprocess.Popen | None = None
    pid: int | None = None
    addr: str | None = None
    device_id: int = 0
    log: Path | None = None  # the switch's stderr (its log lines), shown when a check fails

    def stop(self, keep_log: bool = False) -> None:
        from controller.targets.netns import stop_process

        if self.proc is not None:
            stop_process(self.proc)
        if self.log is not None and not keep_log:
            self.log.unlink(missing_ok=True)

    def state(self, lines: int = 15) -> str:
        """Whether the process still runs, and the end of its log: for a failed check."""
        text = ""
        if self.proc is not None:
            code = self.proc.poll()
            text = (
                " (switch still running)"
                if code is None
                else f" (switch exited with status {code})"
            )
        if self.log is not None:
            try:
                tail = self.log.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                tail = []
            if tail:
                text += f"; the end of its log {self.log}:" + "".join(f"\n    {t}" for t in tail)
            else:
                text += f"; its log {self.log} is empty"
        return text


def _free_addr() -> str:
    from controller.targets.switches import free_port

    return f"127.0.0.1:{free_port()}"


def _wait_grpc(dut: Dut, timeout: float = 60.0) -> Dut:
    try:
        side_by_side.wait_ready(dut.addr or "", dut.proc, dut.label, timeout)
    except BaseException:
        dut.stop(keep_log=True)
        raise
    return dut


LOG_DIR = Path(tempfile.gettempdir()) / "rocelab-veth-bench"


def start_p4sim(lab: Lab, tree: Path | None, env_extra: dict[str, str]) -> Dut:
    from p4sim.server_cli import exit_with_me

    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    env["P4SIM_EXIT_WITH"] = exit_with_me(env)  # a killed bench leaves no switch behind
    env.update(env_extra)
    addr = _free_addr()
    argv = [
        sys.executable,
        "-m",
        "p4sim.server_cli",
        "--no-p4",
        "--device-id",
        "0",
        "--cpu-port",
        "255",
        "-i",
        f"1@{lab.port1}",
        "-i",
        f"2@{lab.port2}",
        "--grpc-server-addr",
        addr,
        "--log-level",
        "warning",
        "--log-console",
    ]
    LOG_DIR.mkdir(exist_ok=True)
    log = LOG_DIR / f"p4sim-switch-{os.getpid()}-{addr.rsplit(':', 1)[1]}.log"
    with open(log, "wb") as err:  # warnings and failures only (--log-level warning)
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=tree or ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    label = "p4sim-switch" + (f"@{tree}" if tree is not None else "")
    label += "".join(f" {k}={v}" for k, v in env_extra.items())
    return _wait_grpc(Dut(label, proc, proc.pid, addr, log=log))


def start_command(lab: Lab, template: str) -> Dut:
    addr = _free_addr()
    argv = shlex.split(template.format(port1=lab.port1, port2=lab.port2, addr=addr))
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    return _wait_grpc(Dut(Path(argv[0]).name, proc, proc.pid, addr))


def start_bmv2(lab: Lab, exe: Path, label: str) -> Dut:
    """BMv2's simple_switch_grpc `exe` on the lab's two ports."""
    addr = _free_addr()
    proc = side_by_side.start(exe, addr, [f"1@{lab.port1}", f"2@{lab.port2}"])
    return _wait_grpc(Dut(label, proc, proc.pid, addr))


REFLECTOR = """
import sys
from p4rtproto.afpacket import PACKET_OUTGOING, packet_socket
a = packet_socket(sys.argv[1], promiscuous=True, rcvbuf=4 << 20)
b = packet_socket(sys.argv[2])
recv, send = a.recvfrom, b.send
print("ready", flush=True)
while True:
    data, addr = recv(65535)
    if addr[2] != PACKET_OUTGOING:
        send(data)
"""


def start_reflector(lab: Lab) -> Dut:
    proc = subprocess.Popen(
        [sys.executable, "-c", REFLECTOR, lab.port1, lab.port2],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError("the reflector did not start")
    return Dut("reflector (no switch)", proc, proc.pid)


def configure(dut: Dut, extra: list[str], tree: Path | None) -> None:
    from bench.p4runtime import Switch, apply_lab

    apply_lab(Switch(dut.addr or "", dut.device_id), extra, tree)


# ------------------------------------------------------------ measuring


@dataclass
class Step:
    rate: int
    offered: float  # frames/s the kernel took from the sender over the steady window
    delivered: float  # frames/s out of the receiver's interface, same window
    loss: float  # of the step's frames, once the switch drained
    cpu_us: float  # the switch's CPU per delivered frame (0: no pid)
    sender_us: float = (
        0.0  # the sending thread's CPU per frame sent (its syscalls and veth's receive path)
    )


@dataclass
class Sweep:
    label: str
    payload: int
    steps: list[Step] = field(default_factory=list)
    check: str = ""

    @property
    def peak(self) -> Step:
        return max(self.steps, key=lambda s: s.delivered)


def _open(end: tuple[str | None, str]) -> socket.socket:
    from p4rtproto.afpacket import packet_socket

    return packet_socket(end[1], end[0])


def _send_only(end: tuple[str | None, str]) -> socket.socket:
    """A packet socket that only sends (protocol 0: the kernel queues nothing on it)."""
    from p4rtproto.afpacket import entered

    with entered(end[0]):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        sock.bind((end[1], 0))
    return sock


def check_frames(lab: Lab, payload: int, routed: bool = True) -> str:
    """Send CHECK_FRAMES frames slowly, capture them on the receiver and check that they
    were routed to h2 and kept their payload (`routed` False, the reflector: that they
    arrived unchanged); returns a digest of what arrived."""
    from controller.packets.decode import decode, verify_icrc
    from p4rtproto.afpacket import recv_frame

    ring = frames(payload, CHECK_FRAMES)
    rx = _open(lab.recv)
    rx.settimeout(0.5)
    tx = _send_only(lab.send)
    got: list[bytes] = []

    def routed_out(deadline: float) -> bytes | None:
        while time.monotonic() < deadline:
            try:
                data, _addr = recv_frame(rx)
            except TimeoutError:
                continue
            if data[12:14] == b"\x08\x00" and data[36:38] == b"\x12\xb7":  # IPv4, UDP to 4791
                return data
        return None

    try:
        # warm-up: the switch may still be installing (a compiled backend built at push
        # time on a loaded machine): one frame, resent until something comes out, then quiet
        warm = time.monotonic() + 60.0
        while time.monotonic() < warm:
            tx.send(ring[0])
            if routed_out(time.monotonic() + 2.0) is not None:
                break
        while routed_out(time.monotonic() + 0.3) is not None:
            pass
        for f in ring:
            tx.send(f)
            out = routed_out(time.monotonic() + 2.0)
            if out is not None:
                got.append(out)
    finally:
        rx.close()
        tx.close()
    if len(got) != len(ring):
        raise RuntimeError(f"check: {len(got)} of {len(ring)} frames came out on port 2")
    for sent, out in zip(ring, got, strict=True):
        if not routed:
            if out != sent:
                raise RuntimeError(f"check: the reflector changed a frame: {out.hex()}")
            continue
        d = decode(out)
        if (
            d.eth_dst != int(H2[0].replace(":", ""), 16)
            or d.ttl != 63
            or d.udp_dport != 4791
            or not verify_icrc(out)
            or out[42:] != sent[42:]
        ):
            raise RuntimeError(f"check: frame not forwarded as routed RoCEv2 to h2: {out.hex()}")
    return hashlib.sha256(b"".join(got)).hexdigest()[:12]


def sweep(lab: Lab, dut: Dut, payload: int, rates: list[int], step_s: float) -> Sweep:
    res = Sweep(dut.label, payload)
    try:
        res.check = check_frames(lab, payload, routed=dut.addr is not None)
    except RuntimeError as exc:
        raise RuntimeError(f"{dut.label}, {payload} B: {exc}{dut.state()}") from None
    sock = _send_only(lab.send)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sender = Sender(sock, frames(payload))
    ctr = NsCounters(lab.recv[0])
    try:
        for rate in rates:
            d0 = ctr.read(lab.recv[1], "rx_packets")
            sent0 = sender.sent
            sender.paced(rate, step_s * 0.25)  # ramp: queues fill, the figure is the steady part
            marks: dict[str, float] = {}

            def sample(tag: str, marks: dict[str, float] = marks) -> None:
                marks[tag + "t"] = time.perf_counter()
                marks[tag + "d"] = ctr.read(lab.recv[1], "rx_packets")
                marks[tag + "c"] = cpu_s(dut.pid)
                marks[tag + "s"] = sender.sent
                marks[tag + "x"] = sender.cpu_s

            sample("a")
            sender.paced(rate, step_s * 0.75)
            sample("b")
            # drain: until the receiver's count stops moving
            last, still = marks["bd"], time.monotonic()
            while time.monotonic() - still < 0.2:
                time.sleep(0.05)
                now = ctr.read(lab.recv[1], "rx_packets")
                if now != last:
                    last, still = now, time.monotonic()
            dt = marks["bt"] - marks["at"]
            delivered = (marks["bd"] - marks["ad"]) / dt
            total_sent, total_got = sender.sent - sent0, last - d0
            cpu = (marks["bc"] - marks["ac"]) / max(1, marks["bd"] - marks["ad"]) * 1e6
            sent = marks["bs"] - marks["as"]
            res.steps.append(
                Step(
                    rate,
                    sent / dt,
                    delivered,
                    max(0.0, 1 - total_got / max(1, total_sent)),
                    cpu if dut.pid else 0.0,
                    (marks["bx"] - marks["ax"]) / max(1, sent) * 1e6,
                )
            )
            if past_peak(res.steps):
                break
    finally:
        ctr.close()
        sock.close()
    return res


def past_peak(steps: list[Step]) -> bool:
    """Stop rising: the last two steps each lost over 10% and delivered no more than 5%
    above the best before them (the switch is saturated: higher rates only add loss)."""
    if len(steps) < 3:
        return False
    best_before = max(st.delivered for st in steps[:-2])
    return all(st.loss > 0.1 and st.delivered <= 1.05 * best_before for st in steps[-2:])


# ------------------------------------------------------------ report


def _target(payload: int) -> float:
    return BMV2_PERF[payload] * MARGIN


def report(sweeps: list[Sweep], baseline: dict[int, list[Sweep]]) -> None:
    by: dict[tuple[str, int], list[Sweep]] = {}
    for s in sweeps:
        by.setdefault((s.label, s.payload), []).append(s)
    for (label, payload), runs in by.items():
        best = max(runs, key=lambda s: s.peak.delivered)
        print(f"{label}, {payload} B payload (frames checked, digest {best.check}):")
        for st in best.steps:
            cpu = f"; {st.cpu_us:.1f} us switch CPU/frame" if st.cpu_us else ""
            cpu += f"; sender {st.sender_us:.2f} us CPU/frame" if st.sender_us else ""
            short = "" if st.offered >= 0.95 * st.rate else " (the sender fell short)"
            print(
                f"  offered {st.rate:>7,} pps: sent {st.offered:>9,.0f} pps{short}, delivered {st.delivered:>9,.0f} pps"
                f" (loss {st.loss:.1%}{cpu})"
            )
        pk = best.peak
        refl = baseline.get(payload, [])
        rtxt = f"{max(r.peak.delivered for r in refl):,.0f} pps" if refl else "not run"
        tgt = _target(payload)
        if pk.cpu_us:
            print(
                f"  switch CPU per frame at the peak: {pk.cpu_us:.1f} us = {1e6 / pk.cpu_us:,.0f} pps on one whole core"
                " (steadier than the rate on a shared machine)"
            )
        print(
            f"  peak: {pk.delivered:,.0f} pps delivered at {pk.rate:,} offered"
            f" = {pk.delivered / BMV2_PERF[payload]:.2f}x BMv2 perf build ({BMV2_PERF[payload]:,} pps)   "
            f"target >= {tgt:,.0f} pps ({MARGIN}x) {'ok' if pk.delivered >= tgt else 'NOT YET'}; "
            f"reflector (no switch, same run): {rtxt}"
        )


def _ab(sweeps: list[Sweep]) -> None:
    labels = list(dict.fromkeys(s.label for s in sweeps if not s.label.startswith("reflector")))
    if len(labels) != 2:
        return
    print(f"A/B: {labels[0]} / {labels[1]}, peak delivered, per trial (alternated)")
    for payload in sorted({s.payload for s in sweeps}):
        a = [s.peak.delivered for s in sweeps if s.label == labels[0] and s.payload == payload]
        b = [s.peak.delivered for s in sweeps if s.label == labels[1] and s.payload == payload]
        ca = [s.peak.cpu_us for s in sweeps if s.label == labels[0] and s.payload == payload]
        cb = [s.peak.cpu_us for s in sweeps if s.label == labels[1] and s.payload == payload]
        rs = [x / y for x, y in zip(a, b, strict=False) if y]
        cs = [x / y for x, y in zip(ca, cb, strict=False) if y]
        if rs:
            print(
                f"  {payload} B: pps {min(rs):.2f}-{max(rs):.2f}x"
                + (f", CPU/frame {min(cs):.2f}-{max(cs):.2f}x" if cs else "")
            )


# the options that name or start this section's own switch: not with --bmv2
CONFLICTS = ("--grpc-addr", "--switch-cmd", "--against", "--perf-config")


def parser() -> argparse.ArgumentParser:
    """This section's options (`python -m bench SECTION --help` prints them; nothing runs)."""
    ap = argparse.ArgumentParser(
        prog="python -m bench veth_forwarding", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--rates", default=",".join(map(str, RATES)), help="offered pps per step, comma-separated"
    )
    ap.add_argument(
        "--payloads", default=",".join(map(str, PAYLOADS)), help="payload bytes, comma-separated"
    )
    ap.add_argument("--step-s", type=float, default=2.0, help="seconds per rate step")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--no-baseline", action="store_true", help="skip the reflector")
    ap.add_argument(
        "--against",
        metavar="DIR",
        type=Path,
        help="A/B: alternate with another checkout's p4sim-switch",
    )
    ap.add_argument(
        "--against-env",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="environment of the --against switch (repeatable)",
    )
    ap.add_argument(
        "--switch-cmd",
        metavar="CMD",
        help="start this switch instead of p4sim-switch ({port1} {port2} {addr})",
    )
    ap.add_argument("--p4info", help="with --bmv2-json: passed to rocelab apply (BMv2)")
    ap.add_argument("--bmv2-json")
    ap.add_argument(
        "--grpc-addr", metavar="HOST:PORT", help="a switch already running on --send-if/--recv-if"
    )
    ap.add_argument("--device-id", type=int, default=0)
    ap.add_argument("--server-pid", type=int, help="with --grpc-addr: its pid, for CPU per frame")
    ap.add_argument(
        "--send-if", metavar="[NETNS/]IFACE", help="with --grpc-addr: h1's interface (the sender)"
    )
    ap.add_argument(
        "--recv-if", metavar="[NETNS/]IFACE", help="with --grpc-addr: h2's interface (the receiver)"
    )
    ap.add_argument(
        "--no-push", action="store_true", help="with --grpc-addr: it is configured already"
    )
    ap.add_argument(
        "--perf-config",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="alternate p4sim-switch with itself in its performance configuration ("
        + " ".join(f"{k}={v}" for k, v in PERF_CONFIG.items())
        + ") in the same run"
        " (default: when p4sim-switch runs here without --against and it builds)",
    )
    side_by_side.add_options(ap, "each peak", CONFLICTS)
    return ap


def run(argv: list[str]) -> None:
    ap = parser()
    first_opt = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    args, _ = ap.parse_known_args(argv[first_opt:])
    rates = [int(r) for r in args.rates.split(",")]
    payloads = [int(p) for p in args.payloads.split(",")]
    if any(p not in BMV2_PERF for p in payloads):
        ap.error(f"--payloads: issue 19's rows are {sorted(BMV2_PERF)}")
    if args.grpc_addr and not (args.send_if and args.recv_if):
        ap.error("--grpc-addr needs --send-if and --recv-if (the host ends of its ports 1 and 2)")
    if os.geteuid() != 0:
        print("veth_forwarding skipped: needs root (network namespaces, veth pairs, AF_PACKET)")
        return
    extra = ["--p4info", args.p4info, "--bmv2-json", args.bmv2_json] if args.p4info else []
    against_env = dict(e.split("=", 1) for e in args.against_env)
    given = (args.grpc_addr, args.switch_cmd, args.against, args.perf_config)  # CONFLICTS' values
    bmv2 = side_by_side.choose(ap, args.bmv2, dict(zip(CONFLICTS, given, strict=True)))
    if bmv2 is not None:
        args.perf_config = False
    if args.perf_config is None:
        args.perf_config = (
            not (args.grpc_addr or args.switch_cmd or args.against) and perf_config_available()
        )
    if args.perf_config:
        if args.grpc_addr or args.switch_cmd or args.against:
            ap.error(
                "--perf-config runs this tree's p4sim-switch: not with --grpc-addr, --switch-cmd or --against"
            )
        args.against, against_env = ROOT, dict(PERF_CONFIG)
    base_env = (
        dict(REFERENCE_CONFIG) if args.perf_config else {}
    )  # this side: the reference profile
    if bmv2 is not None:
        base_env = dict(PERF_CONFIG)
    load = os.getloadavg()
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
        f"{args.step_s} s per rate step"
    )
    lab = Lab(_split_if(args.send_if), _split_if(args.recv_if)) if args.grpc_addr else Lab.make()
    sweeps: list[Sweep] = []
    baseline: dict[int, list[Sweep]] = {}
    by_trial: list[dict[str, dict[str, float]]] = []
    notes: dict[tuple[str, str], tuple[float, str]] = {}
    exes = dict(bmv2.builds()[: None if args.bmv2_default else 1]) if bmv2 is not None else {}
    try:
        for trial in range(args.trials):
            duts: list[tuple[str, Path | None]] = [("a", None)]
            if args.against:
                duts.append(("b", args.against.resolve()))
            duts += [(label, None) for label in exes]
            k = trial % len(duts)  # A B C, B C A, ...: no side always runs first
            duts = duts[k:] + duts[:k]
            if not args.no_baseline and not args.grpc_addr:
                duts.append(("reflector", None))
            by_trial.append({})
            for kind, tree in duts:
                if kind == "reflector":
                    dut = start_reflector(lab)
                elif kind in exes:
                    dut = start_bmv2(lab, exes[kind], kind)
                elif args.grpc_addr:
                    dut = Dut(
                        f"switch at {args.grpc_addr}",
                        pid=args.server_pid,
                        addr=args.grpc_addr,
                        device_id=args.device_id,
                    )
                elif args.switch_cmd and kind == "a":
                    dut = start_command(lab, args.switch_cmd)
                else:
                    dut = start_p4sim(lab, tree, against_env if kind == "b" else base_env)
                failed = True
                try:
                    if kind != "reflector" and not (args.grpc_addr and args.no_push):
                        configure(
                            dut,
                            list(bmv2.apply_args) if kind in exes else extra if kind == "a" else [],
                            tree,
                        )
                    for payload in payloads:
                        s = sweep(lab, dut, payload, rates, args.step_s)
                        (
                            baseline.setdefault(payload, []) if kind == "reflector" else sweeps
                        ).append(s)
                        pk = s.peak
                        by_trial[-1].setdefault(s.label, {}).update(
                            {f"fwd{payload}": pk.delivered, f"fwd{payload}_cpu": pk.cpu_us}
                        )
                        best = notes.get((s.label, f"fwd{payload}"))
                        if (
                            best is None or pk.delivered > best[0]
                        ):  # the best peak's offered load and loss
                            notes[(s.label, f"fwd{payload}")] = (
                                pk.delivered,
                                f"; best at {pk.offered:,.0f} offered, loss {pk.loss:.1%}",
                            )
                    failed = False
                finally:
                    if not args.grpc_addr or kind == "reflector":
                        dut.stop(keep_log=failed)  # a failure's log stays for a look
    finally:
        lab.close()
    report(sweeps, baseline)
    _ab(sweeps)
    if bmv2 is not None:
        rows = [
            side_by_side.Row(
                f"forwarding over veth, {p:,} B payload, peak",
                f"fwd{p}",
                "pps",
                cpu_key=f"fwd{p}_cpu",
            )
            for p in payloads
        ]
        side_by_side.table(
            rows,
            by_trial,
            list(dict.fromkeys(s.label for s in sweeps)),
            {k: text for k, (_, text) in notes.items()},
        )
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    run(sys.argv[1:])
