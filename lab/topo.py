"""Lab topologies, described once and built by either backend (netns or Mininet).

Every host hangs off one switch port. A host's IP address is its RoCE address (the GID its
agent puts in frames), not a kernel address: like an RDMA NIC, the agent handles its own
traffic, and no interface on either end of a link carries a kernel address.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Host:
    name: str  # logical name ("h1"); backends derive unique kernel names from it
    port: int  # switch port the host is attached to
    mac: str
    ip: str  # IPv4 RoCE address of the host's agent
    qpn: int  # the RC queue pair number its agent uses


@dataclass(frozen=True)
class Topology:
    name: str
    hosts: tuple[Host, ...]
    prefix_len: int = 24
    description: str = ""

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"topology {self.name} has no host {name!r}")

    @property
    def ports(self) -> list[int]:
        return [h.port for h in self.hosts]


def _host(i: int) -> Host:
    return Host(
        name=f"h{i}", port=i, mac=f"02:00:00:00:00:{i:02x}", ip=f"10.0.0.{i}", qpn=0x100 + i
    )


def pair() -> Topology:
    """Two hosts on one switch: a RoCEv2 exchange in both directions."""
    return Topology("pair", (_host(1), _host(2)), description="2 hosts, 1 switch")


def incast(senders: int = 4) -> Topology:
    """`senders`:1 incast: h1..hN send to h(N+1) through one egress port."""
    return Topology(
        "incast",
        tuple(_host(i) for i in range(1, senders + 2)),
        description=f"{senders}:1 incast, {senders + 1} hosts, 1 switch",
    )


TOPOLOGIES = {"pair": pair, "incast": incast}
