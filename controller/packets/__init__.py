"""RoCEv1/v2, PFC and PAUSE packets: the shared record, a fast decoder, builders, vectors."""

from .decode import MalformedFrame, decode, decode_strict
from .fields import FIELD_NAMES, FIELDS, RECORD_BITS, Decoded, verdict

__all__ = ["FIELDS", "FIELD_NAMES", "RECORD_BITS", "Decoded", "MalformedFrame", "decode",
           "decode_strict", "verdict"]
