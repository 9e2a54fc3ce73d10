"""Field types the schemas share: units, ranges and their JSON Schema (what an editor sees).

A unit field accepts what the files have always taken (a number, or a string with a unit),
parses it with controller.units and refuses .inf, .nan and huge values; its JSON Schema
says the same as a pattern."""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StrictBool, StrictInt, WithJsonSchema

from controller.units import (
    MAX_CABLE_M,
    MAX_SIZE_BYTES,
    MAX_SPEED_BPS,
    ConfigError,
    Size,
    parse_size,
    parse_speed,
    parse_time_ns,
)


def _unit(parse):
    def check(value: Any) -> Any:
        try:
            return parse(value, "")
        except ConfigError as exc:
            raise ValueError(exc.message) from None

    return check


def _int0(value: Any) -> Any:
    """Integers may be written as strings in any base ("0x101"), as the configs always took."""
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?(0[xob])?[0-9a-fA-F_]{1,40}\s*", value):
        try:
            return int(value, 0)
        except ValueError:
            return value
    return value


def _finite_number(value: Any) -> Any:
    """A number as YAML writes one: not a bool, not a string, not .inf or .nan."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {str(value)[:40]!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    return value


def _mac(value: Any) -> Any:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", value):
        raise ValueError(f"expected a MAC address like 02:00:00:00:00:01, got {str(value)[:40]!r}")
    return value.lower()


def _ip(value: Any) -> Any:
    try:
        return str(ipaddress.ip_address(value if isinstance(value, str) else ""))
    except ValueError:
        raise ValueError(f"not an IP address: {str(value)[:40]!r}") from None


def _prefix(value: Any) -> Any:
    try:
        return str(ipaddress.ip_network(value if isinstance(value, str) else "", strict=False))
    except ValueError:
        raise ValueError(f"not an IP prefix: {str(value)[:40]!r}") from None


_SIZE_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": MAX_SIZE_BYTES},
        {
            "type": "string",
            "pattern": r"^\s*[0-9]*\.?[0-9]+\s*(?i:b|kb|mb|gb|kib|mib|gib|pkts?|packets?)?\s*$",
        },
    ],
    "description": "bytes (5000, 5KB, 200KiB, 1MB) or packets ('40 pkts')",
}
_SPEED_SCHEMA = {
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SPEED_BPS},
        {"type": "string", "pattern": r"^\s*[0-9]*\.?[0-9]+\s*[kKmMgGtT]?(bps|b/s|b)?\s*$"},
    ],
    "description": "bits per second (10G, 25G, 100Gbps, 4M)",
}

TimeField = Annotated[
    int,
    BeforeValidator(_unit(parse_time_ns)),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": r"^\s*[0-9]*\.?[0-9]+\s*(ns|us|ms|s)?\s*$"},
            ],
            "description": "500us, 1ms, 3s (a bare number: seconds)",
        }
    ),
]
SizeField = Annotated[Size, BeforeValidator(_unit(parse_size)), WithJsonSchema(_SIZE_SCHEMA)]


def _positive(size: Size) -> Size:
    if size.value <= 0:
        raise ValueError(f"must be a positive size, got {size}")
    return size


# a flow's bytes and message: 0 would post nothing (or loop forever)
PositiveSize = Annotated[
    Size,
    BeforeValidator(_positive),
    BeforeValidator(_unit(parse_size)),
    WithJsonSchema(
        {
            **_SIZE_SCHEMA,
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SIZE_BYTES},
                _SIZE_SCHEMA["anyOf"][1],
            ],
        }
    ),
]
SpeedField = Annotated[float, BeforeValidator(_unit(parse_speed)), WithJsonSchema(_SPEED_SCHEMA)]
MIN_LINK_BPS, MAX_LINK_BPS = 1e6, 1.6e12


def _link_speed(bps: float) -> float:
    if not MIN_LINK_BPS <= bps <= MAX_LINK_BPS:
        raise ValueError(f"{bps:g} b/s is not a link speed in [1 Mb/s, 1.6 Tb/s]")
    return bps


# a scenario's link: what a NIC port runs at (1 Mb/s .. 1.6 Tb/s)
LinkSpeed = Annotated[
    float,
    BeforeValidator(_link_speed),
    BeforeValidator(_unit(parse_speed)),
    WithJsonSchema(_SPEED_SCHEMA),
]
Mac = Annotated[
    str,
    BeforeValidator(_mac),
    WithJsonSchema({"type": "string", "pattern": "^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"}),
]
IpAddr = Annotated[
    str, BeforeValidator(_ip), WithJsonSchema({"type": "string", "format": "ip-address"})
]
IpPrefix = Annotated[
    str, BeforeValidator(_prefix), WithJsonSchema({"type": "string", "description": "10.9.0.0/16"})
]
# (constraints before the validator: after it, pydantic's JSON Schema shows them as "ge"/"le")
Metres = Annotated[
    float, Field(ge=0, le=MAX_CABLE_M, allow_inf_nan=False), BeforeValidator(_finite_number)
]


def _probability(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f"must be in (0, 1], got {str(value)[:40]!r}")
    return float(value)


Probability = Annotated[
    float,
    BeforeValidator(_probability),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
]


def Number(lo: float, hi: float, lo_open: bool = False) -> Any:  # noqa: N802 (a type)
    """A finite number in [lo, hi] (or (lo, hi]); not a bool, not a string."""
    bound = {"gt": lo} if lo_open else {"ge": lo}
    return Annotated[
        float,
        Field(le=hi, allow_inf_nan=False, strict=False, **bound),
        BeforeValidator(_finite_number),
    ]


def Int(lo: int, hi: int) -> Any:  # noqa: N802 (a type, read as one)
    """An integer in lo..hi (bools are not integers; "0x101" is)."""
    return Annotated[StrictInt, Field(ge=lo, le=hi), BeforeValidator(_int0)]


Port = Int(0, 510)
Qpn = Int(1, 0xFFFFFF)
TrafficClass = Int(0, 7)
Flag = StrictBool
