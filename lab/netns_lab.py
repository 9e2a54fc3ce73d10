"""Build a lab topology with plain network namespaces and veth pairs (no Mininet).

One namespace per host (`rl<pid>h<i>`) whose `eth0` is one end of a veth pair; the other
end (`rl<pid>p<port>`) stays in the root namespace without an address and becomes a switch
port. The switch (whatever target kind the lab runs: p4sim-switch, simple_switch_grpc, ...)
runs in the root namespace, so its gRPC server is on 127.0.0.1.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from controller.targets import netns, registry
from controller.targets.config import TargetConfig
from controller.targets.switches import SwitchProcess

from .topo import Host, Topology

HOST_IFACE = "eth0"


class NetnsLab:
    backend = "netns"

    def __init__(self, topology: Topology, log_dir: str | Path | None = None):
        self.topology = topology
        self.log_dir = log_dir
        self.nets = netns.NetnsSet()
        self.switch: SwitchProcess | None = None
        self.ports: dict[int, str] = {}
        self._ns: dict[str, str] = {}
        try:
            for h in topology.hosts:
                ns = self.nets.add_netns(netns.name("h", h.port))
                self._ns[h.name] = ns
                outer = netns.name("p", h.port)
                # No kernel address: the agent is the RoCE NIC and owns h.ip; with an address
                # the kernel would answer RoCE with ICMP port unreachable (and ARP for it).
                self.nets.add_veth(outer, HOST_IFACE, ns, mac=h.mac)
                self.ports[h.port] = outer
        except BaseException:
            self.close()
            raise

    # -- the switch
    def start_switch(self, cfg: TargetConfig) -> SwitchProcess:
        """Start the switch of kind `cfg.kind` (one that can start) on the lab's ports."""
        self.switch = registry.get(cfg.kind).start(cfg, self.ports, log_dir=self.log_dir)
        return self.switch

    # -- hosts
    def netns_of(self, host: Host) -> str:
        return self._ns[host.name]

    def host_iface(self, host: Host) -> str:
        return HOST_IFACE

    def popen_host(self, host: Host, argv: Sequence[str], **kw) -> subprocess.Popen:
        return self.nets.popen(argv, netns=self._ns[host.name], **kw)

    def close(self) -> None:
        if self.switch is not None:
            self.switch.close()
        self.nets.close()

    def __enter__(self) -> NetnsLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
