"""Frame builders: RoCEv2 (IPv4/IPv6) and RoCEv1 RC packets, CNP, ACK/NAK, PFC, PAUSE.

Two paths from one `RoceSpec`: `spec_packet()` builds a scapy packet (the reference, and
what pcaps and `show()` use); `spec_frame()` packs the same bytes with struct and zlib,
fast enough for scenarios (tests assert both paths give identical bytes).
Frames carry no FCS and are zero-padded to 60 bytes.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from scapy.contrib.roce import AETH, BTH, GRH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw

from . import layers  # noqa: F401  (binds RETH/ImmDt/AETH/MAC control for dissection)
from .constants import (
    AETH_ACK,
    AETH_ACK_NO_CREDIT,
    AETH_NAK_PSN_SEQ_ERROR,
    AETH_OPCODES,
    AETH_RNR_NAK,
    ATOMICACKETH_OPCODES,
    ATOMICETH_OPCODES,
    CNP_OPCODE,
    CNP_RESERVED_LEN,
    ETH_P_8021Q,
    ETH_P_IPV4,
    ETH_P_IPV6,
    ETH_P_MAC_CONTROL,
    ETH_P_ROCEV1,
    GRH_NEXT_HEADER_BTH,
    IMMDT_OPCODES,
    IPPROTO_UDP,
    MAC_CONTROL_PAUSE,
    MAC_CONTROL_PFC,
    MIN_FRAME_LEN,
    OPCODE_BY_NAME,
    PFC_DST_MAC,
    RC_ACK,
    RETH_OPCODES,
    ROCE_SPORT_MAX,
    ROCE_SPORT_MIN,
    ROCEV2_UDP_PORT,
)
from .icrc import icrc_v1, icrc_v2, pack_icrc
from .layers import PFC, RETH, AtomicAckETH, AtomicAETH, AtomicETH, ImmDt, MACControl, Pause

__all__ = [
    "RoceSpec",
    "roce_frame",
    "roce_packet",
    "spec_frame",
    "spec_packet",
    "cnp_frame",
    "ack_frame",
    "nak_seq_frame",
    "rnr_nak_frame",
    "pfc_frame",
    "pfc_packet",
    "pause_frame",
    "pause_packet",
    "pad_frame",
    "flow_sport",
    "mac_to_int",
    "ip_to_int",
]

DEFAULT_SRC_MAC = "02:00:00:00:00:01"
DEFAULT_DST_MAC = "02:00:00:00:00:02"
DEFAULT_DSCP = 26  # a common lossless RoCE class (priority 3)
ECN_ECT0 = 2  # DCQCN senders mark ECT(0)
CNP_DSCP = 48  # CNPs usually travel in a high-priority class


def pad_frame(frame: bytes) -> bytes:
    """Zero-pad to the 60-byte Ethernet minimum (frames here carry no FCS)."""
    return frame + bytes(MIN_FRAME_LEN - len(frame)) if len(frame) < MIN_FRAME_LEN else frame


def flow_sport(src: str, dst: str, qpn: int) -> int:
    """A deterministic entropy source port in 0xC000-0xFFFF for one QP's flow."""
    h = zlib.crc32(f"{src}|{dst}|{qpn}".encode())
    return ROCE_SPORT_MIN | (h & (ROCE_SPORT_MAX - ROCE_SPORT_MIN))


@lru_cache(maxsize=4096)
def mac_to_int(mac: str) -> int:
    return int(mac.replace(":", "").replace("-", ""), 16)


@lru_cache(maxsize=4096)
def ip_to_int(addr: str) -> int:
    return int(ipaddress.ip_address(addr))


@lru_cache(maxsize=4096)
def _gid(addr: str) -> str:
    """RoCEv1 GIDs are 128-bit: an IPv4 address becomes its IPv4-mapped IPv6 form."""
    ip = ipaddress.ip_address(addr)
    if ip.version == 4:
        return str(ipaddress.IPv6Address(f"::ffff:{ip}"))
    return str(ip)


@lru_cache(maxsize=4096)
def _is_v6(addr: str) -> bool:
    return ipaddress.ip_address(addr).version == 6


@dataclass(frozen=True)
class RoceSpec:
    """Everything that goes into one RC RoCE frame. Opcode-specific extended headers
    (RETH: va/rkey/dlen, ImmDt: imm, AETH: syndrome/msn) are emitted as the opcode requires.
    IPv6 is used when the addresses are IPv6; `version=1` builds RoCEv1 (GRH, GIDs)."""

    src: str
    dst: str
    opcode: int
    dqpn: int
    psn: int
    payload: bytes = b""
    eth_src: str = DEFAULT_SRC_MAC
    eth_dst: str = DEFAULT_DST_MAC
    vlan: int | None = None
    pcp: int = 0
    dscp: int = DEFAULT_DSCP
    ecn: int = ECN_ECT0
    ttl: int = 64
    sport: int | None = None  # None: flow_sport(src, dst, dqpn)
    pkey: int = 0xFFFF
    se: int = 0
    m: int = 0
    pad: int | None = None  # None: pad the payload to a multiple of 4 and count it
    tver: int = 0
    fecn: int = 0
    becn: int = 0
    ackreq: int = 0
    va: int = 0
    rkey: int = 0
    dlen: int | None = None  # None: len(payload)
    imm: int = 0
    swap: int = 0  # AtomicETH swap (CMP_SWAP) or add (FETCH_ADD) data; va/rkey as for RETH
    compare: int = 0  # AtomicETH compare data
    orig: int = 0  # AtomicAckETH original remote data
    syndrome: int = 0
    msn: int = 0
    version: int = 2
    ip_id: int = 0
    flow_label: int = 0
    cnp_reserved: bytes = field(default=bytes(CNP_RESERVED_LEN), repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.opcode, str):
            object.__setattr__(self, "opcode", OPCODE_BY_NAME[self.opcode])
        if self.sport is None:
            object.__setattr__(self, "sport", flow_sport(self.src, self.dst, self.dqpn))
        elif not ROCE_SPORT_MIN <= self.sport <= ROCE_SPORT_MAX:
            # RoCEv2 entropy range; also keeps scapy from dissecting port 53 as DNS.
            raise ValueError(f"RoCEv2 UDP source port {self.sport:#x} outside 0xC000-0xFFFF")
        if self.version not in (1, 2):
            raise ValueError(f"RoCE version {self.version} (1 or 2)")
        for name, bits in (
            ("dqpn", 24),
            ("psn", 24),
            ("msn", 24),
            ("dscp", 6),
            ("ecn", 2),
            ("pcp", 3),
            ("pkey", 16),
            ("imm", 32),
            ("rkey", 32),
            ("va", 64),
            ("swap", 64),
            ("compare", 64),
            ("orig", 64),
            ("syndrome", 8),
            ("ttl", 8),
            ("tver", 4),
            ("opcode", 8),
        ):
            v = getattr(self, name)
            if not 0 <= v < (1 << bits):
                raise ValueError(f"{name}={v} does not fit in {bits} bits")
        if self.vlan is not None and not 0 <= self.vlan < 4096:
            raise ValueError(f"VLAN id {self.vlan} outside 0-4095")

    @property
    def ipv6(self) -> bool:
        return self.version == 1 or _is_v6(self.src)

    @property
    def pad_count(self) -> int:
        return (-len(self.payload)) % 4 if self.pad is None else self.pad

    @property
    def body(self) -> bytes:
        """What follows the extended headers: the payload and its pad bytes."""
        if self.opcode == CNP_OPCODE:
            return self.cnp_reserved
        return self.payload + bytes(self.pad_count) if self.pad is None else self.payload

    @property
    def dma_len(self) -> int:
        return len(self.payload) if self.dlen is None else self.dlen

    def ext_headers(self) -> bytes:
        out = b""
        if self.opcode in RETH_OPCODES:
            out += struct.pack("!QII", self.va, self.rkey, self.dma_len)
        if self.opcode in IMMDT_OPCODES:
            out += struct.pack("!I", self.imm)
        elif self.opcode in AETH_OPCODES:
            out += struct.pack("!I", (self.syndrome << 24) | self.msn)
            if self.opcode in ATOMICACKETH_OPCODES:
                out += struct.pack("!Q", self.orig)
        elif self.opcode in ATOMICETH_OPCODES:
            out += struct.pack("!QIQQ", self.va, self.rkey, self.swap, self.compare)
        return out


def spec_frame(s: RoceSpec) -> bytes:
    """Pack a RoceSpec into frame bytes (struct + zlib, no scapy)."""
    bth = struct.pack(
        "!BBHBBHBBH",
        s.opcode,
        (s.se << 7) | (s.m << 6) | (s.pad_count << 4) | s.tver,
        s.pkey,
        (s.fecn << 7) | (s.becn << 6),
        s.dqpn >> 16,
        s.dqpn & 0xFFFF,
        s.ackreq << 7,
        s.psn >> 16,
        s.psn & 0xFFFF,
    )
    roce = bth + s.ext_headers() + s.body
    tos = (s.dscp << 2) | s.ecn
    if s.version == 1:
        et = ETH_P_ROCEV1
        ip = _v6_header(
            tos, s.flow_label, len(roce) + 4, GRH_NEXT_HEADER_BTH, s.ttl, _gid(s.src), _gid(s.dst)
        )
        pkt = ip + roce
        pkt += pack_icrc(icrc_v1(pkt))
    else:
        udp_len = 8 + len(roce) + 4
        udp = struct.pack("!HHHH", s.sport, ROCEV2_UDP_PORT, udp_len, 0)
        if s.ipv6:
            et = ETH_P_IPV6
            ip = _v6_header(tos, s.flow_label, udp_len, IPPROTO_UDP, s.ttl, s.src, s.dst)
        else:
            et = ETH_P_IPV4
            ip = _v4_header(tos, 20 + udp_len, s.ip_id, s.ttl, IPPROTO_UDP, s.src, s.dst)
        pkt = ip + udp + roce
        pkt += pack_icrc(icrc_v2(pkt))
    return pad_frame(_eth(s.eth_dst, s.eth_src, et, s.vlan, s.pcp) + pkt)


class PsnTemplate:
    """A frame spec_frame built, to send again with another PSN: only the PSN's three BTH
    bytes and the ICRC change (no Ethernet, IP or UDP field depends on the PSN), so a NIC
    sending a message's packets patches those instead of packing every header again."""

    __slots__ = ("head", "mid", "tail", "crc0")

    def __init__(self, frame: bytes, s: RoceSpec):
        l2 = 18 if s.vlan is not None else 14
        v6 = s.version == 1 or s.ipv6
        if v6:  # the GRH or IPv6 header: 40 bytes + its payload length
            end = l2 + 40 + ((frame[l2 + 4] << 8) | frame[l2 + 5])
        else:
            end = l2 + ((frame[l2 + 2] << 8) | frame[l2 + 3])
        psn = l2 + (40 if v6 else 20) + (0 if s.version == 1 else 8) + 9
        self.head, self.mid, self.tail = frame[:psn], frame[psn + 3 : end - 4], frame[end:]
        # the ICRC is one CRC32 stream and the bytes up to the PSN never change: its state
        # there (icrc_v2/v1 of that prefix, which reaches past the masked BTH byte 4), then
        # zlib.crc32(rest, state) == the ICRC of prefix + rest
        self.crc0 = (icrc_v1 if s.version == 1 else icrc_v2)(frame[l2:psn])

    def frame(self, psn: int) -> bytes:
        """spec_frame of the same spec with this PSN (24 bits)."""
        p = psn.to_bytes(3, "big")
        icrc = zlib.crc32(self.mid, zlib.crc32(p, self.crc0))
        return b"".join((self.head, p, self.mid, icrc.to_bytes(4, "little"), self.tail))


def psn_template(
    src: str, dst: str, opcode: int | str, dqpn: int, payload: bytes = b"", **kw: object
) -> PsnTemplate:
    """roce_frame's arguments but the PSN: a template to stamp PSNs into."""
    s = RoceSpec(src, dst, opcode, dqpn, 0, payload, **kw)  # type: ignore[arg-type]
    return PsnTemplate(spec_frame(s), s)


def _eth(dst: str, src: str, et: int, vlan: int | None, pcp: int) -> bytes:
    hdr = mac_to_int(dst).to_bytes(6, "big") + mac_to_int(src).to_bytes(6, "big")
    if vlan is not None:
        hdr += struct.pack("!HH", ETH_P_8021Q, (pcp << 13) | vlan)
    return hdr + struct.pack("!H", et)


def _v4_header(tos: int, total: int, ip_id: int, ttl: int, proto: int, src: str, dst: str) -> bytes:
    hdr = struct.pack(
        "!BBHHHBBHII",
        0x45,
        tos,
        total,
        ip_id,
        0x4000,
        ttl,
        proto,
        0,
        ip_to_int(src),
        ip_to_int(dst),
    )
    s = sum(struct.unpack("!10H", hdr))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return hdr[:10] + struct.pack("!H", ~s & 0xFFFF) + hdr[12:]


def _v6_header(tc: int, flow: int, plen: int, nh: int, hlim: int, src: str, dst: str) -> bytes:
    return (
        struct.pack("!IHBB", (6 << 28) | (tc << 20) | flow, plen, nh, hlim)
        + ip_to_int(src).to_bytes(16, "big")
        + ip_to_int(dst).to_bytes(16, "big")
    )


def spec_packet(s: RoceSpec) -> Packet:
    """The same frame as spec_frame(s), built with scapy (without the 60-byte padding:
    bytes(pkt) then pad_frame(), see `packet_bytes`)."""
    tos = (s.dscp << 2) | s.ecn
    if s.vlan is not None:
        l2: Packet = Ether(src=s.eth_src, dst=s.eth_dst) / Dot1Q(prio=s.pcp, vlan=s.vlan)
    else:
        l2 = Ether(src=s.eth_src, dst=s.eth_dst)
    bth = BTH(
        opcode=s.opcode,
        solicited=s.se,
        migreq=s.m,
        padcount=s.pad_count,
        version=s.tver,
        pkey=s.pkey,
        fecn=s.fecn,
        becn=s.becn,
        dqpn=s.dqpn,
        ackreq=s.ackreq,
        psn=s.psn,
    )
    roce: Packet = bth
    if s.opcode in RETH_OPCODES:
        roce = roce / RETH(va=s.va, rkey=s.rkey, dlen=s.dma_len)
    if s.opcode in IMMDT_OPCODES:
        roce = roce / ImmDt(imm=s.imm)
    elif s.opcode in ATOMICACKETH_OPCODES:
        roce = roce / AtomicAETH(syndrome=s.syndrome, msn=s.msn) / AtomicAckETH(orig=s.orig)
    elif s.opcode in AETH_OPCODES:
        roce = roce / AETH(syndrome=s.syndrome, msn=s.msn)
    elif s.opcode in ATOMICETH_OPCODES:
        roce = roce / AtomicETH(va=s.va, rkey=s.rkey, swap=s.swap, compare=s.compare)
    if s.opcode == CNP_OPCODE:
        roce = roce / CNPPadding(
            reserved1=int.from_bytes(s.cnp_reserved[:8], "big"),
            reserved2=int.from_bytes(s.cnp_reserved[8:], "big"),
        )
    elif s.body:
        roce = roce / Raw(s.body)
    if s.version == 1:
        grh = GRH(
            ipver=6,
            tclass=tos,
            flowlabel=s.flow_label,
            nexthdr=GRH_NEXT_HEADER_BTH,
            hoplmt=s.ttl,
            sgid=ip_to_int(_gid(s.src)),
            dgid=ip_to_int(_gid(s.dst)),
            paylen=0,
        )
        pkt = l2 / grh / roce
        # scapy computes the ICRC only under UDP: compute the RoCEv1 one ourselves.
        pkt[BTH].icrc = 0
        pkt[GRH].paylen = len(pkt[BTH])  # BTH to ICRC inclusive
        raw = bytes(pkt)
        grh_off = len(raw) - 40 - pkt[GRH].paylen
        icrc = icrc_v1(raw[grh_off:-4])
        pkt[BTH].icrc = int.from_bytes(pack_icrc(icrc), "big")
        if s.vlan is None:
            pkt[Ether].type = ETH_P_ROCEV1
        else:
            pkt[Dot1Q].type = ETH_P_ROCEV1
        return pkt
    udp = UDP(sport=s.sport, dport=ROCEV2_UDP_PORT, chksum=0)
    if s.ipv6:
        ip: Packet = IPv6(src=s.src, dst=s.dst, tc=tos, fl=s.flow_label, hlim=s.ttl)
    else:
        ip = IP(src=s.src, dst=s.dst, tos=tos, id=s.ip_id, flags="DF", ttl=s.ttl)
    return l2 / ip / udp / roce


def packet_bytes(pkt: Packet) -> bytes:
    return pad_frame(bytes(pkt))


def roce_frame(
    src: str, dst: str, opcode: int | str, dqpn: int, psn: int, payload: bytes = b"", **kw: object
) -> bytes:
    """One RC RoCE frame as bytes; keyword arguments are RoceSpec fields."""
    return spec_frame(RoceSpec(src, dst, opcode, dqpn, psn, payload, **kw))  # type: ignore[arg-type]


def roce_packet(
    src: str, dst: str, opcode: int | str, dqpn: int, psn: int, payload: bytes = b"", **kw: object
) -> Packet:
    """roce_frame() as a scapy packet (unpadded)."""
    return spec_packet(RoceSpec(src, dst, opcode, dqpn, psn, payload, **kw))  # type: ignore[arg-type]


def cnp_frame(src: str, dst: str, dqpn: int, **kw: object) -> bytes:
    """A CNP from the notification point `src` to the reaction point `dst` (its QP `dqpn`)."""
    kw.setdefault("dscp", CNP_DSCP)
    kw.setdefault("ecn", 0)
    kw.setdefault("becn", 1)
    return roce_frame(src, dst, CNP_OPCODE, dqpn, 0, **kw)


def ack_frame(
    src: str,
    dst: str,
    dqpn: int,
    psn: int,
    msn: int,
    syndrome: int = AETH_ACK | AETH_ACK_NO_CREDIT,
    **kw: object,
) -> bytes:
    """An RC ACKNOWLEDGE (default: ACK with the credit count 'invalid')."""
    return roce_frame(src, dst, RC_ACK, dqpn, psn, syndrome=syndrome, msn=msn, **kw)


def nak_seq_frame(src: str, dst: str, dqpn: int, psn: int, msn: int, **kw: object) -> bytes:
    """PSN sequence error NAK: `psn` is the one the responder expected."""
    return ack_frame(src, dst, dqpn, psn, msn, syndrome=AETH_NAK_PSN_SEQ_ERROR, **kw)


def rnr_nak_frame(
    src: str, dst: str, dqpn: int, psn: int, msn: int, timer: int = 0, **kw: object
) -> bytes:
    """Receiver-not-ready NAK with its 5-bit RNR timer code."""
    return ack_frame(src, dst, dqpn, psn, msn, syndrome=AETH_RNR_NAK | (timer & 0x1F), **kw)


def _pfc_args(quanta: Sequence[int] | Mapping[int, int], cev: int | None) -> tuple[int, list[int]]:
    if isinstance(quanta, Mapping):
        q = [int(quanta.get(i, 0)) for i in range(8)]
        enabled = sum(1 << i for i in quanta)
    else:
        q = [int(x) for x in quanta]
        if len(q) != 8:
            raise ValueError(f"PFC needs 8 quanta, got {len(q)}")
        enabled = sum(1 << i for i, x in enumerate(q) if x)
    if any(not 0 <= x <= 0xFFFF for x in q):
        raise ValueError(f"PFC quanta out of 0-65535: {q}")
    return (enabled if cev is None else cev), q


def pfc_packet(
    src_mac: str,
    quanta: Sequence[int] | Mapping[int, int],
    cev: int | None = None,
    vlan: int | None = None,
    pcp: int = 0,
    dst_mac: str = PFC_DST_MAC,
) -> Packet:
    """802.1Qbb PFC. `quanta` is 8 pause times, or {class: time} (those classes enabled,
    time 0 = XON). `cev` overrides the class-enable vector (default: the classes given,
    or the classes with a non-zero time)."""
    cev_, q = _pfc_args(quanta, cev)
    l2: Packet = Ether(src=src_mac, dst=dst_mac)
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=pcp, vlan=vlan)
    return (
        l2
        / MACControl(opcode=MAC_CONTROL_PFC)
        / PFC(class_enable=cev_, **{f"quanta{i}": x for i, x in enumerate(q)})
    )


def pfc_frame(
    src_mac: str,
    quanta: Sequence[int] | Mapping[int, int],
    cev: int | None = None,
    vlan: int | None = None,
    pcp: int = 0,
    dst_mac: str = PFC_DST_MAC,
) -> bytes:
    """pfc_packet() as padded bytes, packed without scapy."""
    cev_, q = _pfc_args(quanta, cev)
    body = struct.pack("!HH8H", MAC_CONTROL_PFC, cev_, *q)
    return pad_frame(_eth(dst_mac, src_mac, ETH_P_MAC_CONTROL, vlan, pcp) + body)


def pause_packet(src_mac: str, pause_time: int, dst_mac: str = PFC_DST_MAC) -> Packet:
    """802.3x PAUSE for the whole link (0 resumes)."""
    return (
        Ether(src=src_mac, dst=dst_mac)
        / MACControl(opcode=MAC_CONTROL_PAUSE)
        / Pause(pause_time=pause_time)
    )


def pause_frame(src_mac: str, pause_time: int, dst_mac: str = PFC_DST_MAC) -> bytes:
    body = struct.pack("!HH", MAC_CONTROL_PAUSE, pause_time)
    return pad_frame(_eth(dst_mac, src_mac, ETH_P_MAC_CONTROL, None, 0) + body)


def with_spec(s: RoceSpec, **changes: object) -> RoceSpec:
    """A copy of `s` with some fields changed (e.g. the next PSN)."""
    return replace(s, **changes)  # type: ignore[arg-type]
