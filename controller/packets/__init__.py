"""RoCEv1/v2, PFC and PAUSE packets: the shared record, a fast decoder, builders, vectors.

`decode`, `decode_strict` and the record load without scapy; the builders
(`controller.packets.build`: roce_frame, cnp_frame, ack_frame, pfc_frame, ...) import scapy
on first use, also when reached through this package (`from controller.packets import
roce_frame`).
"""

from __future__ import annotations

from typing import Any

from .decode import MalformedFrame, decode, decode_strict, verify_icrc
from .fields import FIELD_NAMES, FIELDS, RECORD_BITS, Decoded, verdict

_BUILDERS = (
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
)

__all__ = [
    "FIELDS",
    "FIELD_NAMES",
    "RECORD_BITS",
    "Decoded",
    "MalformedFrame",
    "decode",
    "decode_strict",
    "verdict",
    "verify_icrc",
    *_BUILDERS,
]


def __getattr__(name: str) -> Any:
    if name in _BUILDERS:
        from . import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
