"""Run a generated case on real p4c + BMv2 `simple_switch` (veth ports, AF_PACKET).

One simple_switch per program, on the same veth pairs (ports 0..3). Table entries, clone
sessions and the reads of registers and counters go through BMv2's own Thrift client
(`runtime_CLI`/`sswitch_CLI`, the modules `simple_switch_CLI` runs, imported once from
beside it: no CLI process per command).

When a packet is done is read from BMv2's debug log, not guessed from a timeout: every
packet instance starts with "Processing packet received" (a new packet: copy id 0) or
"Cloning packet to egress port", and ends with "Transmitting packet" or "Dropping packet"
(simple_switch.cpp: ingress_thread, egress_thread, transmit_thread). A recirculated or
resubmitted copy continues its instance. The packet is done when every instance has ended
and every transmitted frame has arrived on its port's peer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from controller.targets.toolchain import toolchain
from p4rtproto.afpacket import packet_socket, recv_frame

from .gen import PORTS, Case
from .outcome import Outcome

PACKET_OUTGOING = 4
_LINE = re.compile(r"\[(\d+)\.(\d+)\] \[cxt \d+\] (.*)$")
_TX = re.compile(r"Transmitting packet of size \d+ out of port (\d+)")


class ToolchainMissing(RuntimeError):
    pass


def tools() -> tuple[str, str, str]:
    """p4c-bm2-ss, simple_switch and simple_switch_CLI from the project's toolchain (PATH or
    ROCELAB_BMV2_PREFIX: controller/targets/toolchain.py), or say what is missing."""
    tc = toolchain()
    problem = tc.bmv2_problem() or tc.p4c_problem()
    if problem:
        raise ToolchainMissing(problem)
    switch = tc.simple_switch_grpc.parent / "simple_switch"  # type: ignore[union-attr]
    if not switch.is_file():
        raise ToolchainMissing(f"no simple_switch beside {tc.simple_switch_grpc}")
    return str(tc.p4c), str(switch), str(tc.simple_switch_cli)


def _cli_modules(cli: str):
    """BMv2's Python client, from the prefix simple_switch_CLI lives in."""
    prefix = Path(cli).resolve().parent.parent
    for d in (prefix / "lib" / "cli-python", *prefix.glob("lib/python3*/site-packages")):
        if d.is_dir() and str(d) not in sys.path:
            sys.path.append(str(d))
    try:
        import runtime_CLI  # type: ignore[import-not-found]
        import sswitch_CLI  # type: ignore[import-not-found]
    except ImportError as e:
        raise ToolchainMissing(
            f"BMv2's Python client (runtime_CLI, thrift) not importable beside {cli}: {e}"
        ) from e
    return runtime_CLI, sswitch_CLI


def _tables(json_path: Path) -> set[str]:
    """The tables in BMv2's JSON (names as simple_switch_CLI takes them)."""
    doc = json.loads(json_path.read_text())
    return {t["name"] for pipe in doc.get("pipelines", []) for t in pipe.get("tables", [])}


def compile_p4(p4c: str, source: Path, out_json: Path) -> str | None:
    """Compile with real p4c; None when it compiles, else its first error line."""
    argv = [p4c, "--arch", "v1model", "-o", str(out_json), str(source)]
    res = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env=toolchain().p4c_env()
    )
    if res.returncode == 0:
        return None
    errs = [ln for ln in res.stderr.splitlines() if "error" in ln] or res.stderr.splitlines()[-1:]
    return errs[0] if errs else f"p4c exit {res.returncode}"


class _Log:
    """Instance accounting from simple_switch's console log (a reader thread)."""

    def __init__(self, stream) -> None:
        self.cond = threading.Condition()
        self.arrived = 0  # new packets seen by the ingress thread
        self.live = 0  # instances started and not ended
        self.tx = [0] * 512  # frames transmitted per port
        self.thrift_up = False
        self.lines: list[str] = []  # the tail, for error messages
        self.t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.t.start()

    def _read(self, stream) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip()
            m = _LINE.search(line)
            with self.cond:
                self.lines = (self.lines + [line])[-40:]
                if "Thrift server was started" in line:
                    self.thrift_up = True
                elif m:
                    msg = m.group(3)
                    if msg.startswith("Processing packet received") and m.group(2) == "0":
                        self.arrived += 1
                        self.live += 1
                    elif msg.startswith("Cloning packet to egress port"):
                        self.live += 1
                    elif msg.startswith("Dropping packet"):
                        self.live -= 1
                    else:
                        t = _TX.match(msg)
                        if t:
                            self.live -= 1
                            self.tx[int(t.group(1))] += 1
                self.cond.notify_all()


class Bmv2Runner:
    """Runs cases one after the other on `ifaces` (switch side) / `peers` (our side)."""

    def __init__(self, ifaces: list[str], peers: list[str], workdir: Path, timeout: float = 10.0):
        self.p4c, self.ss, cli = tools()
        self.rt, self.ssw = _cli_modules(cli)
        self.ifaces, self.peers, self.workdir, self.timeout = ifaces, peers, workdir, timeout
        self.socks = [packet_socket(p, promiscuous=True, rcvbuf=1 << 22) for p in peers]

    def close(self) -> None:
        for s in self.socks:
            s.close()

    def _drain(self) -> None:
        while True:
            r, _, _ = select.select(self.socks, [], [], 0)
            if not r:
                return
            for s in r:
                s.recv(65535)

    def run(self, case: Case, json_path: Path) -> Outcome:
        with (
            socket.socket() as s
        ):  # a free Thrift port (released just before simple_switch binds it)
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        argv = [
            self.ss,
            "--log-console",
            "-L",
            "debug",
            "--thrift-port",
            str(port),
            "--notifications-addr",
            f"ipc://{self.workdir}/notify-{os.getpid()}.ipc",
        ]
        for i, iface in enumerate(self.ifaces):
            argv += ["-i", f"{i}@{iface}"]
        argv.append(str(json_path))
        self._drain()
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        log = _Log(proc.stdout)
        try:
            return self._drive(case, log, port, proc, json_path)
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _wait(self, log: _Log, pred, what: str, proc) -> None:
        end = time.monotonic() + self.timeout
        with log.cond:
            while not pred():
                left = end - time.monotonic()
                if left <= 0 or proc.poll() is not None:
                    tail = "\n".join(log.lines[-8:])
                    raise TimeoutError(f"BMv2: {what} (exit {proc.poll()}); log tail:\n{tail}")
                log.cond.wait(min(left, 0.5))

    def _drive(self, case: Case, log: _Log, port: int, proc, json_path: Path) -> Outcome:
        self._wait(log, lambda: log.thrift_up, "Thrift server never started", proc)
        end = time.monotonic() + self.timeout
        while True:  # "Thrift server was started" is logged just before it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > end or proc.poll() is not None:
                    raise TimeoutError("BMv2: Thrift port never opened") from None
                time.sleep(0.02)
        rt, ssw = self.rt, self.ssw
        services = rt.RuntimeAPI.get_thrift_services(rt.PreType.SimplePreLAG)
        services.extend(ssw.SimpleSwitchAPI.get_thrift_services())
        with contextlib.redirect_stdout(io.StringIO()):
            std, mc, sswc = rt.thrift_connect("127.0.0.1", port, services)
            rt.load_json_config(std, str(json_path))  # the file: no JSON fetched over Thrift
            api = ssw.SimpleSwitchAPI(rt.PreType.SimplePreLAG, std, mc, sswc)
        try:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                for session, eport in case.clone_sessions.items():
                    api.onecmd(f"mirroring_add {session} {eport}")
                present = _tables(json_path)
                for e in case.entries:
                    if e.table not in present:
                        # p4c removed the table: no path applies it (a condition folded to a
                        # constant leaves its branch dead; the frontend's SimplifyControlFlow and
                        # RemoveAllUnusedDeclarations drop it). p4sim never applies it either; if
                        # p4c dropped one that is applied, the packets below disagree.
                        continue
                    # (lpm keys here are whole bytes: gen.make_table says why)
                    keys = " ".join(f"{v}/{m}" if m is not None else str(v) for _, v, m in e.keys)
                    args = " ".join(str(v) for _, v in e.args)
                    api.onecmd(f"table_add {e.table} {e.action} {keys} => {args}")
            if "Error" in out.getvalue() or "Invalid" in out.getvalue():
                raise RuntimeError(f"BMv2 refused the set-up: {out.getvalue().strip()[-300:]}")
            result = Outcome()
            sent = 0
            for in_port, frame in case.packets:
                tx_before = list(log.tx[:PORTS])
                self.socks[in_port].send(frame)
                sent += 1
                self._wait(
                    log,
                    lambda n=sent: log.arrived >= n and log.live == 0,
                    f"packet {sent} never finished",
                    proc,
                )
                want = [log.tx[p] - tx_before[p] for p in range(PORTS)]
                if any(log.tx[p] for p in range(PORTS, 512)):
                    raise RuntimeError("BMv2 sent a frame to a port the program must not use")
                result.packets.append(self._collect(want))
            for name in case.registers:
                result.registers[name] = [int(v) for v in std.bm_register_read_all(0, name)]
            for name, size in case.counters:
                cells = [std.bm_counter_read(0, name, i) for i in range(size)]
                result.counters[name] = [(int(c.packets), int(c.bytes)) for c in cells]
            return result
        finally:
            with contextlib.suppress(Exception):
                std._iprot.trans.close()

    def _collect(self, want: list[int]) -> dict[int, list[bytes]]:
        got: dict[int, list[bytes]] = {p: [] for p in range(PORTS)}
        end = time.monotonic() + self.timeout
        while any(len(got[p]) < want[p] for p in range(PORTS)):
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"BMv2 logged {want} frames per port, {[len(got[p]) for p in range(PORTS)]} arrived"
                )
            r, _, _ = select.select(self.socks, [], [], left)
            for s in r:
                frame, addr = recv_frame(s)
                if addr[2] == PACKET_OUTGOING:
                    continue
                got[self.socks.index(s)].append(frame)
        return {p: fs for p, fs in got.items() if fs}
