"""The driver's view of hdl/rtl/roce_np.v: its register map and the writes that program it.

The map is defined here once for Python (testbenches, co-simulation, bring-up); the RTL
header comment is the other side, and the NP testbench proves the two agree by behaviour
(a CNP built from these writes equals the packet library's CNP byte for byte).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.packets.build import ip_to_int, mac_to_int

REG_INTERVAL = 0x00
REG_MAC_HI = 0x01
REG_MAC_LO = 0x02
REG_IP = 0x03
REG_DSCP = 0x04
SLOT_BASE = 0x10
SLOT_STRIDE = 8
SLOTS = 4  # roce_rx's default SLOTS parameter
VALID = 1 << 31


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

    def writes(self) -> list[tuple[int, int]]:
        """(address, value) pairs, in the order a driver writes them."""
        if len(self.qps) > SLOTS:
            raise ValueError(f"{len(self.qps)} QP contexts; the NP has {SLOTS} slots")
        if not 0 <= self.interval_cycles < 1 << 31:
            raise ValueError(f"interval of {self.interval_cycles} cycles outside 0..2^31-1")
        mac = mac_to_int(self.local_mac)
        out = [(REG_INTERVAL, self.interval_cycles), (REG_MAC_HI, mac >> 32),
               (REG_MAC_LO, mac & 0xFFFFFFFF), (REG_IP, ip_to_int(self.local_ip)),
               (REG_DSCP, self.cnp_dscp & 0x3F)]
        for i, q in enumerate(self.qps):
            base = SLOT_BASE + SLOT_STRIDE * i
            pmac = mac_to_int(q.peer_mac)
            # the context fields first, `valid` last: the slot never matches half-written
            out += [(base + 1, q.peer_qpn), (base + 2, ip_to_int(q.peer_ip)),
                    (base + 3, pmac >> 32), (base + 4, pmac & 0xFFFFFFFF), (base + 5, q.sport),
                    (base + 0, VALID | q.local_qpn)]
        return out
