"""Units of the files rocelab reads: sizes (bytes or packets) and speeds, with the bounds
that keep the buffer arithmetic finite, and the error that names a key."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(b|kb|mb|gb|kib|mib|gib|pkts?|packets?)?\s*$", re.I)
_SPEED = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(bps|b/s|b)?\s*$", re.I)
_SIZE_UNITS = {
    None: 1,
    "b": 1,
    "kb": 1000,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}


class ConfigError(ValueError):
    """A problem with one key of the config: `key` is its dotted path, `where` the file's
    `path:line` when known (shown first, as compilers do)."""

    def __init__(self, key: str, message: str, where: str = ""):
        super().__init__(f"{where + ': ' if where else ''}{key}: {message}")
        self.key = key
        self.message = message
        self.where = where


@dataclass(frozen=True)
class Size:
    """A size in bytes or in packets (as written)."""

    value: float
    packets: bool = False

    def to_packets(self, frame_bytes: int) -> int:
        return int(self.value) if self.packets else math.ceil(self.value / frame_bytes)

    def to_bytes(self, frame_bytes: int) -> int:
        return int(self.value * frame_bytes) if self.packets else int(self.value)

    def __str__(self) -> str:
        return f"{int(self.value)} pkts" if self.packets else f"{int(self.value)} B"


# Bounds that keep the buffer arithmetic finite: far beyond any switch, far below overflow.
MAX_SIZE_BYTES = 10**12
MAX_SIZE_PACKETS = 10**9
MAX_SPEED_BPS = 10e12  # 10 Tb/s
MAX_CABLE_M = 1e9  # 5 s of propagation: controller.fabric turns emulated link delays into cable


def _finite(value: float, key: str, what: str, hi: float, shown: Any) -> float:
    """`value` if finite and in [0, hi]; .inf, .nan and 5,000-digit numbers are errors here."""
    if not math.isfinite(value) or not 0 <= value <= hi:
        raise ConfigError(key, f"expected {what} in 0..{hi:g}, got {str(shown)[:40]!r}")
    return value


def parse_size(value: Any, key: str) -> Size:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(key, f"expected a size like 5KB or '40 pkts', got {str(value)[:40]!r}")
    if isinstance(value, int | float):
        return Size(_finite(float(value), key, "a size in bytes", MAX_SIZE_BYTES, value))
    m = _SIZE.match(value)
    if not m:
        raise ConfigError(key, f"expected a size like 5KB, 200KiB or '40 pkts', got {value[:40]!r}")
    unit = (m.group(2) or "").lower() or None
    if unit and unit.startswith("p"):
        return Size(
            _finite(float(m.group(1)), key, "a number of packets", MAX_SIZE_PACKETS, value), True
        )
    return Size(
        _finite(
            float(m.group(1)) * _SIZE_UNITS[unit], key, "a size in bytes", MAX_SIZE_BYTES, value
        )
    )


def parse_speed(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(
            key, f"expected a speed like 10G, 25G or 100Gbps, got {str(value)[:40]!r}"
        )
    if isinstance(value, int | float):
        return _finite(float(value), key, "a speed in b/s", MAX_SPEED_BPS, value)
    m = _SPEED.match(value)
    if not m:
        raise ConfigError(key, f"expected a speed like 10G, 25G or 100Gbps, got {value[:40]!r}")
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    return _finite(float(m.group(1)) * mult, key, "a speed in b/s", MAX_SPEED_BPS, value)


_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ns|us|ms|s)?\s*$")
_TIME_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1_000_000_000}
MAX_TIME_S = 3600.0


def parse_time_ns(value: Any, key: str) -> int:
    """A time in ns from 500us, 1ms, 3s or a bare number of seconds (finite, <= MAX_TIME_S)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(key, f"expected a time like 500us, 1ms or 3s, got {str(value)[:40]!r}")
    if isinstance(value, int | float):
        return round(_finite(float(value), key, "a time in s", MAX_TIME_S, value) * 1e9)
    m = _TIME.match(value)
    if not m:
        raise ConfigError(key, f"expected a time like 500us, 1ms or 3s, got {value[:40]!r}")
    ns = float(m.group(1)) * _TIME_NS[m.group(2)]
    return round(_finite(ns, key, "a time in ns", MAX_TIME_S * 1e9, value))
