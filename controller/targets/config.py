"""What a target is opened from, whoever asks (the `rocelab` CLI, the pytest plugin, the
lab, the fabric): which kind, where it is, which ports, which program. Options a single kind
reads (its `TargetKind.options`) arrive in `TargetConfig.options` by their argparse dest.
Checking a config against the kinds is the registry's (`registry.validate`): this module
is below it and imports no kind.

Kept free of pytest and argparse.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Program
from .program import DEFAULT_PROGRAM, from_artifacts

# BMv2 limits a queue in packets/s, p4sim a port in bits/s: a rate given in bits/s is
# converted for BMv2 at this frame size on the wire (the overload tests' frames).
RATE_FRAME_BYTES = 1250
DEFAULT_KIND = "p4sim"  # what a config names when it names no kind (and compiles P4 source)


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


def port_refs(port_map: dict[int, str] | dict[int, PortRef] | None) -> dict[int, PortRef]:
    """A port map given as interface names or as PortRefs, as PortRefs."""
    return {
        int(p): r if isinstance(r, PortRef) else PortRef(str(r))
        for p, r in (port_map or {}).items()
    }


@dataclass
class TargetConfig:
    """Everything a target kind needs to check, start and open a target.

    `program`: P4 source, or a ready Program (artifacts from p4c given another way).
    `port_map`: switch port -> the interface that stands for it (AF_PACKET).
    `port_rates`: egress limits (bits/s) to set on a switch started here or in this process;
    a target that limits packets/s converts them at `rate_frame_bytes` on the wire.
    `options`: values of the kinds' own options, by dest (`bmv2_docker`, `p4_artifacts`, ...).
    """

    kind: str = DEFAULT_KIND
    grpc_addr: str | None = None
    device_id: int = 1
    port_map: dict[int, PortRef] = field(default_factory=dict)
    program: Path | Program = DEFAULT_PROGRAM
    cpu_port: int = 255
    push: bool = True
    seed: int = 0
    port_rates: dict[int, float] = field(default_factory=dict)
    rate_frame_bytes: int = RATE_FRAME_BYTES  # for targets limiting packets/s (BMv2)
    options: dict[str, Any] = field(default_factory=dict)


def find_artifacts(directory: str | os.PathLike) -> tuple[Path, Path]:
    """The P4Info file and the device config in `directory`: as p4c-bm2-ss writes them
    (NAME.p4info.txtpb + NAME.json), or a vendor toolchain's `device_config.bin`."""
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(f"--p4-artifacts {d}: not a directory")
    infos = sorted(
        p
        for pat in ("*.p4info.txtpb", "*.p4info.txt", "*.p4info.pb", "*.p4info.bin")
        for p in d.glob(pat)
    )
    configs = sorted(
        p for pat in ("*.json", "device_config*") for p in d.glob(pat) if ".p4info" not in p.name
    )
    if len(infos) != 1 or len(set(configs)) != 1:
        raise ConfigError(
            f"--p4-artifacts {d}: expected one *.p4info.(txtpb|txt|pb|bin) and one "
            f"device config (*.json or device_config*), found "
            f"{sorted(p.name for p in infos + configs)}"
        )
    return infos[0], configs[0]


def artifacts_program(directory: str | os.PathLike) -> Program:
    """P4Info + BMv2 JSON compiled elsewhere (p4c-bm2-ss), as one Program."""
    info, js = find_artifacts(directory)
    return from_artifacts(info, js)
