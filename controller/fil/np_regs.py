"""The driver's view of hdl/rtl/roce_np.v: its register map and the writes that program it.

The map is defined here once for Python (testbenches, co-simulation, bring-up); the RTL
header comment is the other side, and the NP testbench proves the two agree by behaviour
(a CNP built from these writes equals the packet library's CNP byte for byte).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from controller.packets.build import ip_to_int, mac_to_int

REG_INTERVAL = 0x00
REG_MAC_HI = 0x01
REG_MAC_LO = 0x02
REG_IP = 0x03
REG_DSCP = 0x04
REG_PCP = 0x05
REG_IP6 = 0x06  # 0x06..0x09, bits 127:96 first
SLOT_BASE = 0x10
SLOT_STRIDE = 16
SLOTS = 4  # roce_rx's default SLOTS parameter
VALID = 1 << 31
IPV6 = 1 << 30


def _words(ip: str) -> list[int]:
    """An address as the four 32-bit words of its 128-bit slot field, high first."""
    v = ip_to_int(ip)
    return [(v >> s) & 0xFFFFFFFF for s in (96, 64, 32, 0)]


def _is_v6(ip: str) -> bool:
    return ipaddress.ip_address(ip).version == 6


@dataclass(frozen=True)
class QpContext:
    """One flow the NP answers: data to `local_qpn` from `peer_ip` gets CNPs to `peer_qpn`
    at `peer_mac` (the next hop: the router's MAC when routed), from UDP port `sport`."""

    local_qpn: int
    peer_qpn: int
    peer_ip: str
    peer_mac: str
    sport: int


@dataclass(frozen=True)
class NpConfig:
    local_mac: str
    local_ip: str
    cnp_dscp: int
    interval_cycles: int
    qps: tuple[QpContext, ...]
    cnp_pcp: int = 0  # the CNP's 802.1Q PCP (CNPs are tagged when the data frame was)
    local_ip6: str | None = None  # a second local address, IPv6 (local_ip may be either)

    def writes(self) -> list[tuple[int, int]]:
        """(address, value) pairs, in the order a driver writes them."""
        if len(self.qps) > SLOTS:
            raise ValueError(f"{len(self.qps)} QP contexts; the NP has {SLOTS} slots")
        if not 0 <= self.interval_cycles < 1 << 31:
            raise ValueError(f"interval of {self.interval_cycles} cycles outside 0..2^31-1")
        mac = mac_to_int(self.local_mac)
        out = [
            (REG_INTERVAL, self.interval_cycles),
            (REG_MAC_HI, mac >> 32),
            (REG_MAC_LO, mac & 0xFFFFFFFF),
            (REG_DSCP, self.cnp_dscp & 0x3F),
            (REG_PCP, self.cnp_pcp & 0x7),
        ]
        for ip in (self.local_ip, self.local_ip6):
            if ip is not None and _is_v6(ip):
                out += [(REG_IP6 + k, w) for k, w in enumerate(_words(ip))]
            elif ip is not None:
                out.append((REG_IP, ip_to_int(ip)))
        for i, q in enumerate(self.qps):
            base = SLOT_BASE + SLOT_STRIDE * i
            pmac = mac_to_int(q.peer_mac)
            # the context fields first, `valid` last: the slot never matches half-written
            out += [(base + 1, q.peer_qpn)]
            out += [(base + 2 + k, w) for k, w in enumerate(_words(q.peer_ip))]
            out += [
                (base + 6, pmac >> 32),
                (base + 7, pmac & 0xFFFFFFFF),
                (base + 8, q.sport),
                (base + 0, VALID | (IPV6 if _is_v6(q.peer_ip) else 0) | q.local_qpn),
            ]
        return out
