"""Data-plane targets behind one interface (see base.Target).

`open_target(kind, ...)` is what the CLI and the pytest plugin call:
- "p4sim": the embedded switch in this process (virtual time), running `program`;
- "p4runtime" (also "p4sim-grpc", "bmv2", "hw"): a P4Runtime endpoint at `grpc_addr`,
  optionally with a port map of AF_PACKET interfaces.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .base import (
    CloneSession,
    CounterCell,
    CounterQuery,
    DefaultAction,
    Entity,
    Exact,
    Lpm,
    MeterRates,
    MulticastGroup,
    Optional_,
    OutputPacket,
    PacketIn,
    Program,
    Query,
    Range,
    RegisterCell,
    RegisterQuery,
    TableEntry,
    TableQuery,
    Target,
    TargetError,
    Ternary,
)
from .program import DEFAULT_PROGRAM, from_artifacts, from_p4

__all__ = [
    "CloneSession", "CounterCell", "CounterQuery", "DefaultAction", "Entity", "Exact", "Lpm",
    "MeterRates", "MulticastGroup", "Optional_", "OutputPacket", "PacketIn", "Program", "Query",
    "Range", "RegisterCell", "RegisterQuery", "TableEntry", "TableQuery", "Target",
    "TargetError", "Ternary", "DEFAULT_PROGRAM", "from_artifacts", "from_p4", "open_target",
]

REMOTE_KINDS = ("p4runtime", "p4sim-grpc", "bmv2", "hw")


def open_target(kind: str = "p4sim", *, program: str | os.PathLike[str] | Program | None = None,
                grpc_addr: str | None = None, device_id: int = 0, election_id: int = 1,
                port_map: Mapping[int, str] | None = None, push: bool = True,
                cpu_port: int = 255, seed: int = 0, credentials: Any = None,
                connect_timeout_s: float | None = None) -> Target:
    """A ready target; with `push`, the program (default p4src/roce_switch.p4) installed.

    device_id defaults to 0, what p4sim-switch and simple_switch_grpc start with;
    credentials: grpc.ChannelCredentials for TLS (p4rtproto.client.tls_credentials)."""
    if kind == "p4sim":
        from .p4sim import P4SimTarget

        return P4SimTarget(program if program is not None else DEFAULT_PROGRAM, cpu_port, seed)
    if kind in REMOTE_KINDS:
        if not grpc_addr:
            raise TargetError(f"target {kind!r} needs a P4Runtime address (--grpc-addr)",
                              "INVALID_ARGUMENT")
        from .p4runtime import P4RuntimeTarget

        target = P4RuntimeTarget(grpc_addr, device_id, election_id, port_map, cpu_port,
                                 credentials=credentials, connect_timeout_s=connect_timeout_s)
        if push:
            prog = program if isinstance(program, Program) else from_p4(program or DEFAULT_PROGRAM)
            try:
                target.push(prog)
            except BaseException:
                target.close()
                raise
        return target
    raise TargetError(f"unknown target kind {kind!r} (p4sim, {', '.join(REMOTE_KINDS)})",
                      "INVALID_ARGUMENT")
