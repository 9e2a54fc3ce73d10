"""p4sim's P4Runtime server: a drop-in for BMv2's simple_switch_grpc.

`P4RuntimeServer` serves P4Runtime 1.4 over gRPC for one p4sim switch; the device config
it accepts is described in `p4sim.server.pipeline` (P4 source, not a BMv2 JSON).
`p4sim-switch` (`p4sim.server_cli`) is its command line.
"""

from p4rtproto.errors import RequestError
from p4sim.server.pipeline import FORMAT as DEVICE_CONFIG_FORMAT
from p4sim.server.pipeline import make_device_config, parse_device_config
from p4sim.server.service import API_VERSION, P4RuntimeServer

__all__ = [
    "API_VERSION",
    "DEVICE_CONFIG_FORMAT",
    "P4RuntimeServer",
    "RequestError",
    "make_device_config",
    "parse_device_config",
]
