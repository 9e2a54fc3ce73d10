"""Fast decoder of Ethernet frames into the parsed-field record (docs/parsed-record.md).

Plain byte indexing and struct, no scapy dissection: scenarios decode many frames, and the
HDL parser mirrors these rules step by step. `decode()` never raises on any bytes; errors
become err_* flags. `decode_strict()` raises `MalformedFrame` saying what is wrong and where.
"""

from __future__ import annotations

import struct

from .constants import (
    AETH_OPCODES,
    ATOMICACKETH_OPCODES,
    ATOMICETH_OPCODES,
    CNP_OPCODE,
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
    RETH_OPCODES,
    ROCEV2_UDP_PORT,
)
from .fields import Decoded
from .icrc import icrc_v1, icrc_v2

__all__ = ["MalformedFrame", "decode", "decode_strict", "rocev2_fast", "verify_icrc"]

_IPV4_WORDS = struct.Struct("!10H").unpack_from
_PFC = struct.Struct("!H8H").unpack_from
_QUANTA = tuple(f"pfc_quanta{i}" for i in range(8))
# untagged IPv4 (20 B) + UDP + BTH from byte 14: version/IHL, TOS, total length, id, frag,
# TTL, protocol, checksum, src, dst | sport, dport, length, checksum | opcode, flags byte,
# P_Key, FECN/BECN byte + DestQP, AckReq byte + PSN
_V2_HEAD = struct.Struct("!BBHHHBBHIIHHHHBBHII").unpack_from
_RETH = struct.Struct("!QII").unpack_from
_AETH = struct.Struct("!I").unpack_from
# what rocev2_fast leaves to decode(): headers it does not read (ImmDt, AtomicETH,
# AtomicAckETH) and CNPs (no PDU: the host only counts them)
_FAST_NOT = IMMDT_OPCODES | ATOMICETH_OPCODES | ATOMICACKETH_OPCODES | {CNP_OPCODE}


class MalformedFrame(ValueError):
    """A frame that decode_strict() rejects; `.decoded` holds what decode() returns."""

    def __init__(self, message: str, decoded: Decoded) -> None:
        super().__init__(message)
        self.decoded = decoded


def _be(b: bytes, start: int, end: int) -> int:
    return int.from_bytes(b[start:end], "big")


def _parse(b: bytes) -> tuple[dict[str, int], str | None]:
    """Fill the record's non-zero fields; return them and the first error's description."""
    f: dict[str, int] = {}
    n = len(b)
    if n < 14:
        f["err_truncated"] = 1
        return f, f"truncated in Ethernet header at byte {n}"
    f["eth_dst"] = _be(b, 0, 6)
    f["eth_src"] = _be(b, 6, 12)
    et = (b[12] << 8) | b[13]
    off = 14
    if et == ETH_P_8021Q:
        if n < 18:
            f["err_truncated"] = 1
            return f, f"truncated in VLAN tag at byte {n}"
        tci = (b[14] << 8) | b[15]
        f["vlan_valid"] = 1
        f["vlan_pcp"] = tci >> 13
        f["vlan_vid"] = tci & 0x0FFF
        et = (b[16] << 8) | b[17]
        off = 18
    f["ethertype"] = et
    if et == ETH_P_IPV4:
        return _ipv4(b, off, f)
    if et == ETH_P_IPV6:
        return _ipv6(b, off, f)
    if et == ETH_P_ROCEV1:
        return _grh(b, off, f)
    if et == ETH_P_MAC_CONTROL:
        return _mac_control(b, off, f)
    return f, None


def _truncated(
    f: dict[str, int], what: str, at: int, ip_end: int, n: int
) -> tuple[dict[str, int], str]:
    f["err_truncated"] = 1
    if ip_end < n:
        return f, f"truncated in {what} at byte {at} (the IP length field ends the packet there)"
    return f, f"truncated in {what} at byte {at}"


def _short(f: dict[str, int], end: int, n: int) -> tuple[dict[str, int], str | None]:
    """Finish a packet whose headers are done: the frame must reach the IP length's end."""
    if end > n:
        f["err_truncated"] = 1
        return f, f"truncated: frame ends at byte {n}, the IP length field says {end}"
    return f, None


def _ipv4(b: bytes, off: int, f: dict[str, int]) -> tuple[dict[str, int], str | None]:
    n = len(b)
    if n - off < 20:
        f["err_truncated"] = 1
        return f, f"truncated in IPv4 header at byte {n}"
    version = b[off] >> 4
    f["ip_version"] = version
    if version != 4:
        f["err_unsupported"] = 1
        return f, f"unsupported: IP version {version} under EtherType 0x0800 at byte {off}"
    tos = b[off + 1]
    f["dscp"] = tos >> 2
    f["ecn"] = ecn = tos & 3
    if ecn == 3:
        f["ecn_ce"] = 1
    f["ttl"] = b[off + 8]
    f["ip_src"] = _be(b, off + 12, off + 16)
    f["ip_dst"] = _be(b, off + 16, off + 20)
    ihl = b[off] & 0x0F
    if ihl != 5:
        f["err_unsupported"] = 1
        return f, f"unsupported: IPv4 header length {ihl * 4} (options) at byte {off}"
    s = sum(_IPV4_WORDS(b, off))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    err = None
    if s != 0xFFFF:
        f["err_ip_csum"] = 1
        err = f"bad IPv4 header checksum at byte {off + 10}"
    total = (b[off + 2] << 8) | b[off + 3]
    if total < 20:
        f["err_truncated"] = 1
        return f, f"truncated: IPv4 total length {total} is shorter than its header"
    end = off + total
    if b[off + 9] != IPPROTO_UDP:
        _, later = _short(f, end, n)
    else:
        _, later = _udp(b, off, off + 20, end, f)
    # Report errors in the order of the verdict: truncated, unsupported, checksum, ICRC.
    if f.get("err_truncated") or f.get("err_unsupported"):
        return f, later
    return f, err or later


def _ipv6(b: bytes, off: int, f: dict[str, int]) -> tuple[dict[str, int], str | None]:
    n = len(b)
    if n - off < 40:
        f["err_truncated"] = 1
        return f, f"truncated in IPv6 header at byte {n}"
    version = b[off] >> 4
    f["ip_version"] = version
    if version != 6:
        f["err_unsupported"] = 1
        return f, f"unsupported: IP version {version} under EtherType 0x86DD at byte {off}"
    _traffic_class(b, off, f)
    end = off + 40 + ((b[off + 4] << 8) | b[off + 5])
    if b[off + 6] != IPPROTO_UDP:
        return _short(f, end, n)
    return _udp(b, off, off + 40, end, f)


def _traffic_class(b: bytes, off: int, f: dict[str, int]) -> None:
    """IPv6 header and GRH share the layout of the first 40 bytes."""
    tc = ((b[off] & 0x0F) << 4) | (b[off + 1] >> 4)
    f["dscp"] = tc >> 2
    f["ecn"] = ecn = tc & 3
    if ecn == 3:
        f["ecn_ce"] = 1
    f["ttl"] = b[off + 7]
    f["ip_src"] = _be(b, off + 8, off + 24)
    f["ip_dst"] = _be(b, off + 24, off + 40)


def _udp(
    b: bytes, ip_off: int, off: int, end: int, f: dict[str, int]
) -> tuple[dict[str, int], str | None]:
    n = len(b)
    lim = min(n, end)
    if lim - off < 8:
        return _truncated(f, "UDP header", lim, end, n)
    f["udp_sport"] = (b[off] << 8) | b[off + 1]
    f["udp_dport"] = dport = (b[off + 2] << 8) | b[off + 3]
    if dport != ROCEV2_UDP_PORT:
        return _short(f, end, n)
    f["roce_version"] = 2
    return _bth(b, ip_off, off + 8, end, f)


def _grh(b: bytes, off: int, f: dict[str, int]) -> tuple[dict[str, int], str | None]:
    n = len(b)
    if n - off < 40:
        f["err_truncated"] = 1
        return f, f"truncated in GRH at byte {n}"
    f["ip_version"] = b[off] >> 4
    _traffic_class(b, off, f)
    end = off + 40 + ((b[off + 4] << 8) | b[off + 5])
    if b[off + 6] != GRH_NEXT_HEADER_BTH:
        return _short(f, end, n)
    f["roce_version"] = 1
    return _bth(b, off, off + 40, end, f)


def _bth(
    b: bytes, ip_off: int, off: int, end: int, f: dict[str, int]
) -> tuple[dict[str, int], str | None]:
    n = len(b)
    lim = min(n, end)
    if lim - off < 12:
        return _truncated(f, "BTH", lim, end, n)
    f["bth_opcode"] = op = b[off]
    b1 = b[off + 1]
    f["bth_se"] = b1 >> 7
    f["bth_m"] = (b1 >> 6) & 1
    f["bth_pad"] = (b1 >> 4) & 3
    f["bth_tver"] = tver = b1 & 0x0F
    f["bth_pkey"] = (b[off + 2] << 8) | b[off + 3]
    f["bth_fecn"] = b[off + 4] >> 7
    f["bth_becn"] = (b[off + 4] >> 6) & 1
    f["bth_dqpn"] = _be(b, off + 5, off + 8)
    f["bth_ackreq"] = b[off + 8] >> 7
    f["bth_psn"] = _be(b, off + 9, off + 12)
    f["is_roce"] = 1
    if op == CNP_OPCODE:
        f["is_cnp"] = 1
    if tver != 0:
        f["err_unsupported"] = 1
        _, short = _short(f, end, n)
        return f, short or f"unsupported: BTH transport version {tver} at byte {off + 1}"
    p = off + 12
    if op in RETH_OPCODES:
        if lim - p < 16:
            return _truncated(f, "RETH", lim, end, n)
        f["reth_valid"] = 1
        f["reth_va"] = _be(b, p, p + 8)
        f["reth_rkey"] = _be(b, p + 8, p + 12)
        f["reth_dlen"] = _be(b, p + 12, p + 16)
        p += 16
    if op in IMMDT_OPCODES:
        if lim - p < 4:
            return _truncated(f, "ImmDt", lim, end, n)
        f["immdt_valid"] = 1
        f["immdt"] = _be(b, p, p + 4)
        p += 4
    elif op in AETH_OPCODES:
        if lim - p < 4:
            return _truncated(f, "AETH", lim, end, n)
        f["aeth_valid"] = 1
        f["aeth_syndrome"] = b[p]
        f["aeth_msn"] = _be(b, p + 1, p + 4)
        p += 4
        if op in ATOMICACKETH_OPCODES:
            if lim - p < 8:
                return _truncated(f, "AtomicAckETH", lim, end, n)
            f["atomicack_valid"] = 1
            f["atomicack_orig"] = _be(b, p, p + 8)
            p += 8
    elif op in ATOMICETH_OPCODES:
        if lim - p < 28:
            return _truncated(f, "AtomicETH", lim, end, n)
        f["atomic_valid"] = 1
        f["atomic_va"] = _be(b, p, p + 8)
        f["atomic_rkey"] = _be(b, p + 8, p + 12)
        f["atomic_swap"] = _be(b, p + 12, p + 20)
        f["atomic_cmp"] = _be(b, p + 20, p + 28)
        p += 28
    elif op == CNP_OPCODE:
        if lim - p < 16:
            return _truncated(f, "CNP reserved bytes", lim, end, n)
        p += 16
    if lim - p < 4:
        return _truncated(f, "ICRC", lim, end, n)
    if end > n:
        if n > end - 4:
            return _truncated(f, "ICRC", n, end, n)
        return _short(f, end, n)
    want = icrc_v2(b[ip_off : end - 4]) if f["roce_version"] == 2 else icrc_v1(b[ip_off : end - 4])
    got = int.from_bytes(b[end - 4 : end], "little")
    if want != got:
        f["err_icrc"] = 1
        return f, f"bad ICRC at byte {end - 4}: got {got:#010x}, computed {want:#010x}"
    return f, None


def _mac_control(b: bytes, off: int, f: dict[str, int]) -> tuple[dict[str, int], str | None]:
    n = len(b)
    if n - off < 2:
        f["err_truncated"] = 1
        return f, f"truncated in MAC control opcode at byte {n}"
    opcode = (b[off] << 8) | b[off + 1]
    if opcode == MAC_CONTROL_PFC:
        if n - off < 20:
            f["err_truncated"] = 1
            return f, f"truncated in PFC body at byte {n}"
        cev, *quanta = _PFC(b, off + 2)
        f["is_pfc"] = 1
        f["pfc_cev"] = cev & 0xFF
        for name, q in zip(_QUANTA, quanta, strict=True):
            f[name] = q
    elif opcode == MAC_CONTROL_PAUSE:
        if n - off < 4:
            f["err_truncated"] = 1
            return f, f"truncated in PAUSE body at byte {n}"
        f["is_pause"] = 1
        f["pause_time"] = (b[off + 2] << 8) | b[off + 3]
    return f, None


def _record(f: dict[str, int]) -> Decoded:
    rec = Decoded.__new__(Decoded)
    rec.__dict__.update(f)
    return rec


def rocev2_fast(b: bytes) -> tuple | None:
    """The common frame a RoCE NIC takes, read in one pass: untagged IPv4 without options,
    RoCEv2, BTH version 0, at most a RETH or an AETH, complete, IP checksum and ICRC good.
    Returns (ip_src, opcode, dqpn, psn, ackreq, payload_len, reth, aeth, ce, becn), the
    fields `decode()` + `controller.hosts.host.pdu_of` give for it; None for any other frame
    (the caller then decodes it: the error flags and rarer headers stay decode's alone)."""
    n = len(b)
    if n < 58 or b[12] != 0x08 or b[13] != 0x00 or b[14] != 0x45:
        return None
    (
        _vi,
        tos,
        total,
        _id,
        _frag,
        _ttl,
        proto,
        _ck,
        src,
        _dst,
        _sp,
        dport,
        _ul,
        _uc,
        op,
        b1,
        _pkey,
        fq,
        ap,
    ) = _V2_HEAD(b, 14)
    if proto != IPPROTO_UDP or dport != ROCEV2_UDP_PORT or b1 & 0x0F or op in _FAST_NOT:
        return None
    end = 14 + total
    if end > n:
        return None
    s = sum(_IPV4_WORDS(b, 14))  # _ipv4's checksum, folded twice
    s = (s & 0xFFFF) + (s >> 16)
    if (s & 0xFFFF) + (s >> 16) != 0xFFFF:
        return None
    p = 54  # after the BTH; each header is read only when it and the ICRC fit before end
    reth = aeth = None
    if op in RETH_OPCODES:
        if end < 74:
            return None
        reth = _RETH(b, p)
        p += 16
    elif op in AETH_OPCODES:
        if end < 62:
            return None
        (a,) = _AETH(b, p)
        aeth = (a >> 24, a & 0xFFFFFF)
        p += 4
    if end - p < 4 or icrc_v2(b[14 : end - 4]) != int.from_bytes(b[end - 4 : end], "little"):
        return None
    # pdu_of's payload_len: IP total - IP/UDP/BTH/extension headers - pad - ICRC
    plen = end - p - 4 - ((b1 >> 4) & 3)
    return (
        src,
        op,
        fq & 0xFFFFFF,
        ap & 0xFFFFFF,
        bool(ap >> 31),
        plen if plen > 0 else 0,
        reth,
        aeth,
        tos & 3 == 3,
        bool(fq >> 30 & 1),
    )


def decode(frame: bytes | bytearray | memoryview) -> Decoded:
    """Decode one frame (no FCS; Ethernet padding allowed). Never raises on any bytes."""
    f, _ = _parse(bytes(frame))
    return _record(f)


def decode_strict(frame: bytes | bytearray | memoryview) -> Decoded:
    """Like decode(), but raise MalformedFrame on any err_* condition, saying where."""
    f, err = _parse(bytes(frame))
    rec = _record(f)
    if err is not None:
        raise MalformedFrame(err, rec)
    return rec


def verify_icrc(frame: bytes | bytearray | memoryview) -> bool:
    """True when a complete RoCEv1/v2 frame's ICRC matches; ValueError when the frame is
    not one whose ICRC can be checked (not RoCE, truncated, unsupported)."""
    f, err = _parse(bytes(frame))
    if not f.get("is_roce") or f.get("err_truncated") or f.get("err_unsupported"):
        raise ValueError(f"no ICRC to verify: {err or 'not a RoCE frame'}")
    return not f.get("err_icrc")
