"""Data-plane targets behind one interface (see base.Target).

Which kinds of target exist, their options, how they start and open: one module per kind
in `kinds/`, found by `registry`. `open_target(kind, ...)` opens one from Python.
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
from .program import DEFAULT_PROGRAM, from_artifacts
from .registry import from_p4

__all__ = [
    "CloneSession",
    "CounterCell",
    "CounterQuery",
    "DefaultAction",
    "Entity",
    "Exact",
    "Lpm",
    "MeterRates",
    "MulticastGroup",
    "Optional_",
    "OutputPacket",
    "PacketIn",
    "Program",
    "Query",
    "Range",
    "RegisterCell",
    "RegisterQuery",
    "TableEntry",
    "TableQuery",
    "Target",
    "TargetError",
    "Ternary",
    "DEFAULT_PROGRAM",
    "from_artifacts",
    "from_p4",
    "open_target",
]


def open_target(
    kind: str = "p4sim",
    *,
    program: str | os.PathLike[str] | Program | None = None,
    grpc_addr: str | None = None,
    device_id: int = 0,
    election_id: int = 1,
    port_map: Mapping[int, str] | None = None,
    push: bool = True,
    cpu_port: int = 255,
    seed: int = 0,
    credentials: Any = None,
    connect_timeout_s: float | None = None,
) -> Target:
    """A ready target of `kind` (see `registry.names()`); with `push`, the program (default
    p4src/roce_switch.p4) installed.

    device_id defaults to 0, what p4sim-switch and simple_switch_grpc start with;
    credentials: grpc.ChannelCredentials for TLS (p4rtproto.client.tls_credentials)."""
    from .config import ConfigError, TargetConfig, port_refs
    from .registry import open_config

    cfg = TargetConfig(
        kind=kind,
        grpc_addr=grpc_addr,
        device_id=device_id,
        port_map=port_refs(port_map),
        program=program or DEFAULT_PROGRAM,
        cpu_port=cpu_port,
        push=push,
        seed=seed,
        options={
            "election_id": election_id,
            "credentials": credentials,
            "connect_timeout": connect_timeout_s,
        },
    )
    try:
        return open_config(cfg)
    except ConfigError as e:
        raise TargetError(str(e), "INVALID_ARGUMENT") from None
