"""The parsed-field record shared by every parser (Python decoder, HDL parser, P4, vectors).

FIELDS is the single definition: (name, bits) in port order. The RTL result port list
mirrors it; `Decoded.to_int()` packs a record into one integer with the first field in
the most significant bits (the layout of a concatenation `{eth_dst, eth_src, ...}`).
Rules for filling the record: docs/parsed-record.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

FIELDS: tuple[tuple[str, int], ...] = (
    ("eth_dst", 48),
    ("eth_src", 48),
    ("vlan_valid", 1),
    ("vlan_pcp", 3),
    ("vlan_vid", 12),
    ("ethertype", 16),
    ("roce_version", 2),
    ("ip_version", 4),
    ("ip_src", 128),
    ("ip_dst", 128),
    ("dscp", 6),
    ("ecn", 2),
    ("ttl", 8),
    ("udp_sport", 16),
    ("udp_dport", 16),
    ("bth_opcode", 8),
    ("bth_se", 1),
    ("bth_m", 1),
    ("bth_pad", 2),
    ("bth_tver", 4),
    ("bth_pkey", 16),
    ("bth_fecn", 1),
    ("bth_becn", 1),
    ("bth_dqpn", 24),
    ("bth_ackreq", 1),
    ("bth_psn", 24),
    ("reth_valid", 1),
    ("reth_va", 64),
    ("reth_rkey", 32),
    ("reth_dlen", 32),
    ("aeth_valid", 1),
    ("aeth_syndrome", 8),
    ("aeth_msn", 24),
    ("immdt_valid", 1),
    ("immdt", 32),
    ("atomic_valid", 1),
    ("atomic_va", 64),
    ("atomic_rkey", 32),
    ("atomic_swap", 64),
    ("atomic_cmp", 64),
    ("atomicack_valid", 1),
    ("atomicack_orig", 64),
    ("is_roce", 1),
    ("is_cnp", 1),
    ("ecn_ce", 1),
    ("is_pfc", 1),
    ("pfc_cev", 8),
    *((f"pfc_quanta{i}", 16) for i in range(8)),
    ("is_pause", 1),
    ("pause_time", 16),
    ("err_truncated", 1),
    ("err_ip_csum", 1),
    ("err_icrc", 1),
    ("err_unsupported", 1),
)

FIELD_NAMES: tuple[str, ...] = tuple(name for name, _ in FIELDS)
FIELD_BITS: dict[str, int] = dict(FIELDS)
RECORD_BITS: int = sum(bits for _, bits in FIELDS)

# Verdicts, most severe first: one word summing up a record (vectors, reports).
VERDICTS = ("truncated", "unsupported", "bad_ip_csum", "bad_icrc", "ok", "pfc", "pause", "not_roce")


class Decoded:
    """One parsed-field record. Every field is an unsigned int, 0 when absent.

    Fields left at 0 are not stored per instance (class defaults), which keeps
    decoding cheap; attribute access, `as_dict()` and equality see all fields.
    """

    def __init__(self, **fields: int) -> None:
        for name, value in fields.items():
            if name not in FIELD_BITS:
                raise TypeError(f"Decoded has no field {name!r}")
            setattr(self, name, value)

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in FIELD_NAMES}

    def nonzero(self) -> dict[str, int]:
        """Only the fields that are set (compact printing)."""
        return {name: v for name in FIELD_NAMES if (v := getattr(self, name))}

    @property
    def verdict(self) -> str:
        return verdict(self)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.as_dict().items())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Decoded):
            return self.as_dict() == other.as_dict()
        if isinstance(other, dict):
            return self.as_dict() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable record

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:#x}" if v > 9 else f"{k}={v}" for k, v in self.nonzero().items())
        return f"Decoded({inner})"

    def to_int(self) -> int:
        """Pack into RECORD_BITS bits, first field most significant (RTL port order)."""
        value = 0
        for name, bits in FIELDS:
            v = getattr(self, name)
            if v >> bits:
                raise ValueError(f"{name}={v:#x} does not fit in {bits} bits")
            value = (value << bits) | v
        return value

    @classmethod
    def from_int(cls, value: int) -> Decoded:
        out: dict[str, int] = {}
        for name, bits in reversed(FIELDS):
            out[name] = value & ((1 << bits) - 1)
            value >>= bits
        return cls(**out)

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> Decoded:
        return cls(**{k: int(v) for k, v in fields.items()})


for _name in FIELD_NAMES:
    setattr(Decoded, _name, 0)
del _name


def verdict(rec: Decoded) -> str:
    """The one-word summary of a record; errors win in the order of VERDICTS."""
    if rec.err_truncated:
        return "truncated"
    if rec.err_unsupported:
        return "unsupported"
    if rec.err_ip_csum:
        return "bad_ip_csum"
    if rec.err_icrc:
        return "bad_icrc"
    if rec.is_roce:
        return "ok"
    if rec.is_pfc:
        return "pfc"
    if rec.is_pause:
        return "pause"
    return "not_roce"
