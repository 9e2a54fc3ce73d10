"""Generate the STF tests of p4src/roce_switch.p4 (one file per behaviour).

Input frames are built with scapy (so IPv4 checksums and RoCE ICRCs are right); expected
frames are the input bytes with exactly the fields the switch changes rewritten here
(MACs, TTL/hop limit, ECN, IPv4 checksum), and the frames the switch creates (PFC, CNP)
are built with scapy again. Run `python p4src/tests/gen_stf.py` after changing a case;
`--check` exits 1 when a committed .stf differs from what this script writes.

Conventions (see p4src/README.md): PFC frames for port P leave through clone session
256 + P, CNPs for a data packet that came in on port P through session 768 + P.
Time-dependent behaviour (PFC refresh, CNP interval) is pinned with intervals of 0 or
10^12 us so the expectation holds on BMv2 (wall clock) and p4sim (virtual time) alike.
"""

from __future__ import annotations

import struct
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from scapy.contrib.roce import BTH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

HERE = Path(__file__).resolve().parent

ROUTER_MAC = "00:00:00:00:00:fe"
PORT_MACS = {p: f"00:00:00:00:01:{p:02x}" for p in range(8)}
HOST_MAC = {p: f"02:00:00:00:00:{p:02x}" for p in range(8)}
PFC_SESSION_BASE = 256
CNP_SESSION_BASE = 768
CPU_PORT = 255
BIG_US = 10**12  # an interval no test run reaches
PMAX_100 = 1 << 24  # Pmax = 100% in units of 2^-24

OP_SEND_ONLY = 0x04
OP_WRITE_ONLY = 0x0A
OP_ACK = 0x11
OP_CNP = 0x81


def mac(s: str) -> bytes:
    return bytes(int(x, 16) for x in s.split(":"))


def mac_hex(s: str) -> str:
    return "0x" + s.replace(":", "")


def ip4_int(a: str) -> int:
    return int.from_bytes(bytes(int(x) for x in a.split(".")), "big")


def ip6_int(a: str) -> int:
    import ipaddress

    return int(ipaddress.IPv6Address(a))


def pad60(b: bytes) -> bytes:
    return b + bytes(max(0, 60 - len(b)))


# ---------------------------------------------------------------- frame builders


def roce_v2(
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    smac: str = HOST_MAC[1],
    dmac: str = HOST_MAC[2],
    dqpn: int = 0x12,
    psn: int = 0,
    opcode: int = OP_SEND_ONLY,
    dscp: int = 26,
    ecn: int = 2,
    ttl: int = 64,
    sport: int = 0xC001,
    vlan: tuple[int, int] | None = None,  # (pcp, vid)
    payload: bytes = b"\x00" * 16,
) -> bytes:
    """A RoCEv2 RC packet over IPv4 or IPv6 (chosen by the address form)."""
    l2 = Ether(src=smac, dst=dmac)
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=vlan[0], vlan=vlan[1])
    if ":" in src:
        l3 = IPv6(src=src, dst=dst, tc=(dscp << 2) | ecn, fl=0, hlim=ttl)
    else:
        l3 = IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl, id=1, flags="DF")
    body = payload
    if opcode in (0x06, 0x0A, 0x0B, 0x0C):  # RETH
        body = struct.pack("!QII", 0x1000, 0x77, len(payload)) + payload
    elif opcode in (0x13, 0x14):  # AtomicETH: va, rkey, swap/add, compare
        body = struct.pack("!QIQQ", 0x2000, 0x77, 5, 9) + payload
    pkt = (
        l2
        / l3
        / UDP(sport=sport, dport=4791, chksum=0)
        / BTH(opcode=opcode, dqpn=dqpn, psn=psn, ackreq=1)
        / Raw(body)
    )
    return pad60(bytes(pkt))


def rocev1(
    smac: str = HOST_MAC[1],
    dmac: str = HOST_MAC[2],
    dqpn: int = 0x12,
    psn: int = 0,
    tclass: int = 26 << 2,
) -> bytes:
    """RoCEv1: EtherType 0x8915, 40-byte GRH, BTH, payload, ICRC (computed here)."""
    sgid = bytes.fromhex("fe800000000000000000000000000001")
    dgid = bytes.fromhex("fe800000000000000000000000000002")
    payload = bytes(16)
    bth = struct.pack(
        "!BBHBBHI", OP_SEND_ONLY, 0, 0xFFFF, 0, (dqpn >> 16) & 0xFF, dqpn & 0xFFFF, psn & 0xFFFFFF
    )
    paylen = len(bth) + len(payload) + 4
    grh = struct.pack("!IHBB", (6 << 28) | (tclass << 20), paylen, 0x1B, 64) + sgid + dgid
    masked_grh = (
        struct.pack("!IHBB", (6 << 28) | (0xFF << 20) | 0xFFFFF, paylen, 0x1B, 0xFF) + sgid + dgid
    )
    masked_bth = bth[:4] + b"\xff" + bth[5:]
    icrc = zlib.crc32(b"\xff" * 8 + masked_grh + masked_bth + payload) & 0xFFFFFFFF
    frame = mac(dmac) + mac(smac) + b"\x89\x15" + grh + bth + payload + struct.pack("<I", icrc)
    return pad60(frame)


def ipv4_fragment() -> bytes:
    """IPv4 fragment at offset 8 bytes (frag 1) carrying what looks like UDP to 4791 and a BTH."""
    fake = (
        struct.pack("!HHHH", 0xC001, 4791, 36, 0)
        + struct.pack("!BBHI", OP_SEND_ONLY, 0, 0xFFFF, 0x12)
        + bytes(4)
        + bytes(16)
    )
    pkt = (
        Ether(src=HOST_MAC[1], dst=HOST_MAC[2])
        / IP(src="10.0.0.1", dst="10.0.0.2", proto=17, frag=1, id=7, ttl=64)
        / Raw(fake)
    )
    return pad60(bytes(pkt))


def plain_ipv4(
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    smac: str = HOST_MAC[1],
    dmac: str = HOST_MAC[2],
    tos: int = 0,
    ttl: int = 64,
) -> bytes:
    """A non-RoCE UDP/IPv4 packet."""
    return pad60(
        bytes(
            Ether(src=smac, dst=dmac)
            / IP(src=src, dst=dst, tos=tos, ttl=ttl, id=7)
            / UDP(sport=1234, dport=5678)
            / Raw(b"rocelab!")
        )
    )


def pfc_frame(src_mac: str, cls: int, quanta: int) -> bytes:
    body = struct.pack("!HH", 0x0101, 1 << cls) + b"".join(
        struct.pack("!H", quanta if i == cls else 0) for i in range(8)
    )
    return pad60(mac("01:80:c2:00:00:01") + mac(src_mac) + b"\x88\x08" + body)


def pause_frame(src_mac: str, time: int) -> bytes:
    return pad60(
        mac("01:80:c2:00:00:01") + mac(src_mac) + b"\x88\x08" + struct.pack("!HH", 0x0001, time)
    )


def cnp_expected(data: bytes, dqpn: int, dscp: int = 48) -> bytes:
    """The CNP the switch builds from a (CE-marked) data frame it received."""
    eth = Ether(data)
    vlan = eth[Dot1Q] if Dot1Q in eth else None
    l2 = Ether(src=eth.dst, dst=eth.src)
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=6, vlan=vlan.vlan)
    if IP in eth:
        ip = eth[IP]
        l3 = IP(src=ip.dst, dst=ip.src, tos=dscp << 2, id=0, flags="DF", ttl=64)
    else:
        ip6 = eth[IPv6]
        l3 = IPv6(src=ip6.dst, dst=ip6.src, tc=dscp << 2, fl=0, hlim=64)
    udp = eth[UDP]
    bth = BTH(data[_bth_offset(data) : _bth_offset(data) + 12] + b"\0\0\0\0")
    cnp = (
        l2
        / l3
        / UDP(sport=udp.sport, dport=4791, chksum=0)
        / BTH(opcode=OP_CNP, becn=1, dqpn=dqpn, pkey=bth.pkey, psn=0)
        / CNPPadding()
    )
    out = bytes(cnp)
    _check_icrc_formula(out)
    return out


def _bth_offset(frame: bytes) -> int:
    off = 14
    et = frame[12:14]
    if et == b"\x81\x00":
        off += 4
        et = frame[16:18]
    off += 20 if et == b"\x08\x00" else 40
    return off + 8


def _check_icrc_formula(cnp: bytes) -> None:
    """The P4 program hashes the masked fields (cnp.p4); prove it equals scapy's ICRC."""
    off, et = _l3_offset(cnp)
    ip_len = 20 if et == b"\x08\x00" else 40
    ip = bytearray(cnp[off : off + ip_len])
    if ip_len == 20:
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
    else:
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
    udp = bytearray(cnp[off + ip_len : off + ip_len + 8])
    udp[6:8] = b"\xff\xff"
    bth = bytearray(cnp[off + ip_len + 8 : off + ip_len + 20])
    bth[4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + bytes(16))
    assert struct.pack("<I", crc) == cnp[-4:], "ICRC formula of cnp.p4 disagrees with scapy"


# ---------------------------------------------------------------- byte rewrites


def _l3_offset(frame: bytes) -> tuple[int, bytes]:
    et = frame[12:14]
    if et == b"\x81\x00":
        return 18, frame[16:18]
    return 14, et


def ipv4_csum(hdr: bytes) -> int:
    s = 0
    for i in range(0, len(hdr), 2):
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def rewrite(
    frame: bytes,
    *,
    dmac: str | None = None,
    smac: str | None = None,
    ttl_dec: bool = False,
    ecn: int | None = None,
) -> bytes:
    """Apply the switch's edits to a frame; fixes the IPv4 header checksum."""
    b = bytearray(frame)
    if dmac is not None:
        b[0:6] = mac(dmac)
    if smac is not None:
        b[6:12] = mac(smac)
    off, et = _l3_offset(frame)
    if et == b"\x08\x00":
        if ttl_dec:
            b[off + 8] -= 1
        if ecn is not None:
            b[off + 1] = (b[off + 1] & 0xFC) | ecn
        b[off + 10 : off + 12] = b"\0\0"
        b[off + 10 : off + 12] = struct.pack("!H", ipv4_csum(bytes(b[off : off + 20])))
    elif et == b"\x86\xdd":
        if ttl_dec:
            b[off + 7] -= 1
        if ecn is not None:
            b[off + 1] = (b[off + 1] & 0xCF) | (ecn << 4)
    elif et == b"\x89\x15" and ecn is not None:
        b[off + 1] = (b[off + 1] & 0xCF) | (ecn << 4)
    return bytes(b)


# ---------------------------------------------------------------- STF writer


@dataclass
class Stf:
    name: str
    title: str
    lines: list[str] = field(default_factory=list)

    def c(self, text: str) -> None:
        self.lines.append(f"# {text}")

    def cmd(self, text: str) -> None:
        self.lines.append(text)

    def add(
        self,
        table: str,
        keys: dict[str, str],
        action: str,
        params: dict[str, int | str] | None = None,
        prio: int | None = None,
    ) -> None:
        k = " ".join(f"{n}:{v}" for n, v in keys.items())
        p = ", ".join(f"{n}:{_num(v)}" for n, v in (params or {}).items())
        pr = f" {prio}" if prio is not None else ""
        self.lines.append(f"add {table}{pr} {k} {action}({p})".replace("  ", " "))

    def setdefault(self, table: str, action: str, params: dict[str, int | str]) -> None:
        p = ", ".join(f"{n}:{_num(v)}" for n, v in params.items())
        self.lines.append(f"setdefault {table} {action}({p})")

    def packet(self, port: int, data: bytes) -> None:
        self.lines.append(f"packet {port} {data.hex().upper()}")

    def expect(self, port: int, data: bytes) -> None:
        self.lines.append(f"expect {port} {data.hex().upper()}$")

    def counter(self, name: str, index: int, value: int, what: str = "packets") -> None:
        """Assert a counter cell (p4c STF `check_counter`); `wait` first drains the switch."""
        if not self.lines or self.lines[-1] != "wait":
            self.lines.append("wait")
        self.lines.append(f"check_counter {name}({index}) {what} == {value}")

    def register(self, name: str, index: int, value: int) -> None:
        if not self.lines or self.lines[-1] != "wait":
            self.lines.append("wait")
        self.lines.append(f"check_register {name} {index} == {value}")

    def text(self) -> str:
        head = [
            f"# {self.title}",
            "# generated by p4src/tests/gen_stf.py: edit the generator, not this file",
            "",
        ]
        return "\n".join(head + self.lines) + "\n"


def _num(v: int | str) -> str:
    return v if isinstance(v, str) else str(v)


def l2(s: Stf, port: int, mac_s: str) -> None:
    s.add("l2_fwd", {"ethernet.dst": mac_hex(mac_s)}, "l2_forward", {"port": port})


def route_v4(s: Stf, prefix: str, plen: int, nhop: int, port: int, dmac: str) -> None:
    s.add(
        "ipv4_lpm", {"ipv4.dst": f"0x{ip4_int(prefix):08x}/{plen}"}, "set_nhop", {"nhop_id": nhop}
    )
    s.add(
        "nexthop",
        {"nhop_id": str(nhop)},
        "set_nexthop",
        {"port": port, "smac": mac_hex(ROUTER_MAC), "dmac": mac_hex(dmac)},
    )


# ---------------------------------------------------------------- the cases


def case_l2() -> Stf:
    s = Stf(
        "l2_switching",
        "L2: destination MAC -> port; unknown MAC dropped; flooding prunes the ingress port",
    )
    l2(s, 2, HOST_MAC[2])
    l2(s, 1, HOST_MAC[1])
    s.c("known destination: forwarded unchanged (RoCEv2 and plain IPv4)")
    f = roce_v2()
    s.packet(1, f)
    s.expect(2, f)
    g = plain_ipv4(smac=HOST_MAC[2], dmac=HOST_MAC[1])
    s.packet(2, g)
    s.expect(1, g)
    s.c("unknown destination: l2_miss drops it")
    s.packet(1, roce_v2(dmac=HOST_MAC[5]))
    s.c(
        "a non-first IPv4 fragment whose bytes look like UDP 4791 + BTH: forwarded, never parsed as"
    )
    s.c("RoCE (the parser looks past IPv4 only at offset 0, IHL 5), so not counted in roce_rx")
    s.packet(1, ipv4_fragment())
    s.expect(2, ipv4_fragment())
    s.c("broadcast flooded through multicast group 1 = ports 1, 2, 3; not back to port 1")
    s.c("(multicast is outside PFC admission: XOFF 1 on port 1 class 0 sends nothing for it)")
    s.c("wait: the frames above leave ingress before XOFF 1 applies (on a real-time target a")
    s.c("loaded BMv2 admitted the fragment after the write: XOFF + XON on port 1)")
    s.cmd("wait")
    s.add(
        "pfc_thresholds",
        {"ingress_port": "1", "tc": "0"},
        "set_pfc_thresholds",
        {"xoff": 1, "xon": 1, "quanta": 0xFFFF, "refresh_us": BIG_US},
    )
    s.cmd(f"mirroring_add {PFC_SESSION_BASE + 1} 1")
    s.add("l2_fwd", {"ethernet.dst": "0xffffffffffff"}, "l2_flood", {"mcast_grp": 1})
    s.cmd("mc_mgrp_create 1")
    s.cmd("mc_node_create 0 1 2 3")
    s.cmd("mc_node_associate 1 0")
    b = plain_ipv4(dmac="ff:ff:ff:ff:ff:ff")
    s.packet(1, b)
    s.expect(2, b)
    s.expect(3, b)
    s.c(
        "counters: RoCE in on port 1 class 0 (2 frames of 74 bytes), out on port 2; drops by reason"
    )
    s.counter("roce_rx", 1 * 8 + 0, 2)
    s.counter("roce_rx", 1 * 8 + 0, 2 * 74, "bytes")
    s.counter("roce_tx", 2 * 8 + 0, 1)
    s.counter("drops", 1 * 16 + 3, 1)
    s.counter("drops", 1 * 16 + 10, 1)
    s.counter("pfc_tx", 1 * 8 + 0, 0)
    return s


def _router(s: Stf) -> None:
    s.add("router_mac", {"ethernet.dst": mac_hex(ROUTER_MAC)}, "set_router_mac")


def case_ipv4() -> Stf:
    s = Stf(
        "ipv4_routing",
        "IPv4: LPM -> next hop, MAC rewrite, TTL decrement, checksum; TTL 1 and LPM miss dropped",
    )
    _router(s)
    route_v4(s, "10.0.2.0", 24, 1, 2, HOST_MAC[2])
    route_v4(s, "10.0.0.0", 8, 2, 3, HOST_MAC[3])
    s.c("the /24 wins over the /8")
    f = roce_v2(dst="10.0.2.7", dmac=ROUTER_MAC)
    s.packet(1, f)
    s.expect(2, rewrite(f, dmac=HOST_MAC[2], smac=ROUTER_MAC, ttl_dec=True))
    s.c("the /8 catches the rest of 10/8")
    f = roce_v2(dst="10.9.0.1", dmac=ROUTER_MAC, ttl=2)
    s.packet(1, f)
    s.expect(3, rewrite(f, dmac=HOST_MAC[3], smac=ROUTER_MAC, ttl_dec=True))
    s.c("TTL 1: dropped (DROP_TTL)")
    s.packet(1, roce_v2(dst="10.0.2.7", dmac=ROUTER_MAC, ttl=1))
    s.c("no route: dropped (DROP_NO_ROUTE)")
    s.packet(1, roce_v2(dst="192.168.1.1", dmac=ROUTER_MAC))
    s.c("bad IPv4 header checksum: dropped (DROP_BAD_CHECKSUM)")
    bad = bytearray(roce_v2(dst="10.0.2.7", dmac=ROUTER_MAC))
    bad[24] ^= 0xFF
    s.packet(1, bytes(bad))
    s.c("a plain UDP packet is routed the same way")
    g = plain_ipv4(dst="10.0.2.9", dmac=ROUTER_MAC)
    s.packet(1, g)
    s.expect(2, rewrite(g, dmac=HOST_MAC[2], smac=ROUTER_MAC, ttl_dec=True))
    s.counter("drops", 1 * 16 + 2, 1)
    s.counter("drops", 1 * 16 + 1, 1)
    s.counter("drops", 1 * 16 + 9, 1)
    return s


def case_ipv6() -> Stf:
    s = Stf(
        "ipv6_routing",
        "IPv6: LPM -> next hop, MAC rewrite, hop-limit decrement; hop limit 1 dropped",
    )
    _router(s)
    s.add(
        "ipv6_lpm", {"ipv6.dst": f"0x{ip6_int('2001:db8:2::'):032x}/48"}, "set_nhop", {"nhop_id": 4}
    )
    s.add(
        "nexthop",
        {"nhop_id": "4"},
        "set_nexthop",
        {"port": 2, "smac": mac_hex(ROUTER_MAC), "dmac": mac_hex(HOST_MAC[2])},
    )
    f = roce_v2(src="2001:db8:1::1", dst="2001:db8:2::2", dmac=ROUTER_MAC, opcode=OP_WRITE_ONLY)
    s.packet(1, f)
    s.expect(2, rewrite(f, dmac=HOST_MAC[2], smac=ROUTER_MAC, ttl_dec=True))
    s.c("hop limit 1: dropped")
    s.packet(1, roce_v2(src="2001:db8:1::1", dst="2001:db8:2::2", dmac=ROUTER_MAC, ttl=1))
    s.c("outside the prefix: dropped")
    s.packet(1, roce_v2(src="2001:db8:1::1", dst="2001:db8:3::2", dmac=ROUTER_MAC))
    s.counter("drops", 1 * 16 + 2, 1)
    s.counter("drops", 1 * 16 + 1, 1)
    return s


def crc16_arc(data: bytes) -> int:
    """BMv2's crc16: CRC-16/ARC (poly 0x8005 reflected, init 0, no final xor)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def ecmp_member(src: str, dst: str, sport: int, size: int) -> int:
    addr = ip6_int if ":" in src else ip4_int
    data = (
        addr(src).to_bytes(16, "big")
        + addr(dst).to_bytes(16, "big")
        + bytes([17])
        + struct.pack("!HH", sport, 4791)
    )
    return crc16_arc(data) % size


def case_ecmp() -> Stf:
    s = Stf(
        "ecmp",
        "ECMP: crc16 over (src, dst, proto, UDP sport, dport) picks the member; sprayed QPs go round robin",
    )
    _router(s)
    s.add(
        "ipv4_lpm",
        {"ipv4.dst": f"0x{ip4_int('10.0.2.0'):08x}/24"},
        "set_ecmp",
        {"group": 1, "size": 2},
    )
    for member, (nh, port) in enumerate([(11, 3), (12, 4)]):
        s.add(
            "ecmp_member",
            {"ecmp_group": "1", "ecmp_member": str(member)},
            "set_nhop",
            {"nhop_id": nh},
        )
        s.add(
            "nexthop",
            {"nhop_id": str(nh)},
            "set_nexthop",
            {"port": port, "smac": mac_hex(ROUTER_MAC), "dmac": mac_hex(HOST_MAC[port])},
        )
    ports = {0: 3, 1: 4}
    seen = set()
    sport = 0xC000
    s.c("flows differing only in the RoCEv2 UDP source port; the member is CRC-16/ARC % 2")
    while len(seen) < 2 or sport < 0xC004:
        m = ecmp_member("10.0.0.1", "10.0.2.2", sport, 2)
        seen.add(m)
        f = roce_v2(dst="10.0.2.2", dmac=ROUTER_MAC, sport=sport)
        s.c(f"sport 0x{sport:04x} -> member {m}")
        s.packet(1, f)
        s.expect(ports[m], rewrite(f, dmac=HOST_MAC[ports[m]], smac=ROUTER_MAC, ttl_dec=True))
        sport += 1
    s.c("IPv6 flows hash the full 128-bit addresses through the same group")
    s.add(
        "ipv6_lpm",
        {"ipv6.dst": f"0x{ip6_int('2001:db8:2::'):032x}/48"},
        "set_ecmp",
        {"group": 1, "size": 2},
    )
    seen6 = set()
    sport = 0xC100
    while len(seen6) < 2 or sport < 0xC104:
        m = ecmp_member("2001:db8:1::1", "2001:db8:2::2", sport, 2)
        seen6.add(m)
        f = roce_v2(src="2001:db8:1::1", dst="2001:db8:2::2", dmac=ROUTER_MAC, sport=sport)
        s.c(f"IPv6 sport 0x{sport:04x} -> member {m}")
        s.packet(1, f)
        s.expect(ports[m], rewrite(f, dmac=HOST_MAC[ports[m]], smac=ROUTER_MAC, ttl_dec=True))
        sport += 1
    s.c("QP 0x99 to 10.0.2.2 is sprayed: members 0, 1, 0, 1 whatever its hash")
    s.add("spray_qp", {"ip_dst": f"0x{ip4_int('10.0.2.2'):x}", "bth.dqpn": "0x99"}, "spray")
    for i in range(4):
        f = roce_v2(dst="10.0.2.2", dmac=ROUTER_MAC, dqpn=0x99, psn=i, opcode=OP_WRITE_ONLY)
        s.packet(1, f)
        port = ports[i % 2]
        s.expect(port, rewrite(f, dmac=HOST_MAC[port], smac=ROUTER_MAC, ttl_dec=True))
    return s


def _ecn_profile(
    s: Stf, port: int, tc: int, kmin: int, kmax: int, pmax: int, drop: int = 0
) -> None:
    s.add(
        "ecn_profile",
        {"egress_port": str(port), "tc": str(tc)},
        "set_ecn_profile",
        {"kmin": kmin, "kmax": kmax, "pmax": pmax, "drop_non_ect": drop},
    )


def _depth(s: Stf, port: int, depth: int) -> None:
    s.add("debug_qdepth", {"egress_port": str(port)}, "override_qdepth", {"depth": depth})


def case_classify() -> Stf:
    s = Stf(
        "classification",
        "DSCP or PCP -> traffic class, seen through a per-class ECN profile; CNPs use the CNP class",
    )
    for p in range(1, 3):
        l2(s, p, HOST_MAC[p])
    s.add("dscp_to_tc", {"dscp": "26"}, "set_tc_from_dscp", {"tc": 3})
    s.add("pcp_to_tc", {"vlan.pcp": "5"}, "set_tc", {"tc": 5})
    s.c("port 2 marks everything in classes 3, 5 and 6 (depth 100 > Kmax 10), nothing else")
    _depth(s, 2, 100)
    for tc in (3, 5, 6):
        _ecn_profile(s, 2, tc, 5, 10, 0)
    f = roce_v2(dscp=26, ecn=2)
    s.c("DSCP 26 -> class 3: marked")
    s.packet(1, f)
    s.expect(2, rewrite(f, ecn=3))
    f = roce_v2(dscp=10, ecn=2)
    s.c("DSCP 10 (no entry), untagged -> class 0: not marked")
    s.packet(1, f)
    s.expect(2, f)
    f = roce_v2(dscp=10, ecn=1, vlan=(5, 100))
    s.c("DSCP 10 (no entry), PCP 5 -> class 5: marked")
    s.packet(1, f)
    s.expect(2, rewrite(f, ecn=3))
    f = roce_v2(dscp=26, ecn=1, vlan=(5, 100))
    s.c("DSCP 26 and PCP 5: the DSCP entry wins -> class 3: marked")
    s.packet(1, f)
    s.expect(2, rewrite(f, ecn=3))
    f = roce_v2(dscp=10, ecn=2, vlan=(1, 100))
    s.c("PCP 1 (no entry) -> class 0: not marked")
    s.packet(1, f)
    s.expect(2, f)
    s.c("a CNP (even with DSCP 26) goes to the CNP class 6 (cnp_config default): marked")
    f = roce_v2(dscp=26, ecn=2, opcode=OP_CNP, payload=bytes(16))
    s.packet(1, f)
    s.expect(2, rewrite(f, ecn=3))
    s.counter("ecn_marked", 2 * 8 + 3, 2)
    s.counter("ecn_marked", 2 * 8 + 5, 1)
    s.counter("ecn_marked", 2 * 8 + 6, 1)
    s.counter("ecn_marked", 2 * 8 + 0, 0)
    s.counter("cnp_rx", 1 * 8 + 6, 1)
    s.c("roce_rx counts each packet in its class: 3 (two), 5, 0 (two), 6 (the CNP)")
    s.counter("roce_rx", 1 * 8 + 3, 2)
    s.counter("roce_rx", 1 * 8 + 5, 1)
    s.counter("roce_rx", 1 * 8 + 0, 2)
    s.counter("roce_rx", 1 * 8 + 6, 1)
    return s


def case_ecn() -> Stf:
    s = Stf(
        "ecn_thresholds",
        "ECN: exactly Kmin never marks, exactly Kmax marks with probability Pmax, above Kmax always",
    )
    s.c("profile on every port: Kmin 10, Kmax 20; port 2..4 Pmax 100%, port 5..6 Pmax 0")
    s.c("queue depth pinned per port with debug_qdepth (in STF the real queue is empty)")
    s.add("dscp_to_tc", {"dscp": "26"}, "set_tc_from_dscp", {"tc": 3})
    cases = [
        (2, 10, PMAX_100, False, "depth = Kmin, Pmax 100%: probability 0, not marked"),
        (3, 20, PMAX_100, True, "depth = Kmax, Pmax 100%: probability 1, marked"),
        (4, 21, PMAX_100, True, "depth = Kmax + 1: always marked"),
        (5, 20, 0, False, "depth = Kmax, Pmax 0: probability 0, not marked"),
        (6, 21, 0, True, "depth = Kmax + 1, Pmax 0: marked anyway (above Kmax)"),
        (7, 9, PMAX_100, False, "depth = Kmin - 1: not marked"),
    ]
    for port, depth, pmax, _, _ in cases:
        l2(s, port, HOST_MAC[port])
        _ecn_profile(s, port, 3, 10, 20, pmax)
        _depth(s, port, depth)
    for port, _, _, marked, why in cases:
        for ecn in (2, 1):
            f = roce_v2(dmac=HOST_MAC[port], ecn=ecn)
            s.c(f"port {port}, ECT({2 - ecn}): {why}")
            s.packet(1, f)
            s.expect(port, rewrite(f, ecn=3) if marked else f)
    s.c("IPv6 ECT(0) above Kmax: marked in the traffic class")
    f = roce_v2(src="2001:db8::1", dst="2001:db8::2", dmac=HOST_MAC[4], ecn=2)
    s.packet(1, f)
    s.expect(4, rewrite(f, ecn=3))
    s.c("already CE stays CE; a plain (non-RoCE) ECT packet is marked as well")
    f = roce_v2(dmac=HOST_MAC[4], ecn=3)
    s.packet(1, f)
    s.expect(4, f)
    g = plain_ipv4(dmac=HOST_MAC[4], tos=(26 << 2) | 2)
    s.packet(1, g)
    s.expect(4, rewrite(g, ecn=3))
    s.c("ECT -> CE changes only (an arriving CE is not counted)")
    for port, n in [(2, 0), (3, 2), (4, 4), (5, 0), (6, 2), (7, 0)]:
        s.counter("ecn_marked", port * 8 + 3, n)
    return s


def case_ecn_non_ect() -> Stf:
    s = Stf(
        "ecn_non_ect",
        "ECN: non-ECT above Kmax dropped when drop_non_ect = 1, passed otherwise; never at Kmax",
    )
    s.add("dscp_to_tc", {"dscp": "26"}, "set_tc_from_dscp", {"tc": 3})
    for port, depth, drop in [(2, 21, 1), (3, 21, 0), (4, 20, 1)]:
        l2(s, port, HOST_MAC[port])
        _ecn_profile(s, port, 3, 10, 20, PMAX_100, drop)
        _depth(s, port, depth)
    s.c("port 2: above Kmax, drop_non_ect = 1: dropped (DROP_ECN_NON_ECT)")
    s.packet(1, roce_v2(dmac=HOST_MAC[2], ecn=0))
    s.c("port 2: an ECT packet on the same queue is marked, not dropped")
    f = roce_v2(dmac=HOST_MAC[2], ecn=2)
    s.packet(1, f)
    s.expect(2, rewrite(f, ecn=3))
    s.c("port 3: above Kmax, drop_non_ect = 0: passed unmarked")
    f = roce_v2(dmac=HOST_MAC[3], ecn=0)
    s.packet(1, f)
    s.expect(3, f)
    s.c("port 3: the same over IPv6 (non-ECT traffic class): passed unmarked, and an IPv6")
    s.c("ECT(1) packet is marked")
    f = roce_v2(src="2001:db8::1", dst="2001:db8::2", dmac=HOST_MAC[3], ecn=0)
    s.packet(1, f)
    s.expect(3, f)
    f = roce_v2(src="2001:db8::1", dst="2001:db8::2", dmac=HOST_MAC[3], ecn=1)
    s.packet(1, f)
    s.expect(3, rewrite(f, ecn=3))
    s.c("port 4: exactly Kmax with drop_non_ect = 1: passed (drop only above Kmax)")
    f = roce_v2(dmac=HOST_MAC[4], ecn=0)
    s.packet(1, f)
    s.expect(4, f)
    s.counter("drops", 2 * 16 + 5, 1)
    s.counter("ecn_marked", 2 * 8 + 3, 1)
    s.counter("ecn_marked", 3 * 8 + 3, 1)
    return s


def _pfc_setup(s: Stf, xoff: int, xon: int, quanta: int, refresh: int) -> None:
    l2(s, 2, HOST_MAC[2])
    s.add("dscp_to_tc", {"dscp": "26"}, "set_tc_from_dscp", {"tc": 3})
    s.add(
        "pfc_thresholds",
        {"ingress_port": "1", "tc": "3"},
        "set_pfc_thresholds",
        {"xoff": xoff, "xon": xon, "quanta": quanta, "refresh_us": refresh},
    )
    s.add("port_mac", {"egress_port": "1"}, "set_port_mac", {"mac": mac_hex(PORT_MACS[1])})
    s.cmd(f"mirroring_add {PFC_SESSION_BASE + 1} 1")


def case_pfc() -> Stf:
    s = Stf(
        "pfc_xoff_xon",
        "PFC: XOFF when the depth of the egress queue (port 2, class 3) reaches XOFF, "
        "XON once it is below XON; a stale depth is corrected by the next departure",
    )
    s.c("XOFF 5, XON 2 packets; quanta 0xffff; refresh interval far away")
    s.c("pfc_qdepth[2*8+3] is the depth the program believes port 2's class-3 queue has; a")
    s.c("register_write stands for packets counted in that the traffic manager dropped. One")
    s.c("packet at a time leaves an empty queue: deq_qdepth 0, which every departure writes back.")
    _pfc_setup(s, 5, 2, 0xFFFF, BIG_US)
    q = 2 * 8 + 3
    idx = 1 * 8 + 3
    f = roce_v2()
    # Expected frames are matched per port, not per input packet: the pfc_tx count after
    # each step pins WHICH packet sent the frame (an XOFF one packet late would match too).
    s.c("depth 3 -> 4 on arrival: below XOFF, no PFC; the departure writes the real depth, 0")
    s.cmd(f"register_write pfc_qdepth {q} 3")
    s.packet(1, f)
    s.expect(2, f)
    s.counter("pfc_tx", idx, 0)
    s.register("pfc_paused", idx, 0)
    s.register("pfc_qdepth", q, 0)
    s.c(
        "depth 4 -> 5 = XOFF: an 802.1Qbb frame for class 3 leaves port 1, caused by port 2's queue;"
    )
    s.c("the packet's own departure finds the queue empty (0 < XON): the XON follows at once")
    s.cmd(f"register_write pfc_qdepth {q} 4")
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, pfc_frame(PORT_MACS[1], 3, 0xFFFF))
    s.expect(1, pfc_frame(PORT_MACS[1], 3, 0))
    s.counter("pfc_tx", idx, 2)
    s.register("pfc_paused", idx, 0)
    s.register("pfc_cause", idx, 2)
    s.register("pfc_qdepth", q, 0)
    s.c("paused, arriving at depth 6 >= XON, refresh not due: no frame in ingress; the")
    s.c("departure (0 < XON) from the queue that caused the pause sends the XON")
    s.cmd(f"register_write pfc_paused {idx} 1")
    s.cmd(f"register_write pfc_qdepth {q} 5")
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, pfc_frame(PORT_MACS[1], 3, 0))
    s.counter("pfc_tx", idx, 3)
    s.register("pfc_paused", idx, 0)
    s.c("paused by port 3's queue: a departure from port 2's queue is no reason to resume")
    s.cmd(f"register_write pfc_paused {idx} 1")
    s.cmd(f"register_write pfc_cause {idx} 3")
    s.packet(1, f)
    s.expect(2, f)
    s.counter("pfc_tx", idx, 3)
    s.register("pfc_paused", idx, 1)
    s.c("paused by port 2's queue, which is below XON on arrival (depth 0 -> 1): the sender is")
    s.c("sending again (its pause expired) and no departure sent its XON: the arrival sends it")
    s.cmd(f"register_write pfc_cause {idx} 2")
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, pfc_frame(PORT_MACS[1], 3, 0))
    s.counter("pfc_tx", idx, 4)
    s.register("pfc_paused", idx, 0)
    s.c("resumed: a later packet below XOFF sends nothing")
    s.packet(1, f)
    s.expect(2, f)
    s.c("another class (DSCP 10 -> class 0) has no thresholds: counted, never paused")
    s.cmd("register_write pfc_qdepth 16 100")
    g = roce_v2(dscp=10)
    s.packet(1, g)
    s.expect(2, g)
    s.counter("pfc_tx", idx, 4)
    s.counter("pfc_tx", 1 * 8, 0)
    s.register("pfc_paused", idx, 0)
    s.register("pfc_paused", 1 * 8, 0)
    s.register("pfc_qdepth", 16, 0)
    return s


def case_pfc_refresh() -> Stf:
    s = Stf(
        "pfc_refresh",
        "PFC: while paused and at/above XON, a refresh XOFF goes out once the interval has passed",
    )
    s.c("refresh interval 0 us: every arrival of a paused class at or above XON refreshes")
    s.c("(refreshes on departure need a real queue: tests/p4src/test_p4src_timing.py)")
    _pfc_setup(s, 5, 2, 0x1234, 0)
    q = 2 * 8 + 3
    idx = 1 * 8 + 3
    s.cmd(f"register_write pfc_paused {idx} 1")
    s.cmd(f"register_write pfc_cause {idx} 2")
    s.cmd(f"register_write pfc_qdepth {q} 3")
    f = roce_v2()
    s.c("arrival (depth 4 >= XON): refresh; departure (queue empty, 0 < XON): XON")
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, pfc_frame(PORT_MACS[1], 3, 0x1234))
    s.expect(1, pfc_frame(PORT_MACS[1], 3, 0))
    s.counter("pfc_tx", idx, 2)
    s.register("pfc_paused", idx, 0)
    s.register("pfc_qdepth", q, 0)
    s.c("XON 0 is taken as 1: a pause must end once the queue is empty")
    s.add(
        "pfc_thresholds",
        {"ingress_port": "1", "tc": "5"},
        "set_pfc_thresholds",
        {"xoff": 1, "xon": 0, "quanta": 0x1234, "refresh_us": BIG_US},
    )
    s.add("dscp_to_tc", {"dscp": "34"}, "set_tc_from_dscp", {"tc": 5})
    g = roce_v2(dscp=34)
    s.packet(1, g)
    s.expect(2, g)
    s.expect(1, pfc_frame(PORT_MACS[1], 5, 0x1234))
    s.expect(1, pfc_frame(PORT_MACS[1], 5, 0))
    s.counter("pfc_tx", 1 * 8 + 5, 2)
    s.register("pfc_paused", 1 * 8 + 5, 0)
    return s


def case_pfc_classes() -> Stf:
    s = Stf(
        "pfc_classes",
        "PFC: the frame for class C enables bit C of the class-enable vector and carries "
        "the pause time in time[C] (802.1Qbb), for every class 0..7",
    )
    s.c(
        "every class of port 1 has XOFF 1, XON 1, its own quanta 0x100 + C; DSCP 40 + C -> class C."
    )
    s.c("One packet per class: its arrival (depth 0 -> 1) sends the XOFF, its departure (queue")
    s.c("empty, 0 < XON) the XON, both for that class only")
    l2(s, 2, HOST_MAC[2])
    s.add("port_mac", {"egress_port": "1"}, "set_port_mac", {"mac": mac_hex(PORT_MACS[1])})
    s.cmd(f"mirroring_add {PFC_SESSION_BASE + 1} 1")
    for c in range(8):
        s.add("dscp_to_tc", {"dscp": str(40 + c)}, "set_tc_from_dscp", {"tc": c})
        s.add(
            "pfc_thresholds",
            {"ingress_port": "1", "tc": str(c)},
            "set_pfc_thresholds",
            {"xoff": 1, "xon": 1, "quanta": 0x100 + c, "refresh_us": BIG_US},
        )
    for c in range(8):
        f = roce_v2(dscp=40 + c, psn=c)
        s.packet(1, f)
        s.expect(2, f)
        s.expect(1, pfc_frame(PORT_MACS[1], c, 0x100 + c))
        s.expect(1, pfc_frame(PORT_MACS[1], c, 0))
        s.counter("pfc_tx", 1 * 8 + c, 2)
    s.c("the data packet was VLAN-tagged (DSCP 42 -> class 2): the PFC frame is still an untagged")
    s.c("60-byte MAC control frame (802.1Qbb frames carry no VLAN tag)")
    f = roce_v2(dscp=42, psn=8, vlan=(0, 100))
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, pfc_frame(PORT_MACS[1], 2, 0x102))
    s.expect(1, pfc_frame(PORT_MACS[1], 2, 0))
    s.counter("pfc_tx", 1 * 8 + 2, 4)
    return s


def case_pfc_rx() -> Stf:
    s = Stf(
        "pfc_rx_consumed", "received PFC and PAUSE frames are consumed (counted), never forwarded"
    )
    s.c("even with a forwarding entry for the MAC-control address and a flood group")
    s.add("l2_fwd", {"ethernet.dst": "0x0180c2000001"}, "l2_forward", {"port": 2})
    s.packet(1, pfc_frame(HOST_MAC[1], 3, 0xFFFF))
    s.packet(1, pfc_frame(HOST_MAC[1], 3, 0))
    s.packet(1, pause_frame(HOST_MAC[1], 100))
    s.c("a PFC frame behind an 802.1Q tag (the parser accepts MAC control after a VLAN tag):")
    s.c("consumed and counted the same")
    s.packet(
        1,
        pad60(
            mac("01:80:c2:00:00:01")
            + mac(HOST_MAC[1])
            + b"\x81\x00\x00\x64"
            + pfc_frame(HOST_MAC[1], 4, 0xFFFF)[12:]
        ),
    )
    s.c("other MAC-control opcodes are consumed too")
    s.packet(1, pad60(mac("01:80:c2:00:00:01") + mac(HOST_MAC[1]) + b"\x88\x08\x00\x02"))
    s.c("a data frame right after still flows")
    l2(s, 2, HOST_MAC[2])
    f = roce_v2()
    s.packet(1, f)
    s.expect(2, f)
    s.counter("pfc_rx", 1 * 8 + 3, 2)
    s.counter("pfc_rx", 1 * 8 + 2, 0)
    s.counter("pfc_rx", 1 * 8 + 4, 1)
    s.counter("pause_rx", 1, 1)
    s.counter("drops", 1 * 16 + 7, 5)
    return s


def _np_setup(s: Stf, interval: int, v6: bool = False) -> tuple[str, str]:
    src, dst = ("2001:db8::1", "2001:db8::2") if v6 else ("10.0.0.1", "10.0.0.2")
    key = (lambda a: f"0x{ip6_int(a):x}") if v6 else (lambda a: f"0x{ip4_int(a):x}")
    l2(s, 2, HOST_MAC[2])
    l2(s, 1, HOST_MAC[1])
    s.setdefault(
        "cnp_config",
        "set_cnp_config",
        {"cnp_tc": 6, "np_enable": 1, "interval_us": interval, "cnp_dscp": 48},
    )
    s.add("host_port", {"egress_port": "2"}, "set_host_port")
    s.add(
        "cnp_qp",
        {"ip_src": key(src), "ip_dst": key(dst), "bth.dqpn": "0x12"},
        "set_cnp_target",
        {"dqpn": "0x34", "slot": 5},
    )
    s.cmd(f"mirroring_add {CNP_SESSION_BASE + 1} 1")
    return src, dst


def case_cnp_np() -> Stf:
    s = Stf(
        "cnp_np",
        "NP emulation: a CE-marked RoCEv2 packet toward a host port makes a CNP back to its source",
    )
    _np_setup(s, 0)
    s.c("CE on arrival (marked upstream), toward host port 2: forwarded, and a CNP to port 1")
    f = roce_v2(ecn=3, opcode=OP_WRITE_ONLY, psn=7)
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.c("ECT(0), not CE: no CNP")
    f = roce_v2(ecn=2)
    s.packet(1, f)
    s.expect(2, f)
    s.c("CE but an ACK (opcode 0x11): no CNP")
    f = roce_v2(ecn=3, opcode=OP_ACK, payload=bytes(4))
    s.packet(1, f)
    s.expect(2, f)
    s.c("CE toward port 1 (not a host port): no CNP")
    f = roce_v2(ecn=3, src="10.0.0.2", dst="10.0.0.1", smac=HOST_MAC[2], dmac=HOST_MAC[1])
    s.packet(2, f)
    s.expect(1, f)
    s.c("CE on a QP without a cnp_qp entry: no CNP")
    f = roce_v2(ecn=3, dqpn=0x13)
    s.packet(1, f)
    s.expect(2, f)
    s.c(
        "marked by this switch (depth above Kmax) then answered with a CNP; VLAN tag kept (PCP = CNP class)"
    )
    s.add(
        "ecn_profile",
        {"egress_port": "2", "tc": "0"},
        "set_ecn_profile",
        {"kmin": 1, "kmax": 2, "pmax": 0, "drop_non_ect": 0},
    )
    s.add("debug_qdepth", {"egress_port": "2"}, "override_qdepth", {"depth": 3})
    f = roce_v2(ecn=2, dscp=0, vlan=(0, 7))
    s.packet(1, f)
    s.expect(2, rewrite(f, ecn=3))
    s.expect(1, cnp_expected(rewrite(f, ecn=3), 0x34))
    s.c("CE on an RDMA READ RESPONSE ONLY (opcode 0x10, the last of the 0x00..0x10 request/data")
    s.c("range): the responder gets a CNP")
    f = roce_v2(ecn=3, opcode=0x10, psn=8, payload=bytes(20))
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.counter("cnp_tx", 1 * 8 + 6, 3)
    s.c("CE on a SEND ONLY with immediate (0x05): the CNP carries no ImmDt")
    f = roce_v2(ecn=3, opcode=0x05, psn=12, payload=bytes(20))
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.counter("cnp_tx", 1 * 8 + 6, 4)
    s.c("CE on the flow of the cnp_qp entry, but toward port 3 (not a host port): no CNP")
    l2(s, 3, HOST_MAC[3])
    f = roce_v2(ecn=3, dmac=HOST_MAC[3], psn=9)
    s.packet(1, f)
    s.expect(3, f)
    s.counter("cnp_tx", 1 * 8 + 6, 4)
    s.c(
        "a mirrored CE packet (session 5 -> port 7) still gets its CNP: the mirror copy is the clone,"
    )
    s.c("the original stays an ordinary packet in egress")
    s.add("mirror_flow", {"bth_dqpn": "0x000012"}, "mirror_to", {"session": 5}, prio=10)
    s.cmd("mirroring_add 5 7")
    f = roce_v2(ecn=3, psn=11)
    s.packet(1, f)
    s.expect(2, f)
    s.expect(7, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.counter("cnp_tx", 1 * 8 + 6, 5)
    s.c("CE toward host port 2 but over its MTU (dropped in egress, DROP_MTU): the NIC never")
    s.c("receives it, so no CNP")
    s.add("port_mtu", {"standard_metadata.egress_port": "2"}, "set_port_mtu", {"mtu_bytes": 59})
    f = roce_v2(ecn=3, psn=10)  # IPv4 total length 60
    s.packet(1, f)
    s.expect(7, f)  # its mirror copy (ingress) still leaves
    s.counter("drops", 2 * 16 + 11, 1)
    s.counter("cnp_tx", 1 * 8 + 6, 5)
    return s


def case_cnp_v6() -> Stf:
    s = Stf("cnp_np_ipv6", "NP emulation over IPv6: CNP with swapped addresses, BECN, ICRC")
    src, dst = _np_setup(s, 0, v6=True)
    f = roce_v2(src=src, dst=dst, ecn=3)
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.c("a CE-marked FETCH_ADD: forwarded with its AtomicETH, and the CNP carries none")
    f = roce_v2(src=src, dst=dst, ecn=3, opcode=0x14, payload=b"")
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    return s


def case_cnp_routed() -> Stf:
    s = Stf(
        "cnp_np_routed",
        "NP emulation on a routed packet: the CNP goes back to the sender's MAC from the router MAC",
    )
    _router(s)
    route_v4(s, "10.0.2.0", 24, 1, 2, HOST_MAC[2])
    s.setdefault(
        "cnp_config",
        "set_cnp_config",
        {"cnp_tc": 6, "np_enable": 1, "interval_us": 0, "cnp_dscp": 46},
    )
    s.add("host_port", {"egress_port": "2"}, "set_host_port")
    s.add(
        "cnp_qp",
        {
            "ip_src": f"0x{ip4_int('10.0.0.1'):x}",
            "ip_dst": f"0x{ip4_int('10.0.2.2'):x}",
            "bth.dqpn": "0x12",
        },
        "set_cnp_target",
        {"dqpn": "0xabcdef", "slot": 9},
    )
    s.cmd(f"mirroring_add {CNP_SESSION_BASE + 1} 1")
    f = roce_v2(dst="10.0.2.2", dmac=ROUTER_MAC, ecn=3, opcode=OP_WRITE_ONLY)
    s.c("routed toward host port 2 (MACs rewritten, TTL - 1); the CNP uses the MACs as received")
    s.packet(1, f)
    s.expect(2, rewrite(f, dmac=HOST_MAC[2], smac=ROUTER_MAC, ttl_dec=True))
    s.expect(1, cnp_expected(f, 0xABCDEF, dscp=46))
    s.counter("cnp_tx", 1 * 8 + 6, 1)
    s.register("cnp_sent", 9, 1)
    return s


def case_cnp_rate() -> Stf:
    s = Stf(
        "cnp_rate_limit",
        "NP emulation: at most one CNP per flow per interval (elapsed >= interval sends)",
    )
    _np_setup(s, BIG_US)
    f = roce_v2(ecn=3)
    s.c("first CE packet of the flow: CNP")
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.c("second one within the interval: no CNP")
    s.packet(1, f)
    s.expect(2, f)
    s.c("interval 0: elapsed 0 >= 0, every CE packet gets a CNP")
    s.setdefault(
        "cnp_config",
        "set_cnp_config",
        {"cnp_tc": 6, "np_enable": 1, "interval_us": 0, "cnp_dscp": 48},
    )
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.packet(1, f)
    s.expect(2, f)
    s.expect(1, cnp_expected(f, 0x34))
    s.c("NP emulation off (the default): no CNP")
    s.setdefault(
        "cnp_config",
        "set_cnp_config",
        {"cnp_tc": 6, "np_enable": 0, "interval_us": 0, "cnp_dscp": 48},
    )
    s.packet(1, f)
    s.expect(2, f)
    s.counter("cnp_tx", 1 * 8 + 6, 3)
    s.register("cnp_sent", 5, 1)
    return s


def case_rocev1() -> Stf:
    s = Stf("rocev1", "RoCEv1 (EtherType 0x8915): bridged like any frame, never routed")
    _router(s)
    l2(s, 2, HOST_MAC[2])
    route_v4(s, "10.0.0.0", 8, 1, 3, HOST_MAC[3])
    f = rocev1()
    s.c("to a host MAC: L2-forwarded unchanged")
    s.packet(1, f)
    s.expect(2, f)
    s.c("to the router MAC: dropped (DROP_ROCEV1_L3), counted in rocev1_rx")
    s.packet(1, rocev1(dmac=ROUTER_MAC))
    s.c("the GRH traffic class classifies and is ECN-marked like a DSCP")
    s.add("dscp_to_tc", {"dscp": "26"}, "set_tc_from_dscp", {"tc": 3})
    s.add(
        "ecn_profile",
        {"egress_port": "2", "tc": "3"},
        "set_ecn_profile",
        {"kmin": 0, "kmax": 0, "pmax": 0, "drop_non_ect": 0},
    )
    s.add("debug_qdepth", {"egress_port": "2"}, "override_qdepth", {"depth": 1})
    f = rocev1(tclass=(26 << 2) | 2)
    s.packet(1, f)
    s.expect(2, rewrite(f, ecn=3))
    s.counter("rocev1_rx", 1, 3)
    s.counter("drops", 1 * 16 + 6, 1)
    s.counter("ecn_marked", 2 * 8 + 3, 1)
    return s


def case_fault() -> Stf:
    s = Stf("fault_injection", "fault injection: drop (dst QP, PSN); drop every Nth packet of a QP")
    l2(s, 2, HOST_MAC[2])
    s.add(
        "fault_psn",
        {"ip_dst": f"0x{ip4_int('10.0.0.2'):x}", "bth.dqpn": "0x12", "bth.psn": "5"},
        "drop_psn",
    )
    s.c("QP 0x12: PSN 4 passes, PSN 5 dropped, PSN 6 passes")
    for psn in (4, 5, 6):
        f = roce_v2(psn=psn)
        s.packet(1, f)
        if psn != 5:
            s.expect(2, f)
    s.c("QP 0x20: every 3rd packet dropped (slot 0)")
    s.add(
        "fault_every_nth",
        {"ip_dst": f"0x{ip4_int('10.0.0.2'):x}", "bth.dqpn": "0x20"},
        "drop_every_nth",
        {"n": 3, "slot": 0},
    )
    for psn in range(7):
        f = roce_v2(dqpn=0x20, psn=psn)
        s.packet(1, f)
        if (psn + 1) % 3 != 0:
            s.expect(2, f)
    s.c("QP 0x22: PSN 1 dropped by fault_psn, and every 3rd packet (slot 1) of what is left:")
    s.c("PSNs 0, 2, 3 are counted, so PSN 3 is the one dropped; PSN 4 passes")
    s.add(
        "fault_psn",
        {"ip_dst": f"0x{ip4_int('10.0.0.2'):x}", "bth.dqpn": "0x22", "bth.psn": "1"},
        "drop_psn",
    )
    s.add(
        "fault_every_nth",
        {"ip_dst": f"0x{ip4_int('10.0.0.2'):x}", "bth.dqpn": "0x22"},
        "drop_every_nth",
        {"n": 3, "slot": 1},
    )
    for psn in range(5):
        f = roce_v2(dqpn=0x22, psn=psn)
        s.packet(1, f)
        if psn not in (1, 3):
            s.expect(2, f)
    s.register("fault_count", 1, 1)
    s.c("other QPs untouched")
    f = roce_v2(dqpn=0x21, psn=5)
    s.packet(1, f)
    s.expect(2, f)
    s.counter("drops", 1 * 16 + 4, 5)
    s.register("fault_count", 0, 1)
    return s


def case_mirror_cpu() -> Stf:
    s = Stf(
        "mirror_cpu",
        "flow mirror to a capture port and to the CPU (packet_in); packet_out from the CPU",
    )
    l2(s, 2, HOST_MAC[2])
    s.c("flows to QP 0x12 mirrored through session 5 to capture port 7")
    s.c("(ternary keys left out are wildcards)")
    s.add("mirror_flow", {"bth_dqpn": "0x000012"}, "mirror_to", {"session": 5}, prio=10)
    s.cmd("mirroring_add 5 7")
    f = roce_v2()
    s.packet(1, f)
    s.expect(2, f)
    s.expect(7, f)
    s.c("QP 0x13 not mirrored")
    g = roce_v2(dqpn=0x13)
    s.packet(1, g)
    s.expect(2, g)
    s.c("QP 0x14 mirrored to the CPU (session 6 -> port 255): packet_in header = port 1, reason 3")
    s.add("mirror_flow", {"bth_dqpn": "0x000014"}, "mirror_to", {"session": 6}, prio=10)
    s.cmd(f"mirroring_add 6 {CPU_PORT}")
    h = roce_v2(dqpn=0x14)
    s.packet(1, h)
    s.expect(2, h)
    # packet_in: ingress_port 9 bits = 1, reason 8 bits = 3, pad 7 -> 0x00 0x81 0x80
    s.expect(CPU_PORT, bytes([0x00, 0x81, 0x80]) + h)
    s.c("packet_out from the CPU: egress_port 9 bits = 3 -> 0x01 0x80, sent as is")
    s.packet(CPU_PORT, bytes([0x01, 0x80]) + f)
    s.expect(3, f)
    return s


def case_malformed() -> Stf:
    s = Stf(
        "malformed",
        "parser errors (truncated headers) reach ingress and are dropped (DROP_MALFORMED)",
    )
    l2(s, 2, HOST_MAC[2])
    f = roce_v2()
    s.c("frame cut inside the BTH: dropped")
    s.packet(1, f[: 14 + 20 + 8 + 6])
    s.c("frame cut inside the IPv4 header: dropped")
    s.packet(1, f[: 14 + 10])
    s.c("a whole frame still passes")
    s.packet(1, f)
    s.expect(2, f)
    s.c("extended headers follow the opcode: 8 bytes after the BTH are too short for a")
    s.c("WRITE ONLY's 16-byte RETH (dropped) but fine for a SEND ONLY (payload)")
    cut = 14 + 20 + 8 + 12 + 8
    s.packet(1, roce_v2(opcode=OP_WRITE_ONLY)[:cut])
    g = roce_v2(opcode=OP_SEND_ONLY)[:cut]
    s.packet(1, g)
    s.expect(2, g)
    s.c("WRITE ONLY with immediate: RETH and ImmDt (20 bytes) must both be there")
    s.packet(1, roce_v2(opcode=0x0B, payload=b"")[: 14 + 20 + 8 + 12 + 18])
    s.c("FETCH_ADD cut inside its 28-byte AtomicETH: dropped")
    s.packet(1, roce_v2(opcode=0x14, payload=b"")[: 14 + 20 + 8 + 12 + 20])
    s.c("ATOMIC ACKNOWLEDGE: AETH (4) then AtomicAckETH (8); 10 bytes after the BTH: dropped")
    s.packet(1, roce_v2(opcode=0x12, payload=bytes(16))[: 14 + 20 + 8 + 12 + 10])
    s.c("RDMA READ RESPONSE LAST (0x0F) carries an AETH: 2 bytes after the BTH are too short")
    s.packet(1, roce_v2(opcode=0x0F, payload=bytes(16))[: 14 + 20 + 8 + 12 + 2])
    s.c("a short non-IP frame is fine (nothing to parse beyond Ethernet)")
    arp = pad60(mac(HOST_MAC[2]) + mac(HOST_MAC[1]) + b"\x08\x06" + bytes(28))
    s.packet(1, arp)
    s.expect(2, arp)
    s.counter("drops", 1 * 16 + 8, 7)
    return s


def case_mtu() -> Stf:
    s = Stf(
        "mtu", "egress MTU: a packet larger than the port's IP MTU is dropped (DROP_MTU, reason 11)"
    )
    l2(s, 2, HOST_MAC[2])
    l2(s, 3, HOST_MAC[3])
    s.add("port_mtu", {"standard_metadata.egress_port": "2"}, "set_port_mtu", {"mtu_bytes": 1084})
    s.c("IPv4 WRITE ONLY with 1024 B: IP length 20+8+12+16+1024+4 = 1084 = MTU: passes")
    f = roce_v2(opcode=OP_WRITE_ONLY, payload=bytes(1024))
    s.packet(1, f)
    s.expect(2, f)
    s.c("one byte more (1025 B payload, pad 3: IP length 1088): dropped")
    s.packet(1, roce_v2(opcode=OP_WRITE_ONLY, payload=bytes(1025)))
    s.c("the same 1024 B over IPv6: IP length 40+8+12+16+1024+4 = 1104 > 1084: dropped")
    src, dst = "2001:db8::1", "2001:db8::2"
    s.packet(1, roce_v2(src=src, dst=dst, opcode=OP_WRITE_ONLY, payload=bytes(1024)))
    s.c("port 3 has no port_mtu entry: not enforced")
    g = roce_v2(src=src, dst=dst, dmac=HOST_MAC[3], opcode=OP_WRITE_ONLY, payload=bytes(1024))
    s.packet(1, g)
    s.expect(3, g)
    s.c("MTU 1104 on port 3: the 1104 B IPv6 packet passes, 1108 B does not")
    s.add("port_mtu", {"standard_metadata.egress_port": "3"}, "set_port_mtu", {"mtu_bytes": 1104})
    s.packet(1, g)
    s.expect(3, g)
    s.packet(
        1, roce_v2(src=src, dst=dst, dmac=HOST_MAC[3], opcode=OP_WRITE_ONLY, payload=bytes(1025))
    )
    s.c("RoCEv1: the GRH is the L2 payload, 40 + GRH payload length 32 = 72 bytes: MTU 72 passes")
    l2(s, 4, HOST_MAC[4])
    v1 = rocev1(dmac=HOST_MAC[4])
    s.add("port_mtu", {"standard_metadata.egress_port": "4"}, "set_port_mtu", {"mtu_bytes": 72})
    s.packet(1, v1)
    s.expect(4, v1)
    s.c("the same frame toward port 5, MTU 71: dropped")
    s.add("port_mtu", {"standard_metadata.egress_port": "5"}, "set_port_mtu", {"mtu_bytes": 71})
    l2(s, 5, HOST_MAC[5])
    s.packet(1, rocev1(dmac=HOST_MAC[5]))
    s.counter("drops", 2 * 16 + 11, 2)
    s.counter("drops", 3 * 16 + 11, 1)
    s.counter("drops", 4 * 16 + 11, 0)
    s.counter("drops", 5 * 16 + 11, 1)
    s.c("roce_tx counts what left, not what the MTU check dropped")
    s.counter("roce_tx", 2 * 8 + 0, 1)
    s.counter("roce_tx", 3 * 8 + 0, 2)
    s.counter("roce_tx", 4 * 8 + 0, 1)
    s.counter("roce_tx", 5 * 8 + 0, 0)
    return s


CASES = [
    case_l2,
    case_ipv4,
    case_ipv6,
    case_ecmp,
    case_classify,
    case_ecn,
    case_ecn_non_ect,
    case_pfc,
    case_pfc_refresh,
    case_pfc_classes,
    case_pfc_rx,
    case_cnp_np,
    case_cnp_v6,
    case_cnp_routed,
    case_cnp_rate,
    case_rocev1,
    case_fault,
    case_mirror_cpu,
    case_malformed,
    case_mtu,
]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for case in CASES:
        stf = case()
        path = HERE / f"{stf.name}.stf"
        text = stf.text()
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print("stale (run p4src/tests/gen_stf.py):", " ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
