"""p4sim's P4Runtime server: a drop-in for BMv2's simple_switch_grpc.

`P4RuntimeServer` serves P4Runtime 1.4 over gRPC for one p4sim switch; the device config
it accepts is described in `p4sim.server.pipeline` (P4 source, not a BMv2 JSON).
`p4sim-switch` (`p4sim.server_cli`) is its command line.

The names below are imported on first use (PEP 562): importing a submodule such as
p4sim.server.native must not import p4sim.runtime.tables, whose import fixes the process's
write path (`p4sim-switch --profile` is read before that import).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from p4rtproto.errors import RequestError

if TYPE_CHECKING:
    from p4sim.server.pipeline import FORMAT as DEVICE_CONFIG_FORMAT
    from p4sim.server.pipeline import make_device_config, parse_device_config
    from p4sim.server.service import API_VERSION, P4RuntimeServer

_LAZY = {
    "API_VERSION": ("p4sim.server.service", "API_VERSION"),
    "DEVICE_CONFIG_FORMAT": ("p4sim.server.pipeline", "FORMAT"),
    "P4RuntimeServer": ("p4sim.server.service", "P4RuntimeServer"),
    "make_device_config": ("p4sim.server.pipeline", "make_device_config"),
    "parse_device_config": ("p4sim.server.pipeline", "parse_device_config"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


__all__ = [
    "API_VERSION",
    "DEVICE_CONFIG_FORMAT",
    "P4RuntimeServer",
    "RequestError",
    "make_device_config",
    "parse_device_config",
]
