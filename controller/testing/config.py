"""What the pytest options describe: which target, where it is, which ports, which program.

Kept free of pytest so the lab and the bring-up commands share it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from controller.targets import Program, from_artifacts

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PROGRAM = REPO_ROOT / "p4src" / "roce_switch.p4"
TARGET_KINDS = ("p4sim", "p4sim-grpc", "bmv2", "hw")
DEFAULT_PORTS = (1, 2, 3, 4)  # data ports the plugin creates when it builds veths itself
# Overload tests need an egress slower than a sender: on every switch the plugin runs (the
# in-process p4sim, p4sim-switch, BMv2 it starts) port 4 sends 100 frames/s of 1250 bytes on
# the wire. p4sim's rate is in bits/s, BMv2's `set_queue_rate` in packets/s (of each
# priority queue of the port): the two agree for those frames.
RATE_LIMITED_PORT = 4
RATE_LIMITED_PPS = 100
RATE_LIMITED_BPS = RATE_LIMITED_PPS * 1250 * 8


class ConfigError(ValueError):
    """A bad combination of options; the message says which and what to do."""


@dataclass(frozen=True)
class PortRef:
    """The test side of one switch port: an interface, in a namespace or in ours."""

    iface: str
    netns: str | None = None

    def __str__(self) -> str:
        return f"{self.netns}/{self.iface}" if self.netns else self.iface


def parse_port_map(text: str | None) -> dict[int, PortRef]:
    """'1=veth1,2=ns1/eth0' -> {1: PortRef('veth1'), 2: PortRef('eth0', 'ns1')}.

    An interface name cannot contain '/', so NETNS/IFACE is unambiguous."""
    out: dict[int, PortRef] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        port, sep, where = item.partition("=")
        if not sep or not port.strip().isdigit() or not where.strip():
            raise ConfigError(f"--port-map item {item!r}: expected PORT=IFACE or PORT=NETNS/IFACE")
        ns, slash, iface = where.strip().rpartition("/")
        if int(port) in out:
            raise ConfigError(f"--port-map: port {port} given twice")
        out[int(port)] = PortRef(iface, ns if slash else None)
    return out


@dataclass
class TargetConfig:
    kind: str = "p4sim"
    grpc_addr: str | None = None
    device_id: int = 1
    port_map: dict[int, PortRef] = field(default_factory=dict)
    p4_artifacts: Path | None = None
    bmv2_docker: str | None = None
    program: Path = DEFAULT_PROGRAM
    cpu_port: int = 255

    def validate(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise ConfigError(f"--target {self.kind}: one of {', '.join(TARGET_KINDS)}")
        if self.kind == "hw":
            missing = [opt for opt, v in (("--grpc-addr", self.grpc_addr),
                                          ("--port-map", self.port_map),
                                          ("--p4-artifacts", self.p4_artifacts)) if not v]
            if missing:
                raise ConfigError(f"--target hw needs {', '.join(missing)} "
                                  "(see docs/bringup.md)")
        if self.kind == "bmv2" and self.grpc_addr is None and self.p4_artifacts is None:
            raise ConfigError("--target bmv2 needs --p4-artifacts DIR with the P4Info and BMv2 "
                              "JSON from p4c (make p4-bmv2 writes build/p4)")
        if self.bmv2_docker and self.kind != "bmv2":
            raise ConfigError("--bmv2-docker only applies to --target bmv2")
        if self.kind == "p4sim" and self.port_map:
            raise ConfigError("--port-map needs a switch outside this process "
                              "(--target p4sim-grpc, bmv2 or hw)")

    @property
    def virtual_time(self) -> bool:
        return self.kind == "p4sim"


def find_artifacts(directory: str | os.PathLike) -> tuple[Path, Path]:
    """The P4Info file and the device config in `directory`: as p4c-bm2-ss writes them
    (NAME.p4info.txtpb + NAME.json), or a vendor toolchain's `device_config.bin`."""
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(f"--p4-artifacts {d}: not a directory")
    infos = sorted(p for pat in ("*.p4info.txtpb", "*.p4info.txt", "*.p4info.pb",
                                 "*.p4info.bin") for p in d.glob(pat))
    configs = sorted(p for pat in ("*.json", "device_config*") for p in d.glob(pat)
                     if ".p4info" not in p.name)
    if len(infos) != 1 or len(set(configs)) != 1:
        raise ConfigError(f"--p4-artifacts {d}: expected one *.p4info.(txtpb|txt|pb|bin) and one "
                          f"device config (*.json or device_config*), found "
                          f"{sorted(p.name for p in infos + configs)}")
    return infos[0], configs[0]


def artifacts_program(directory: str | os.PathLike) -> Program:
    """P4Info + BMv2 JSON compiled elsewhere (p4c-bm2-ss), as one Program."""
    info, js = find_artifacts(directory)
    return from_artifacts(info, js)
