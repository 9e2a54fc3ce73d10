"""The shared test vectors: frames with the record every parser must produce.

`python -m controller.packets.vectors --write` regenerates tests/vectors/vectors.json
(deterministic: fixed seed); `--check` fails when the file is stale. `load()` reads it for
the HDL, P4 and hardware tests.

The expected records are NOT produced by the decoder: they come from a model of the frame
layout (which header spans which bytes and carries which field values), built from the
same parameters the frame was built from, so the decoder is checked against them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP, IPOption_NOP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Packet, Raw

from .build import (
    RoceSpec,
    _gid,
    ip_to_int,
    mac_to_int,
    packet_bytes,
    pause_packet,
    pfc_packet,
    spec_packet,
)
from .constants import (
    AETH_ACK,
    AETH_NAK_INVALID_REQUEST,
    AETH_NAK_PSN_SEQ_ERROR,
    AETH_NAK_REMOTE_ACCESS,
    AETH_NAK_REMOTE_OP,
    AETH_OPCODES,
    AETH_RNR_NAK,
    ATOMICACKETH_OPCODES,
    ATOMICETH_OPCODES,
    CNP_OPCODE,
    ETH_P_ARP,
    ETH_P_IPV4,
    ETH_P_IPV6,
    ETH_P_MAC_CONTROL,
    ETH_P_ROCEV1,
    IMMDT_OPCODES,
    RC_ACK,
    RC_OPCODES,
    RETH_OPCODES,
    ROCEV2_UDP_PORT,
)
from .fields import FIELD_NAMES, FIELDS, Decoded, verdict

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "tests" / "vectors" / "vectors.json"
SEED = 4791
FORMAT = 1


@dataclass(frozen=True)
class Vector:
    name: str
    description: str
    frame: bytes
    expected: dict[str, int]
    verdict: str
    tags: tuple[str, ...] = ()

    @property
    def hex(self) -> str:
        return self.frame.hex()

    def record(self) -> Decoded:
        return Decoded.from_dict(self.expected)


@dataclass
class _Seg:
    """One header in the layout model: the byte where it ends and the fields it fills."""

    name: str
    end: int
    fields: dict[str, int] = field(default_factory=dict)


def _full(fields: dict[str, int]) -> dict[str, int]:
    out = dict.fromkeys(FIELD_NAMES, 0)
    out.update(fields)
    return out


def _expect(segs: list[_Seg], cut: int | None = None, **flags: int) -> dict[str, int]:
    """The record of a frame with this layout, cut after `cut` bytes (None: whole)."""
    f: dict[str, int] = {}
    for seg in segs:
        if cut is not None and seg.end > cut:
            f["err_truncated"] = 1
            break
        f.update(seg.fields)
    f.update(flags)
    if f.get("err_truncated"):
        f["err_icrc"] = 0
    return _full(f)


def _l2_segs(eth_dst: str, eth_src: str, ethertype: int, vlan: int | None, pcp: int) -> list[_Seg]:
    eth = {"eth_dst": mac_to_int(eth_dst), "eth_src": mac_to_int(eth_src)}
    if vlan is None:
        return [_Seg("eth", 14, {**eth, "ethertype": ethertype})]
    return [
        _Seg("eth", 14, eth),
        _Seg(
            "vlan", 18, {"vlan_valid": 1, "vlan_pcp": pcp, "vlan_vid": vlan, "ethertype": ethertype}
        ),
    ]


def _ip_fields(version: int, dscp: int, ecn: int, ttl: int, src: int, dst: int) -> dict[str, int]:
    return {
        "ip_version": version,
        "dscp": dscp,
        "ecn": ecn,
        "ttl": ttl,
        "ip_src": src,
        "ip_dst": dst,
        "ecn_ce": int(ecn == 3),
    }


def roce_layout(s: RoceSpec) -> list[_Seg]:
    """Header spans and field values of spec_frame(s) (without Ethernet padding)."""
    et = ETH_P_ROCEV1 if s.version == 1 else ETH_P_IPV6 if s.ipv6 else ETH_P_IPV4
    segs = _l2_segs(s.eth_dst, s.eth_src, et, s.vlan, s.pcp)
    pos = segs[-1].end
    if s.version == 1:
        ipf = _ip_fields(6, s.dscp, s.ecn, s.ttl, ip_to_int(_gid(s.src)), ip_to_int(_gid(s.dst)))
        pos += 40
        segs.append(_Seg("grh", pos, {**ipf, "roce_version": 1}))
    else:
        ipf = _ip_fields(
            6 if s.ipv6 else 4, s.dscp, s.ecn, s.ttl, ip_to_int(s.src), ip_to_int(s.dst)
        )
        pos += 40 if s.ipv6 else 20
        segs.append(_Seg("ip", pos, ipf))
        pos += 8
        assert s.sport is not None
        segs.append(
            _Seg(
                "udp", pos, {"udp_sport": s.sport, "udp_dport": ROCEV2_UDP_PORT, "roce_version": 2}
            )
        )
    pos += 12
    segs.append(
        _Seg(
            "bth",
            pos,
            {
                "bth_opcode": s.opcode,
                "bth_se": s.se,
                "bth_m": s.m,
                "bth_pad": s.pad_count,
                "bth_tver": s.tver,
                "bth_pkey": s.pkey,
                "bth_fecn": s.fecn,
                "bth_becn": s.becn,
                "bth_dqpn": s.dqpn,
                "bth_ackreq": s.ackreq,
                "bth_psn": s.psn,
                "is_roce": 1,
                "is_cnp": int(s.opcode == CNP_OPCODE),
            },
        )
    )
    if s.tver != 0:
        return segs  # nothing after an unsupported BTH is parsed
    if s.opcode in RETH_OPCODES:
        pos += 16
        segs.append(
            _Seg(
                "reth",
                pos,
                {"reth_valid": 1, "reth_va": s.va, "reth_rkey": s.rkey, "reth_dlen": s.dma_len},
            )
        )
    if s.opcode in IMMDT_OPCODES:
        pos += 4
        segs.append(_Seg("immdt", pos, {"immdt_valid": 1, "immdt": s.imm}))
    elif s.opcode in AETH_OPCODES:
        pos += 4
        segs.append(
            _Seg("aeth", pos, {"aeth_valid": 1, "aeth_syndrome": s.syndrome, "aeth_msn": s.msn})
        )
        if s.opcode in ATOMICACKETH_OPCODES:
            pos += 8
            segs.append(_Seg("atomicacketh", pos, {"atomicack_valid": 1, "atomicack_orig": s.orig}))
    elif s.opcode in ATOMICETH_OPCODES:
        pos += 28
        segs.append(
            _Seg(
                "atomiceth",
                pos,
                {
                    "atomic_valid": 1,
                    "atomic_va": s.va,
                    "atomic_rkey": s.rkey,
                    "atomic_swap": s.swap,
                    "atomic_cmp": s.compare,
                },
            )
        )
    pos += len(s.body)
    segs.append(_Seg("cnp_reserved" if s.opcode == CNP_OPCODE else "payload", pos))
    segs.append(_Seg("icrc", pos + 4))
    return segs


def _seg(segs: list[_Seg], name: str) -> tuple[int, int]:
    """(start, end) of the named header."""
    start = 0
    for seg in segs:
        if seg.name == name:
            return start, seg.end
        start = seg.end
    raise KeyError(name)


class _Gen:
    """Collects vectors; every random choice comes from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.out: list[Vector] = []
        self.n_payload = 0

    def add(
        self,
        name: str,
        description: str,
        frame: bytes,
        expected: dict[str, int],
        tags: tuple[str, ...],
    ) -> None:
        if any(v.name == name for v in self.out):
            raise ValueError(f"duplicate vector name {name}")
        rec = Decoded.from_dict(expected)
        self.out.append(Vector(name, description, frame, rec.as_dict(), verdict(rec), tags))

    def payload(self, large: int | None = None) -> bytes:
        n = (
            large
            if large is not None
            else self.rng.choice([0, 1, 2, 3, 4, 7, 8, 13, 16, 24, 31, 32, 48, 63, 64])
        )
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def spec(self, opcode: int, *, v6: bool = False, version: int = 2, **kw: object) -> RoceSpec:
        r = self.rng
        if version == 1 or v6:
            src, dst = f"fd00::{r.randrange(1, 0xFFFF):x}", f"fd00::{r.randrange(1, 0xFFFF):x}"
        else:
            src, dst = (
                f"10.0.{r.randrange(256)}.{r.randrange(1, 255)}",
                f"10.1.{r.randrange(256)}.{r.randrange(1, 255)}",
            )
        args: dict[str, object] = dict(
            eth_src=f"02:00:00:00:{r.randrange(256):02x}:{r.randrange(256):02x}",
            eth_dst=f"02:00:00:01:{r.randrange(256):02x}:{r.randrange(256):02x}",
            sport=r.randrange(0xC000, 0x10000),
            ttl=r.choice([1, 63, 64, 255]),
            ackreq=r.randrange(2),
            se=r.randrange(2),
            m=r.randrange(2),
            va=r.getrandbits(64),
            rkey=r.getrandbits(32),
            imm=r.getrandbits(32),
            msn=r.getrandbits(24),
            ip_id=r.getrandbits(16),
            version=version,
        )
        if opcode in ATOMICETH_OPCODES | ATOMICACKETH_OPCODES:
            # (drawn only here, so that adding atomics left every older vector unchanged)
            args.update(
                swap=r.getrandbits(64),
                compare=r.getrandbits(64),
                orig=r.getrandbits(64),
                va=r.getrandbits(61) << 3,
            )
        if opcode in (RC_ACK,) or opcode in AETH_OPCODES:
            args["syndrome"] = AETH_ACK | r.randrange(0x20)
        args.update(kw)
        payload = args.pop("payload", None)
        if payload is None:
            payload = (
                b""
                if opcode in {RC_ACK, CNP_OPCODE, 0x0C} | ATOMICETH_OPCODES | ATOMICACKETH_OPCODES
                else self.payload()
            )
        return RoceSpec(src, dst, opcode, r.getrandbits(24), r.getrandbits(24), payload, **args)  # type: ignore[arg-type]


def _roce_tags(s: RoceSpec, *extra: str) -> tuple[str, ...]:
    tags = ["rocev1" if s.version == 1 else "rocev2", "ipv6" if s.ipv6 else "ipv4", *extra]
    if s.vlan is not None:
        tags.append("vlan")
    if s.opcode == CNP_OPCODE:
        tags.append("cnp")
    return tuple(tags)


def _frame(s: RoceSpec) -> bytes:
    return packet_bytes(spec_packet(s))  # scapy is the reference builder for the vectors


def _describe(s: RoceSpec) -> str:
    ip = "RoCEv1 GRH" if s.version == 1 else "IPv6" if s.ipv6 else "IPv4"
    tag = f", VLAN {s.vlan} PCP {s.pcp}" if s.vlan is not None else ""
    return (
        f"{RC_OPCODES.get(s.opcode, hex(s.opcode))} over {ip}{tag}, DSCP {s.dscp} "
        f"ECN {s.ecn}, dest QP {s.dqpn:#x}, PSN {s.psn}, {len(s.payload)}-byte payload"
    )


def generate(seed: int = SEED) -> list[Vector]:
    g = _Gen(seed)
    ok_specs: list[RoceSpec] = []

    # Every RC opcode and the CNP over IPv4 and IPv6, tagged and untagged, ECN 0..3.
    atomic_ops = sorted(ATOMICETH_OPCODES | ATOMICACKETH_OPCODES)
    ops = [op for op in sorted(RC_OPCODES) if op not in atomic_ops]  # atomics: _atomics()
    i = 0
    for v6 in (False, True):
        for op in ops:
            vlan = g.rng.randrange(1, 4095) if i % 3 == 1 else None
            kw: dict[str, object] = {"ecn": i % 4, "dscp": g.rng.choice([0, 24, 26, 46, 48])}
            if op == CNP_OPCODE:
                kw.update(becn=1, dscp=48)
            if vlan is not None:
                kw.update(vlan=vlan, pcp=g.rng.randrange(8))
            if i % 7 == 3:
                kw.update(fecn=1)
            s = g.spec(op, v6=v6, **kw)
            name = f"v2_{'ip6' if v6 else 'ip4'}_{RC_OPCODES[op].lower()}"
            g.add(name, _describe(s), _frame(s), _expect(roce_layout(s)), _roce_tags(s))
            ok_specs.append(s)
            i += 1

    # ACK flavours: ACK with credits, RNR NAK, PSN sequence error NAK.
    for v6 in (False, True):
        for label, syn in (
            ("ack_credit", AETH_ACK | 0x05),
            ("rnr_nak", AETH_RNR_NAK | 0x0E),
            ("nak_psn_seq", AETH_NAK_PSN_SEQ_ERROR),
        ):
            s = g.spec(RC_ACK, v6=v6, syndrome=syn)
            g.add(
                f"v2_{'ip6' if v6 else 'ip4'}_{label}",
                f"{label}: " + _describe(s),
                _frame(s),
                _expect(roce_layout(s)),
                _roce_tags(s, "aeth"),
            )

    # A few large payloads (up to 4096 bytes) and an explicit pkey / pad.
    for n, op, v6 in (
        (256, 0x0A, False),
        (1024, 0x07, True),
        (4096, 0x04, False),
        (4096, 0x10, True),
    ):
        s = g.spec(op, v6=v6, payload=g.payload(n))
        g.add(
            f"v2_large_{n}_{RC_OPCODES[op].lower()}_{'ip6' if v6 else 'ip4'}",
            _describe(s),
            _frame(s),
            _expect(roce_layout(s)),
            _roce_tags(s, "large"),
        )
    s = g.spec(0x01, payload=b"", ecn=2, pkey=0x8001)
    g.add(
        "v2_min_send_middle_padded",
        "SEND_MIDDLE without payload: a 58-byte packet padded to 60 (the padding follows the ICRC)",
        _frame(s),
        _expect(roce_layout(s)),
        _roce_tags(s),
    )
    s = g.spec(0x04, payload=b"abcde")
    g.add(
        "v2_send_only_pad3",
        "SEND_ONLY with a 5-byte payload: BTH pad count 3",
        _frame(s),
        _expect(roce_layout(s)),
        _roce_tags(s),
    )

    # RoCEv1.
    for j, op in enumerate((0x04, 0x06, 0x0B, 0x0C, 0x10, RC_ACK, CNP_OPCODE, 0x03)):
        kw = {"ecn": j % 4}
        if j in (2, 5):
            kw.update(vlan=g.rng.randrange(1, 4095), pcp=3)
        if op == CNP_OPCODE:
            kw.update(becn=1)
        s = g.spec(op, version=1, **kw)
        g.add(
            f"v1_{RC_OPCODES[op].lower()}",
            _describe(s),
            _frame(s),
            _expect(roce_layout(s)),
            _roce_tags(s),
        )
        ok_specs.append(s)

    # PFC and PAUSE.
    pfc_cases = [
        ("pfc_prio3", {3: 0xFFFF}, None, None, "PFC pausing priority 3 for 65535 quanta"),
        ("pfc_prio3_xon", {3: 0}, None, None, "PFC XON for priority 3 (enabled, time 0)"),
        ("pfc_multi", [0, 10, 0, 500, 0, 0, 7, 0], None, None, "PFC on classes 1, 3, 6"),
        ("pfc_all", [0x1234 + k for k in range(8)], None, None, "PFC on all 8 classes"),
        ("pfc_vlan_tagged", {0: 100, 7: 200}, None, 10, "PFC behind an 802.1Q tag"),
        (
            "pfc_cev_high_bits",
            [1, 0, 0, 0, 0, 0, 0, 0],
            0x0101,
            None,
            "class-enable vector with a reserved high bit: pfc_cev keeps the low 8 bits",
        ),
    ]
    for name, quanta, cev, vlan, desc in pfc_cases:
        src = f"02:00:00:02:00:{len(g.out) & 0xFF:02x}"
        pkt = pfc_packet(src, quanta, cev=cev, vlan=vlan, pcp=7 if vlan else 0)
        q = [quanta.get(k, 0) for k in range(8)] if isinstance(quanta, dict) else list(quanta)
        enabled = (
            cev
            if cev is not None
            else (
                sum(1 << k for k in quanta)
                if isinstance(quanta, dict)
                else sum(1 << k for k, x in enumerate(quanta) if x)
            )
        )
        segs = _l2_segs("01:80:c2:00:00:01", src, ETH_P_MAC_CONTROL, vlan, 7 if vlan else 0)
        pos = segs[-1].end + 20
        segs.append(
            _Seg(
                "pfc",
                pos,
                {
                    "is_pfc": 1,
                    "pfc_cev": enabled & 0xFF,
                    **{f"pfc_quanta{k}": x for k, x in enumerate(q)},
                },
            )
        )
        g.add(name, desc, packet_bytes(pkt), _expect(segs), ("pfc",) + (("vlan",) if vlan else ()))
        if name == "pfc_multi":
            g.add(
                "trunc_pfc_body",
                "PFC frame ending inside its body (after 3 quanta)",
                packet_bytes(pkt)[: segs[-1].end - 10],
                _expect(segs, segs[-1].end - 10),
                ("pfc", "malformed"),
            )
    for name, t in (("pause_ffff", 0xFFFF), ("pause_xon", 0)):
        src = "02:00:00:03:00:01"
        segs = _l2_segs("01:80:c2:00:00:01", src, ETH_P_MAC_CONTROL, None, 0)
        segs.append(_Seg("pause", 18, {"is_pause": 1, "pause_time": t}))
        g.add(
            name,
            f"802.3x PAUSE, time {t}",
            packet_bytes(pause_packet(src, t)),
            _expect(segs),
            ("pause",),
        )
    pkt = Ether(src="02:00:00:03:00:02", dst="01:80:c2:00:00:01", type=ETH_P_MAC_CONTROL) / Raw(
        b"\x00\x02" + bytes(6)
    )
    g.add(
        "mac_control_gate",
        "MAC control opcode 0x0002 (GATE): neither PFC nor PAUSE",
        packet_bytes(pkt),
        _expect(_l2_segs("01:80:c2:00:00:01", "02:00:00:03:00:02", ETH_P_MAC_CONTROL, None, 0)),
        ("non_roce",),
    )
    g.add(
        "trunc_pause_body",
        "PAUSE frame ending inside its pause time",
        packet_bytes(pause_packet("02:00:00:03:00:03", 5))[:17],
        _expect(
            _l2_segs("01:80:c2:00:00:01", "02:00:00:03:00:03", ETH_P_MAC_CONTROL, None, 0)
            + [_Seg("pause", 18)],
            17,
        ),
        ("pause", "malformed"),
    )
    g.add(
        "trunc_mac_control_opcode",
        "MAC control frame ending inside its opcode",
        packet_bytes(pause_packet("02:00:00:03:00:04", 5))[:15],
        _expect(
            _l2_segs("01:80:c2:00:00:01", "02:00:00:03:00:04", ETH_P_MAC_CONTROL, None, 0)
            + [_Seg("opcode", 16)],
            15,
        ),
        ("pause", "malformed"),
    )

    _non_roce(g)
    _malformed(g)
    _atomics_and_naks(g, seed)
    return g.out


def _atomics_and_naks(g: _Gen, seed: int) -> None:
    """Atomics (AtomicETH, AtomicAckETH), the RNR NAK timer range and the fatal NAKs
    (remote access = a bad rkey, invalid request, remote operational error). Own seeded
    generator: the vectors before these do not move."""
    g.rng = random.Random(seed * 18 + 1)
    for j, (op, v6) in enumerate(
        (op, v6) for v6 in (False, True) for op in sorted(ATOMICETH_OPCODES | ATOMICACKETH_OPCODES)
    ):
        kw: dict[str, object] = {"ecn": j % 4}
        if j == 4:
            kw.update(vlan=g.rng.randrange(1, 4095), pcp=3)
        s = g.spec(op, v6=v6, **kw)
        name = f"v2_{'ip6' if v6 else 'ip4'}_{RC_OPCODES[op].lower()}"
        g.add(name, _describe(s), _frame(s), _expect(roce_layout(s)), _roce_tags(s, "atomic"))
    for op in sorted(ATOMICETH_OPCODES | ATOMICACKETH_OPCODES):
        s = g.spec(op, version=1)
        g.add(
            f"v1_{RC_OPCODES[op].lower()}",
            _describe(s),
            _frame(s),
            _expect(roce_layout(s)),
            _roce_tags(s, "atomic"),
        )
    s = g.spec(0x14, swap=1, compare=0, va=0x1000)
    segs = roce_layout(s)
    start, end = _seg(segs, "atomiceth")
    for cut in (start + 12, end - 1):
        g.add(
            f"trunc_atomiceth_{cut - start}",
            f"FETCH_ADD ending {cut - start} bytes into its 28-byte AtomicETH",
            _frame(s)[:cut],
            _expect(segs, cut),
            _roce_tags(s, "atomic", "malformed"),
        )
    s = g.spec(0x12)
    segs = roce_layout(s)
    start, _end = _seg(segs, "atomicacketh")
    g.add(
        "trunc_atomicacketh",
        "ATOMIC_ACK ending 3 bytes into its AtomicAckETH",
        _frame(s)[: start + 3],
        _expect(segs, start + 3),
        _roce_tags(s, "atomic", "malformed"),
    )
    naks = [
        (f"rnr_nak_timer{c}", AETH_RNR_NAK | c, f"RNR NAK, timer code {c}") for c in (0, 1, 12, 31)
    ]
    naks += [
        (
            "nak_remote_access",
            AETH_NAK_REMOTE_ACCESS,
            "NAK remote access error (bad rkey or range)",
        ),
        ("nak_invalid_request", AETH_NAK_INVALID_REQUEST, "NAK invalid request"),
        ("nak_remote_op", AETH_NAK_REMOTE_OP, "NAK remote operational error"),
    ]
    for v6 in (False, True):
        for label, syn, desc in naks:
            s = g.spec(RC_ACK, v6=v6, syndrome=syn)
            g.add(
                f"v2_{'ip6' if v6 else 'ip4'}_{label}",
                f"{desc}: " + _describe(s),
                _frame(s),
                _expect(roce_layout(s)),
                _roce_tags(s, "aeth"),
            )


def _plain_segs(pkt: Packet, vlan: int | None = None, pcp: int = 0) -> list[_Seg]:
    """Layout of a scapy-built non-RoCE IP/UDP packet."""
    segs = _l2_segs(
        pkt[Ether].dst,
        pkt[Ether].src,
        pkt[Dot1Q].type if vlan is not None else pkt[Ether].type,
        vlan,
        pcp,
    )
    pos = segs[-1].end
    if IP in pkt:
        ip = pkt[IP]
        pos += 20
        segs.append(
            _Seg(
                "ip",
                pos,
                _ip_fields(
                    4, ip.tos >> 2, ip.tos & 3, ip.ttl, ip_to_int(ip.src), ip_to_int(ip.dst)
                ),
            )
        )
    elif IPv6 in pkt:
        ip6 = pkt[IPv6]
        pos += 40
        segs.append(
            _Seg(
                "ip",
                pos,
                _ip_fields(
                    6, ip6.tc >> 2, ip6.tc & 3, ip6.hlim, ip_to_int(ip6.src), ip_to_int(ip6.dst)
                ),
            )
        )
    if UDP in pkt:
        pos += 8
        segs.append(_Seg("udp", pos, {"udp_sport": pkt[UDP].sport, "udp_dport": pkt[UDP].dport}))
    return segs


def _non_roce(g: _Gen) -> None:
    m1, m2 = "02:00:00:04:00:01", "02:00:00:04:00:02"
    cases: list[tuple[str, str, Packet, int | None]] = [
        (
            "udp4_not_roce",
            "IPv4 UDP to port 4789, not RoCE",
            Ether(dst=m2, src=m1)
            / IP(src="10.2.0.1", dst="10.2.0.2", tos=0x02, ttl=17)
            / UDP(sport=0xC123, dport=4789)
            / Raw(b"x" * 8),
            None,
        ),
        (
            "udp4_not_roce_ce",
            "IPv4 UDP (not RoCE) with ECN CE: ecn_ce is set anyway",
            Ether(dst=m2, src=m1)
            / IP(src="10.2.0.3", dst="10.2.0.4", tos=0xBB)
            / UDP(sport=50000, dport=9000)
            / Raw(b"y" * 30),
            None,
        ),
        (
            "udp6_not_roce",
            "IPv6 UDP to port 5000, not RoCE, tagged",
            Ether(dst=m2, src=m1)
            / Dot1Q(prio=2, vlan=100)
            / IPv6(src="fd00::a", dst="fd00::b", tc=0x61, hlim=9)
            / UDP(sport=40000, dport=5000)
            / Raw(b"z" * 20),
            100,
        ),
        (
            "udp4_sport_4791",
            "IPv4 UDP from port 4791 to 5001: only the destination port counts",
            Ether(dst=m2, src=m1)
            / IP(src="10.2.0.5", dst="10.2.0.6")
            / UDP(sport=ROCEV2_UDP_PORT, dport=5001)
            / Raw(bytes(16)),
            None,
        ),
        (
            "tcp4",
            "IPv4 TCP: not UDP",
            Ether(dst=m2, src=m1)
            / IP(src="10.2.0.7", dst="10.2.0.8", tos=0x01)
            / TCP(sport=1234, dport=4791),
            None,
        ),
        (
            "ip6_tcp",
            "IPv6 TCP: not UDP",
            Ether(dst=m2, src=m1)
            / IPv6(src="fd00::c", dst="fd00::d", tc=0x03)
            / TCP(sport=1234, dport=80),
            None,
        ),
    ]
    for name, desc, pkt, vlan in cases:
        g.add(
            name,
            desc,
            packet_bytes(pkt),
            _expect(_plain_segs(pkt, vlan, 2 if vlan else 0)),
            ("non_roce",),
        )
    arp = Ether(dst="ff:ff:ff:ff:ff:ff", src=m1) / ARP(psrc="10.2.0.1", pdst="10.2.0.2", hwsrc=m1)
    g.add(
        "arp",
        "ARP request: not IP",
        packet_bytes(arp),
        _expect(_l2_segs("ff:ff:ff:ff:ff:ff", m1, ETH_P_ARP, None, 0)),
        ("non_roce",),
    )
    # RoCEv1 EtherType whose GRH does not announce a BTH.
    s = g.spec(0x04, version=1, payload=b"abcd")
    frame = bytearray(_frame(s))
    frame[14 + 6] = 0x3B  # next header: none
    segs = roce_layout(s)
    g.add(
        "v1_grh_not_bth",
        "RoCEv1 GRH with next header 0x3B: no BTH follows",
        bytes(frame),
        _expect(
            segs[:1]
            + [_Seg("grh", 54, {k: v for k, v in segs[1].fields.items() if k != "roce_version"})]
        ),
        ("rocev1", "non_roce"),
    )


def _malformed(g: _Gen) -> None:
    # Truncated inside each header (frames are cut, not padded: the bytes really end there).
    def trunc(name: str, s: RoceSpec, where: str, into: int, desc: str) -> None:
        segs = roce_layout(s)
        start, end = _seg(segs, where)
        cut = min(start + into, end - 1)
        frame = _frame(s)[:cut]
        g.add(
            name,
            f"{desc}: frame ends at byte {cut}, inside the {where} ({start}..{end})",
            frame,
            _expect(segs, cut),
            _roce_tags(s, "malformed"),
        )

    trunc("trunc_eth", g.spec(0x0A), "eth", 9, "Ethernet header")
    trunc("trunc_vlan", g.spec(0x0A, vlan=7, pcp=3), "vlan", 2, "VLAN tag")
    trunc("trunc_ipv4", g.spec(0x0A), "ip", 10, "IPv4 header")
    trunc("trunc_ipv6", g.spec(0x0A, v6=True), "ip", 24, "IPv6 header")
    trunc("trunc_udp", g.spec(0x0A), "udp", 4, "UDP header")
    trunc("trunc_bth", g.spec(0x0A), "bth", 6, "BTH")
    trunc("trunc_reth", g.spec(0x06, v6=True), "reth", 9, "RETH")
    trunc("trunc_aeth", g.spec(RC_ACK), "aeth", 2, "AETH")
    trunc("trunc_immdt", g.spec(0x0B), "immdt", 3, "ImmDt after a complete RETH")
    trunc("trunc_icrc", g.spec(0x04, payload=b"12345678"), "icrc", 2, "ICRC")
    trunc("trunc_cnp_reserved", g.spec(CNP_OPCODE, becn=1), "cnp_reserved", 8, "CNP reserved bytes")
    trunc(
        "trunc_payload",
        g.spec(0x07, payload=bytes(range(64))),
        "payload",
        20,
        "payload: shorter than the IP total length",
    )
    trunc("v1_trunc_grh", g.spec(0x04, version=1), "grh", 20, "RoCEv1 GRH")
    trunc("v1_trunc_bth", g.spec(0x04, version=1), "bth", 11, "RoCEv1 BTH")
    trunc(
        "v1_trunc_payload",
        g.spec(0x04, version=1, payload=bytes(40)),
        "payload",
        10,
        "RoCEv1 payload: shorter than the GRH payload length",
    )

    # Bad ICRC: one bit flipped in the ICRC, and one in the payload.
    s = g.spec(0x0A, payload=g.payload(32))
    f = bytearray(_frame(s))
    end = roce_layout(s)[-1].end
    f[end - 1] ^= 0x80
    g.add(
        "bad_icrc_v2_ip4",
        "WRITE_ONLY with a flipped bit in the ICRC",
        bytes(f),
        _expect(roce_layout(s), err_icrc=1),
        _roce_tags(s, "malformed"),
    )
    s = g.spec(0x04, v6=True, payload=g.payload(16))
    f = bytearray(_frame(s))
    f[_seg(roce_layout(s), "payload")[0]] ^= 0x01
    g.add(
        "bad_icrc_v2_ip6_payload",
        "SEND_ONLY over IPv6 with a payload bit flipped",
        bytes(f),
        _expect(roce_layout(s), err_icrc=1),
        _roce_tags(s, "malformed"),
    )
    s = g.spec(0x04, version=1, payload=g.payload(16))
    f = bytearray(_frame(s))
    f[_seg(roce_layout(s), "payload")[0]] ^= 0x01
    g.add(
        "v1_bad_icrc",
        "RoCEv1 SEND_ONLY with a payload bit flipped",
        bytes(f),
        _expect(roce_layout(s), err_icrc=1),
        _roce_tags(s, "malformed"),
    )

    # Variant fields are outside the ICRC: changing TTL/ECN after the ICRC keeps it valid.
    s = g.spec(0x08, ecn=2, ttl=64)
    f = bytearray(_frame(s))
    f[15] |= 0x03  # CE, as a switch marks it
    f[22] -= 1  # TTL, as a router decrements it
    csum = int.from_bytes(f[24:26], "big")  # RFC 1624 incremental updates
    for old, new in (
        (0x4000 | (s.dscp << 2 | s.ecn), 0x4000 | f[15]),
        ((64 << 8) | 17, (63 << 8) | 17),
    ):
        x = (~csum & 0xFFFF) + (~old & 0xFFFF) + new
        x = (x & 0xFFFF) + (x >> 16)
        csum = ~((x & 0xFFFF) + (x >> 16)) & 0xFFFF
    f[24:26] = csum.to_bytes(2, "big")
    segs = roce_layout(s)
    segs[1].fields.update(ecn=3, ecn_ce=1, ttl=63)
    g.add(
        "v2_ce_marked_in_flight",
        "WRITE_LAST marked CE and TTL-decremented after the ICRC "
        "was computed: the ICRC still matches (ECN/TTL are masked)",
        bytes(f),
        _expect(segs),
        _roce_tags(s),
    )

    # Bad IPv4 checksum: flagged, and the rest is still decoded (ICRC masks the checksum).
    s = g.spec(0x04, payload=g.payload(8))
    f = bytearray(_frame(s))
    f[24] ^= 0xFF
    g.add(
        "bad_ip_csum",
        "SEND_ONLY with a corrupted IPv4 header checksum",
        bytes(f),
        _expect(roce_layout(s), err_ip_csum=1),
        _roce_tags(s, "malformed"),
    )

    # BTH transport version 1: err_unsupported, nothing after the BTH parsed.
    s = g.spec(0x0A, tver=1, payload=g.payload(8))
    g.add(
        "bth_tver_1",
        "WRITE_ONLY with BTH TVer 1: unsupported, RETH not parsed",
        _frame(s),
        _expect(roce_layout(s), err_unsupported=1),
        _roce_tags(s, "malformed"),
    )

    # IPv4 with options (IHL 6): fixed fields filled, nothing after IP.
    pkt = (
        Ether(dst="02:00:00:05:00:02", src="02:00:00:05:00:01")
        / IP(src="10.3.0.1", dst="10.3.0.2", tos=0x6B, ttl=5, options=[IPOption_NOP()] * 4)
        / UDP(sport=0xC000, dport=ROCEV2_UDP_PORT)
        / Raw(bytes(32))
    )
    segs = _plain_segs(pkt)[:2]
    g.add(
        "ipv4_options",
        "IPv4 with 4 bytes of options carrying UDP/4791: unsupported",
        packet_bytes(pkt),
        _expect(segs, err_unsupported=1),
        ("rocev2", "ipv4", "malformed"),
    )

    # Version nibble that does not match the EtherType.
    s = g.spec(0x04, payload=b"")
    f = bytearray(_frame(s))
    f[14] = 0x65
    g.add(
        "ipv4_version_6",
        "EtherType 0x0800 with IP version 6: unsupported",
        bytes(f),
        _expect(roce_layout(s)[:1] + [_Seg("ip", 34, {"ip_version": 6})], err_unsupported=1),
        ("ipv4", "malformed"),
    )
    s = g.spec(0x04, v6=True, payload=b"")
    f = bytearray(_frame(s))
    f[14] = 0x46
    g.add(
        "ipv6_version_4",
        "EtherType 0x86DD with IP version 4: unsupported",
        bytes(f),
        _expect(roce_layout(s)[:1] + [_Seg("ip", 54, {"ip_version": 4})], err_unsupported=1),
        ("ipv6", "malformed"),
    )

    # IP total length too small: C2 (< 20) and C1 (ends inside the BTH, frame has more).
    s = g.spec(0x04, payload=bytes(8))
    f = bytearray(_frame(s))
    f[16:18] = (19).to_bytes(2, "big")
    f[24:26] = b"\x00\x00"
    ip = IP(bytes(f[14:34]))
    del ip.chksum
    f[14:34] = bytes(ip)[:20]
    segs = roce_layout(s)
    g.add(
        "ipv4_total_len_19",
        "IPv4 total length 19 (< its header): truncated, IP fields filled",
        bytes(f),
        _expect(segs[:2], err_truncated=1),
        ("ipv4", "malformed"),
    )
    f = bytearray(_frame(s))
    f[16:18] = (20 + 8 + 6).to_bytes(2, "big")
    ip = IP(bytes(f[14:34]))
    del ip.chksum
    f[14:34] = bytes(ip)[:20]
    g.add(
        "ipv4_total_len_in_bth",
        "IPv4 total length ends 6 bytes into the BTH although the "
        "frame goes on: truncated in the BTH",
        bytes(f),
        _expect(segs[:3], err_truncated=1),
        ("rocev2", "ipv4", "malformed"),
    )


def to_json(vectors: list[Vector]) -> str:
    data = {
        "format": FORMAT,
        "generator": "python -m controller.packets.vectors --write",
        "seed": SEED,
        "rules": "docs/parsed-record.md",
        "fields": [[n, b] for n, b in FIELDS],
        "vectors": [
            {
                "name": v.name,
                "description": v.description,
                "tags": list(v.tags),
                "verdict": v.verdict,
                "hex": v.hex,
                "expected": v.expected,
            }
            for v in vectors
        ],
    }
    return json.dumps(data, indent=1) + "\n"


def load(path: str | Path | None = None) -> list[Vector]:
    """Read the shared vectors (default: tests/vectors/vectors.json in this checkout)."""
    data = json.loads(Path(path or DEFAULT_PATH).read_text())
    if data.get("format") != FORMAT:
        raise ValueError(
            f"{path or DEFAULT_PATH}: vectors format {data.get('format')}, expected {FORMAT}"
        )
    names = [n for n, _ in data["fields"]]
    if names != list(FIELD_NAMES):
        raise ValueError(
            f"{path or DEFAULT_PATH}: field list differs from controller."
            "packets.fields.FIELDS; regenerate with --write"
        )
    return [
        Vector(
            v["name"],
            v["description"],
            bytes.fromhex(v["hex"]),
            v["expected"],
            v["verdict"],
            tuple(v["tags"]),
        )
        for v in data["vectors"]
    ]


def iter_valid(vectors: list[Vector]) -> Iterator[Vector]:
    """Vectors whose frames decode without errors."""
    return (v for v in vectors if v.verdict in ("ok", "pfc", "pause", "not_roce"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m controller.packets.vectors",
        description="Generate or check the shared test vectors.",
    )
    ap.add_argument("--write", action="store_true", help="(re)write the vectors file")
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    ap.add_argument("--path", type=Path, default=DEFAULT_PATH)
    args = ap.parse_args(argv)
    text = to_json(generate())
    if args.write:
        args.path.parent.mkdir(parents=True, exist_ok=True)
        args.path.write_text(text)
        n = len(json.loads(text)["vectors"])
        print(f"wrote {n} vectors to {args.path}")
        return 0
    if args.check:
        if not args.path.exists() or args.path.read_text() != text:
            print(
                f"{args.path} is stale: run python -m controller.packets.vectors --write",
                file=sys.stderr,
            )
            return 1
        print(f"{args.path} is up to date")
        return 0
    ap.print_usage(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
