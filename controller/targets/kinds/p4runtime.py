"""Kind `p4runtime`: any P4Runtime endpoint already running at --grpc-addr (p4sim-switch,
BMv2, a hardware switch). The other remote kinds open the same way (`open_remote`) and read
the same connection options (`GRPC_OPTIONS`)."""

from __future__ import annotations

from controller.targets.base import Program
from controller.targets.config import ConfigError, TargetConfig, artifacts_program
from controller.targets.registry import Option, TargetKind, int_in
from p4sim import cliargs

PEM = cliargs.input_file(1 << 20, what="PEM file")

GRPC_OPTIONS = (
    Option(
        "--election-id",
        "P4Runtime election id (default 1)",
        type=int_in(1, (1 << 128) - 1, "--election-id"),
        default=1,
    ),
    Option(
        "--connect-timeout",
        "give up on an unreachable server after S seconds (default 5)",
        type=cliargs.duration(0, 3600, "--connect-timeout"),
        default=5.0,
        metavar="S",
    ),
    Option(
        "--grpc-ssl",
        "TLS to the server (simple_switch_grpc --grpc-server-ssl)",
        action="store_true",
        default=False,
    ),
    Option("--grpc-ca", "CA that signed the server's certificate", metavar="PEM", type=PEM),
    Option("--grpc-cert", "our certificate, for mutual TLS", metavar="PEM", type=PEM),
    Option("--grpc-key", "our private key, for mutual TLS", metavar="PEM", type=PEM),
)
# a directory, or none yet: the bmv2 kind compiles into it when it is missing or stale
P4_ARTIFACTS = Option(
    "--p4-artifacts",
    "directory with P4Info and BMv2 JSON compiled elsewhere (p4c)",
    type=cliargs.output_dir("--p4-artifacts"),
)


def credentials(cfg: TargetConfig):
    """grpc.ChannelCredentials from the TLS options (or given ready in options), or None."""
    from controller.targets.base import TargetError
    from p4rtproto.client import P4RuntimeError, tls_credentials

    o = cfg.options
    if o.get("credentials") is not None:
        return o["credentials"]
    if not (o.get("grpc_ssl") or o.get("grpc_ca") or o.get("grpc_cert") or o.get("grpc_key")):
        return None
    try:
        return tls_credentials(o.get("grpc_ca"), o.get("grpc_cert"), o.get("grpc_key"))
    except P4RuntimeError as exc:
        raise TargetError(str(exc), exc.code) from None


def open_remote(cfg: TargetConfig, program, addr: str | None = None):
    """A P4RuntimeTarget at `addr` (default cfg.grpc_addr): AF_PACKET ports of the port map
    open, `program` pushed when cfg.push."""
    from controller.targets.afpacket import AfPacketPorts
    from controller.targets.base import TargetError
    from controller.targets.p4runtime import P4RuntimeTarget

    addr = addr or cfg.grpc_addr
    if not addr:
        raise TargetError(
            f"target {cfg.kind!r} needs a P4Runtime address (--grpc-addr)", "INVALID_ARGUMENT"
        )
    t = P4RuntimeTarget(
        addr,
        cfg.device_id,
        cfg.options.get("election_id", 1),
        None,
        cfg.cpu_port,
        credentials=credentials(cfg),
        connect_timeout_s=cfg.options.get("connect_timeout"),
    )
    try:
        if cfg.port_map:
            t.ports = AfPacketPorts(
                {p: r.iface for p, r in cfg.port_map.items()},
                {p: r.netns for p, r in cfg.port_map.items()},
            )
        if cfg.push and program is not None:
            t.push(program)
    except BaseException:
        t.close()
        raise
    return t


class RemoteKind(TargetKind):
    """A switch reached over P4Runtime; its program is P4 source or p4c's artifacts."""

    options = (*GRPC_OPTIONS, P4_ARTIFACTS)

    def program(self, cfg: TargetConfig):
        if (
            P4_ARTIFACTS in self.options
            and cfg.options.get("p4_artifacts")
            and not isinstance(cfg.program, Program)
        ):
            return artifacts_program(cfg.options["p4_artifacts"])
        return super().program(cfg)

    def open(self, cfg, program=None, process=None):
        return open_remote(cfg, program, process.grpc_addr if process is not None else None)


class P4RuntimeKind(RemoteKind):
    name = "p4runtime"
    help = "any P4Runtime endpoint already running at --grpc-addr"

    def check(self, cfg: TargetConfig, context: str = "cli") -> None:
        if not cfg.grpc_addr:
            raise ConfigError(f"--target {self.name} needs --grpc-addr HOST:PORT")


KIND = P4RuntimeKind()
