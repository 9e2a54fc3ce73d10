"""scapy layers the RoCE contrib module lacks: 802.3x/802.1Qbb MAC control, RETH, ImmDt,
AtomicETH and AtomicAckETH.

Importing this module also binds AETH after the RC READ RESPONSE FIRST/LAST/ONLY opcodes
(scapy binds it after ACKNOWLEDGE only) and RETH/ImmDt after their opcodes, so that
scapy dissects every RC opcode the way docs/parsed-record.md does.
"""

from __future__ import annotations

from typing import Any

from scapy.contrib.roce import AETH, BTH
from scapy.fields import IntField, ShortEnumField, ShortField, XIntField, XLongField, XShortField
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw, bind_layers

from .constants import (
    AETH_OPCODES,
    ATOMICACKETH_OPCODES,
    ATOMICETH_OPCODES,
    ETH_P_MAC_CONTROL,
    IMMDT_OPCODES,
    MAC_CONTROL_PAUSE,
    MAC_CONTROL_PFC,
    MIN_FRAME_LEN,
    RC_WRITE_ONLY_IMM,
    RETH_OPCODES,
)

__all__ = ["RETH", "ImmDt", "AtomicETH", "AtomicAckETH", "AtomicAETH", "MACControl", "PFC", "Pause"]


class MACControl(Packet):
    """MAC control frame (EtherType 0x8808): a 16-bit opcode, then the opcode's body."""

    name = "MACControl"
    fields_desc = [
        ShortEnumField(
            "opcode", MAC_CONTROL_PFC, {MAC_CONTROL_PAUSE: "PAUSE", MAC_CONTROL_PFC: "PFC"}
        )
    ]


class _MACControlBody(Packet):
    """Fixed-size body; pads the whole frame to 60 bytes (no FCS) and treats the rest
    of a dissected frame as padding."""

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        pkt += pay
        header = 0
        layer: Any = self.underlayer
        while layer is not None:
            header += len(layer.self_build())
            layer = layer.underlayer
        if header + len(pkt) < MIN_FRAME_LEN:
            pkt += b"\x00" * (MIN_FRAME_LEN - header - len(pkt))
        return pkt

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class PFC(_MACControlBody):
    """802.1Qbb priority flow control: class-enable vector and eight pause times (quanta).

    One quantum is 512 bit times; a time of 0 for an enabled class resumes it (XON).
    """

    name = "PFC"
    fields_desc = [XShortField("class_enable", 0), *(ShortField(f"quanta{i}", 0) for i in range(8))]


class Pause(_MACControlBody):
    """802.3x PAUSE: one pause time for the whole link, in quanta."""

    name = "PAUSE"
    fields_desc = [ShortField("pause_time", 0)]


class RETH(Packet):
    """RDMA extended transport header: virtual address, remote key, DMA length."""

    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dlen", 0)]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        bth = self.underlayer
        if isinstance(bth, BTH) and bth.opcode == RC_WRITE_ONLY_IMM:
            return ImmDt
        return Raw


class ImmDt(Packet):
    """Immediate data extended transport header."""

    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


class AtomicETH(Packet):
    """Atomic extended transport header (CMP_SWAP, FETCH_ADD): 28 bytes."""

    name = "AtomicETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        XLongField("swap", 0),
        XLongField("compare", 0),
    ]


class AtomicAckETH(Packet):
    """Atomic acknowledge extended transport header: the original remote value, 8 bytes."""

    name = "AtomicAckETH"
    fields_desc = [XLongField("orig", 0)]


class AtomicAETH(AETH):
    """The AETH of an ATOMIC ACKNOWLEDGE: scapy's AETH, followed by an AtomicAckETH
    (scapy's own AETH cannot tell from its fields which opcode it follows)."""

    name = "AETH"

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return AtomicAckETH


bind_layers(Ether, MACControl, type=ETH_P_MAC_CONTROL)
bind_layers(Dot1Q, MACControl, type=ETH_P_MAC_CONTROL)
bind_layers(MACControl, PFC, opcode=MAC_CONTROL_PFC)
bind_layers(MACControl, Pause, opcode=MAC_CONTROL_PAUSE)
for _op in sorted(RETH_OPCODES):
    bind_layers(BTH, RETH, opcode=_op)
for _op in sorted(IMMDT_OPCODES - RETH_OPCODES):
    bind_layers(BTH, ImmDt, opcode=_op)
for _op in sorted(AETH_OPCODES - ATOMICACKETH_OPCODES):
    bind_layers(BTH, AETH, opcode=_op)
for _op in sorted(ATOMICACKETH_OPCODES):
    bind_layers(BTH, AtomicAETH, opcode=_op)
for _op in sorted(ATOMICETH_OPCODES):
    bind_layers(BTH, AtomicETH, opcode=_op)
