"""`p4sim-switch`: p4sim as a P4Runtime switch, with simple_switch_grpc's flags where sensible.

    p4sim-switch [PROGRAM.p4 | --no-p4] [--device-id N] [-i 1@veth1 -i 2@veth2]
                 [--grpc-server-addr 127.0.0.1:9559] [--cpu-port 255] [--pcap DIR]
                 [--grpc-server-ssl --grpc-server-cert PEM --grpc-server-key PEM
                  [--grpc-server-cacert PEM --grpc-server-with-client-auth]]
                 [--compile-timeout 20] [--compile-memory 1024] [--max-streams 16]
                 [--profile fast|reference] [--frontend grpc|native] [--version]
                 [--log-console] [--clock auto|virtual|wall] [--queue-depth 64]
                 [--priority-queues 8] [--scheduler strict|wrr] [--priority-order high_first|low_first]
                 [--line-rate 10G] [--port-rate 3=25G]

Without a program (`--no-p4`) the switch waits for a controller's
SetForwardingPipelineConfig. `--print-device-config PROGRAM.p4` writes the device config
a controller should send for PROGRAM (see `p4sim.server.pipeline`) and exits.
`--profile fast` (the default; env P4SIM_PROFILE, see p4sim.profile) runs the compiled
backend, the compiled write path and the native (grpc++) front end (built on first use,
cached per user; a piece that cannot be built here is said in one line and its reference
runs); `--profile reference` the pure-Python path with grpc-python. `--frontend` overrides
the profile's front end only. The startup line and `--version` say which pieces run.
With env P4SIM_EXIT_WITH=PID[,PID...] (the rocelab pytest plugin and the benches set it to their
own pid) the switch stops, as on SIGTERM, when any of those processes ends: a killed test run leaves no switch behind (the
switch runs in its own session, so the run's signals never reach it).
Exit codes: 0 stopped cleanly (SIGINT/SIGTERM, or P4SIM_EXIT_WITH's process gone), 1 failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import select
import signal
import sys
import threading
from collections.abc import Mapping
from typing import Any

from p4sim import cliargs, profile
from p4sim.profile import PROFILES


def _interface(text: str) -> tuple[int, str]:
    port, sep, name = text.partition("@")
    if not sep or not port.isdigit() or not name or len(port) > 3:
        raise argparse.ArgumentTypeError(f"expected PORT@IFNAME, e.g. 1@veth1, not {text!r}")
    if int(port) > 511:
        raise argparse.ArgumentTypeError(f"port {port}: v1model ports are 0..511")
    if len(name) > 15 or "/" in name or any(c.isspace() for c in name):  # IFNAMSIZ - 1
        raise argparse.ArgumentTypeError(
            f"{name!r}: not a Linux interface name (at most 15 characters)"
        )
    return int(port), name


LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")


_SUFFIX = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
MAX_RATE = 10e12  # 10 Tb/s: above any port


def _rate(text: str) -> float:
    """A bit rate: 10G, 25g, 100M, 1.5e9 (finite, > 0, at most MAX_RATE)."""
    t = text.strip().lower().removesuffix("bps").removesuffix("b/s")
    unit = t[-1:] if t[-1:] in "kmgt" else ""
    number = t[: len(t) - len(unit)]
    try:
        if not number or len(number) > cliargs.MAX_NUMBER_CHARS:
            raise ValueError(number)
        value = float(number) * _SUFFIX[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a bit rate: {cliargs.one_line(text, 60)!r} (e.g. 10G, 100M)"
        ) from None
    if not 0 < value <= MAX_RATE:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"a rate must be > 0 and at most 10T, not {text[:40]!r}")
    return value


def _port_rate(text: str) -> tuple[int, float]:
    port, sep, rate = text.partition("=")
    if not sep or not port.isdigit() or len(port) > 3 or int(port) > 511:
        raise argparse.ArgumentTypeError(
            f"expected PORT=RATE with a port in 0..511, e.g. 1=10G, not {text!r}"
        )
    return int(port), _rate(rate)


def probe_listen(addr: str) -> str | None:
    """Why `addr` (HOST:PORT) cannot be listened on, or None: bound once and closed, so a
    wrong host or a taken port is said before a program is compiled (gRPC would say it after)."""
    import socket

    host, port = cliargs.split_address(addr)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        return f"cannot resolve {host}: {exc}"
    family, kind, proto, _, sockaddr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does
        try:
            sock.bind(sockaddr)
        except OSError as exc:
            return f"cannot listen on {addr}: {exc.strerror or exc}"
    return None


EXIT_WITH_MAX = 8  # pids in P4SIM_EXIT_WITH (a pytest run inside a pytest run adds one each)


class ParentWatch:
    """Whether any process named by P4SIM_EXIT_WITH has ended. A pidfd (Linux >= 5.3)
    becomes readable when its process ends and is not fooled by a reused pid; without
    one, kill(pid, 0). Checked at the main loop's existing 0.5 s wake-up: no extra polling."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.fds: dict[int, int] = {}
        for pid in pids:
            with contextlib.suppress(OSError, AttributeError):
                self.fds[pid] = os.pidfd_open(pid)

    def gone(self) -> int | None:
        """A watched pid whose process has ended, or None."""
        if self.fds and (ready := select.select(list(self.fds.values()), [], [], 0)[0]):
            return next(pid for pid, fd in self.fds.items() if fd in ready)
        for pid in self.pids:
            if pid in self.fds:
                continue
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return pid
            except PermissionError:  # alive, someone else's
                pass
        return None

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def exit_with_me(env: Mapping[str, str]) -> str:
    """P4SIM_EXIT_WITH with this process's pid added (the oldest dropped past the bound), for
    the environment of switches started from here."""
    pids = [p.strip() for p in env.get("P4SIM_EXIT_WITH", "").split(",") if p.strip()]
    me = str(os.getpid())
    if me not in pids:
        pids.append(me)
    return ",".join(pids[-EXIT_WITH_MAX:])


def parent_watch(env: Mapping[str, str]) -> ParentWatch | None:
    """The watch P4SIM_EXIT_WITH (comma-separated pids) asks for, None when it is unset;
    ValueError when it is not a short list of pids."""
    text = env.get("P4SIM_EXIT_WITH", "").strip()
    if not text:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > EXIT_WITH_MAX or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(
            f"P4SIM_EXIT_WITH={text[:80]!r}: expected up to {EXIT_WITH_MAX} comma-separated pids"
        )
    return ParentWatch([int(p) for p in parts])


MAX_PROGRAM_BYTES = 4 << 20  # as p4sim.cli
MAX_PEM_BYTES = 1 << 20


def build_parser() -> argparse.ArgumentParser:
    pem = cliargs.input_file(MAX_PEM_BYTES, what="PEM file")
    rate = cliargs.BoundedType(
        "float", _rate, "rate"
    )  # a number with a unit: a float's hostile inputs
    ap = cliargs.Parser(
        prog="p4sim-switch", description="p4sim P4Runtime switch (a drop-in for simple_switch_grpc)"
    )
    ap.add_argument(
        "program",
        nargs="?",
        type=cliargs.input_file(MAX_PROGRAM_BYTES, what="program"),
        help="P4_16 v1model program to load at start",
    )
    ap.add_argument(
        "--no-p4", action="store_true", help="start without a program; wait for a controller"
    )
    ap.add_argument(
        "--device-id",
        type=cliargs.int_range(0, (1 << 64) - 1, "--device-id"),
        default=0,
        help="P4Runtime device id (default 0, as simple_switch_grpc)",
    )
    ap.add_argument(
        "-i",
        "--interface",
        type=cliargs.pattern(_interface, "-i"),
        action="append",
        default=[],
        metavar="PORT@IFNAME",
        help="attach a Linux interface as a switch port (repeatable)",
    )
    ap.add_argument(
        "--grpc-server-addr",
        type=cliargs.address(0, 65535, "--grpc-server-addr"),
        default="127.0.0.1:9559",
        help="listen address (default 127.0.0.1:9559: loopback only; any client that"
        " reaches the port can become primary, so expose it with TLS)",
    )
    ap.add_argument(
        "--grpc-server-ssl", action="store_true", help="serve TLS (as simple_switch_grpc)"
    )
    ap.add_argument(
        "--grpc-server-cert",
        type=pem,
        metavar="PEM",
        help="server certificate (with --grpc-server-ssl)",
    )
    ap.add_argument(
        "--grpc-server-key",
        type=pem,
        metavar="PEM",
        help="server private key (with --grpc-server-ssl)",
    )
    ap.add_argument(
        "--grpc-server-cacert",
        type=pem,
        metavar="PEM",
        help="CA that client certificates must chain to",
    )
    ap.add_argument(
        "--grpc-server-with-client-auth",
        action="store_true",
        help="require a client certificate signed by --grpc-server-cacert (mutual TLS)",
    )
    ap.add_argument(
        "--compile-timeout",
        type=cliargs.duration(0, 3600, "--compile-timeout"),
        default=20.0,
        metavar="S",
        help="a pushed program must compile within S seconds (default 20)",
    )
    ap.add_argument(
        "--compile-memory",
        type=cliargs.int_range(64, 1 << 20, "--compile-memory"),
        default=1024,
        metavar="MB",
        help="memory limit of the compile of a pushed program (default 1024 MB)",
    )
    ap.add_argument(
        "--max-streams",
        type=cliargs.int_range(1, 1024, "--max-streams"),
        default=16,
        metavar="N",
        help="StreamChannels served at a time; more get RESOURCE_EXHAUSTED (default 16)",
    )
    ap.add_argument(
        "--profile",
        choices=PROFILES,
        default=None,
        help="fast (default: compiled backend and write path, native front end) or"
        " reference (pure Python); default from env P4SIM_PROFILE",
    )
    ap.add_argument(
        "--frontend",
        choices=["grpc", "native"],
        default=None,
        help="gRPC front end: native (grpc++) or grpc (grpc-python, the reference);"
        " default: the profile's",
    )
    ap.add_argument(
        "--version",
        action="store_true",
        help="print the version and the pieces that run, then exit",
    )
    ap.add_argument(
        "--cpu-port",
        type=cliargs.int_range(1, 511, "--cpu-port"),
        default=None,
        help="port number for PacketIn/PacketOut, 1..511 (default: none)",
    )
    ap.add_argument(
        "--pcap",
        type=cliargs.output_dir("--pcap"),
        metavar="DIR",
        help="write port<N>_in.pcap / port<N>_out.pcap in DIR",
    )
    ap.add_argument("--log-console", action="store_true", help="log to the console")
    ap.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    ap.add_argument(
        "--clock",
        default="auto",
        choices=["auto", "virtual", "wall"],
        help="time base: wall with interfaces, else virtual (default auto)",
    )
    ap.add_argument(
        "--queue-depth",
        type=cliargs.int_range(1, 1 << 20, "--queue-depth"),
        default=64,
        help="packets per priority queue (default 64, as BMv2)",
    )
    ap.add_argument(
        "--priority-queues",
        type=cliargs.int_range(1, 8, "--priority-queues"),
        default=8,
        metavar="N",
        help="priority queues per port, 1..8; a packet with priority >= N is dropped"
        " (default 8; BMv2's default is 1)",
    )
    ap.add_argument(
        "--scheduler", default="strict", choices=["strict", "wrr"], help="egress scheduler"
    )
    ap.add_argument(
        "--line-rate",
        type=rate,
        metavar="RATE",
        help="egress line rate of every port, e.g. 10G (default: unlimited, as BMv2)",
    )
    ap.add_argument(
        "--port-rate",
        type=cliargs.pattern(_port_rate, "--port-rate"),
        action="append",
        default=[],
        metavar="PORT=RATE",
        help="egress line rate of one port, e.g. 3=25G (repeatable)",
    )
    ap.add_argument(
        "--priority-order",
        default="high_first",
        choices=["high_first", "low_first"],
        help="strict priority: serve priority 7 first (default, as BMv2) or 0 first",
    )
    ap.add_argument(
        "--print-device-config",
        type=cliargs.input_file(MAX_PROGRAM_BYTES, what="program"),
        metavar="PROGRAM",
        help="write PROGRAM's device config to stdout and exit",
    )
    return ap


def _server_credentials(args: argparse.Namespace, frontend: str) -> Any:
    import grpc

    def read(path: str) -> bytes:
        return cliargs.read_input(path, MAX_PEM_BYTES)

    ca = read(args.grpc_server_cacert) if args.grpc_server_cacert else None
    if frontend == "native":
        from p4sim.server.native import Tls

        return Tls(
            read(args.grpc_server_key).decode(errors="replace"),
            read(args.grpc_server_cert).decode(errors="replace"),
            ca.decode(errors="replace") if ca is not None else None,
            args.grpc_server_with_client_auth,
        )
    return grpc.ssl_server_credentials(
        [(read(args.grpc_server_key), read(args.grpc_server_cert))],
        root_certificates=ca,
        require_client_auth=args.grpc_server_with_client_auth,
    )


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("rocelab")
    except PackageNotFoundError:
        return "unknown"


def _backend(server: Any) -> str:
    """The backend the loaded program runs on (its switch says, after any fallback), else
    the one the profile would build."""
    p = server.pipeline
    ns = getattr(getattr(p, "switch", None), "_ns", None) if p is not None else None
    return ns["__p4sim_backend__"] if ns is not None else profile.pieces()[0]


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = cliargs.parse_argv(ap, argv)  # every option and file checked here, before any compile
    if isinstance(args, int):
        return args
    try:
        return _run(ap, args)
    except SystemExit as exc:  # ap.error: its one line is written
        return exc.code if isinstance(exc.code, int) else 2


def _run(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.print_device_config:
        from p4sim.server.pipeline import make_device_config

        try:
            config = make_device_config(args.print_device_config)
        except cliargs.InputError as exc:  # a walk past its bounds, an unreadable P4 file
            print(f"p4sim-switch: {cliargs.one_line(str(exc))}", file=sys.stderr)
            return 2
        sys.stdout.buffer.write(config)
        return 0
    if args.version:
        try:
            if args.profile:
                profile.choose(args.profile)
            from p4sim.server.service import profile_frontend

            frontend = args.frontend or profile_frontend()
            print(f"p4sim-switch {version()}: {profile.describe(*profile.pieces(), frontend)}")
        except profile.SettingError as exc:
            ap.error(str(exc))
        return 0
    if args.program and args.no_p4:
        ap.error("give a program or --no-p4, not both")
    if not args.program and not args.no_p4:
        ap.error("give a program (PROGRAM.p4) or --no-p4")
    tls_files = (args.grpc_server_cert, args.grpc_server_key, args.grpc_server_cacert)
    if args.grpc_server_ssl and not (args.grpc_server_cert and args.grpc_server_key):
        ap.error("--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key")
    if any(tls_files) and not args.grpc_server_ssl:
        ap.error("certificate flags need --grpc-server-ssl")
    if args.grpc_server_with_client_auth and not args.grpc_server_cacert:
        ap.error("--grpc-server-with-client-auth needs --grpc-server-cacert")
    if (why := probe_listen(args.grpc_server_addr)) is not None:  # before the compile below
        ap.error(why)
    try:
        watch = parent_watch(os.environ)
    except ValueError as exc:
        ap.error(str(exc))
    if watch is not None and (ended := watch.gone()) is not None:
        print(f"p4sim-switch: process {ended} (P4SIM_EXIT_WITH) has already ended", file=sys.stderr)
        return 1
    try:  # read again when a pushed pipeline is built: refused here, in one line, not then
        if args.profile:
            profile.choose(args.profile)  # into the environment: a child process runs the same
        profile.selected()
    except profile.SettingError as exc:
        ap.error(str(exc))
    if args.frontend == "native":
        from p4sim.server.native import NativeUnavailable, load

        try:
            load()  # built on first use: say so now, in one line, rather than at start()
        except NativeUnavailable as exc:
            print(f"p4sim-switch: --frontend native: {exc}", file=sys.stderr)
            return 1
    from p4sim.server.service import profile_frontend

    frontend = (
        args.frontend or profile_frontend()
    )  # native unless it cannot be built here (one line)
    credentials = None
    if args.grpc_server_ssl:
        try:
            credentials = _server_credentials(args, frontend)
        except cliargs.InputError as exc:
            print(f"p4sim-switch: {exc}", file=sys.stderr)
            return 1

    handler: logging.Handler = (
        logging.StreamHandler(sys.stderr) if args.log_console else logging.NullHandler()
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), handlers=[handler])

    from p4rtproto.errors import RequestError
    from p4sim.runtime import tables
    from p4sim.runtime.ports import PortSet
    from p4sim.runtime.tm import TrafficManager
    from p4sim.server import P4RuntimeServer
    from p4sim.server.sandbox import Limits

    ports = PortSet(pcap_dir=args.pcap)
    try:
        for number, ifname in args.interface:
            ports.add_interface(number, ifname)
    except (OSError, ValueError) as exc:
        print(f"p4sim-switch: {exc}", file=sys.stderr)
        ports.close()
        return 1

    def tm() -> Any:
        t = TrafficManager(
            default_capacity=args.queue_depth,
            scheduler=args.scheduler,
            priority_order=args.priority_order,
            default_rate_bps=args.line_rate,
            nb_queues=args.priority_queues,
            default_link_bps=int(args.line_rate or 100e9),
        )
        for port, rate in args.port_rate:
            t.set_port_rate(port, bits_per_s=rate)
        return t

    limits = Limits(compile_timeout_s=args.compile_timeout, compile_memory_mb=args.compile_memory)
    server = P4RuntimeServer(
        device_id=args.device_id,
        cpu_port=args.cpu_port,
        ports=ports,
        clock=args.clock,
        tm_factory=tm,
        freeze_gc=True,
        limits=limits,
        max_streams=args.max_streams,
        frontend=frontend,
    )
    if args.program:
        try:
            server.load_program(args.program)
        except cliargs.InputError as exc:  # the program's directory past the walk's bounds
            print(f"p4sim-switch: {cliargs.one_line(str(exc))}", file=sys.stderr)
            ports.close()
            return 2
        except RequestError as exc:
            print(f"p4sim-switch: {exc.message}", file=sys.stderr)
            ports.close()
            return 1
    try:
        port = server.start(args.grpc_server_addr, credentials=credentials)
    except (OSError, RuntimeError) as exc:
        print(f"p4sim-switch: cannot serve on {args.grpc_server_addr}: {exc}", file=sys.stderr)
        ports.close()
        return 1

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    host = args.grpc_server_addr.rsplit(":", 1)[0]
    if host not in LOOPBACK and credentials is None:
        print(
            f"p4sim-switch: warning: serving plain-text P4Runtime on {host}: any client that reaches"
            " it can become primary and push programs (use --grpc-server-ssl)",
            file=sys.stderr,
        )
    print(
        f"p4sim-switch: device {args.device_id} serving P4Runtime on {host}:{port}"
        f" ({len(args.interface)} interface(s), clock {server.clock},"
        f" {profile.describe(_backend(server), 'python' if tables.COMPILED is None else 'compiled', frontend)})",
        file=sys.stderr,
        flush=True,
    )
    while not stop.wait(0.5):
        if watch is not None and (ended := watch.gone()) is not None:
            print(
                f"p4sim-switch: process {ended} (P4SIM_EXIT_WITH) ended: stopping", file=sys.stderr
            )
            break
    server.stop()
    if watch is not None:
        watch.close()
    print("p4sim-switch: stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
