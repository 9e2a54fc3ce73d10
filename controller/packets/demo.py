"""A RoCEv2 RC exchange seen from both ends, written as a pcap and decoded as a table.

    python -m controller.packets.demo [--out DIR]

Requester A writes 3 KiB to responder B (WRITE FIRST/MIDDLE/LAST, the last one marked CE
by a switch), B acknowledges; A reads 2 KiB back (READ REQUEST, READ RESPONSE FIRST/LAST);
B, having seen CE, sends A a CNP; a switch port sends PFC pausing priority 3.
Open the pcap in Wireshark/tshark to compare with the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from .build import ack_frame, cnp_frame, pfc_frame, roce_frame
from .constants import (
    RC_OPCODES,
    RC_READ_REQUEST,
    RC_READ_RESPONSE_FIRST,
    RC_READ_RESPONSE_LAST,
    RC_WRITE_FIRST,
    RC_WRITE_LAST,
    RC_WRITE_MIDDLE,
)
from .decode import decode

A = {"ip": "192.168.10.1", "mac": "02:00:00:00:0a:01", "qpn": 0x000011}
B = {"ip": "192.168.10.2", "mac": "02:00:00:00:0a:02", "qpn": 0x000022}
MTU = 1024


def exchange() -> list[tuple[str, bytes]]:
    """(direction, frame) for the whole exchange, in wire order."""
    a2b = {"eth_src": A["mac"], "eth_dst": B["mac"], "sport": 0xC011}
    b2a = {"eth_src": B["mac"], "eth_dst": A["mac"], "sport": 0xC022}
    data = bytes(i & 0xFF for i in range(3 * MTU))
    va, rkey = 0x7F00_0000_1000, 0x1234
    out: list[tuple[str, bytes]] = []
    out.append(
        (
            "A->B",
            roce_frame(
                A["ip"],
                B["ip"],
                RC_WRITE_FIRST,
                B["qpn"],
                100,
                data[:MTU],
                va=va,
                rkey=rkey,
                dlen=len(data),
                **a2b,
            ),
        )
    )
    out.append(
        (
            "A->B",
            roce_frame(
                A["ip"], B["ip"], RC_WRITE_MIDDLE, B["qpn"], 101, data[MTU : 2 * MTU], **a2b
            ),
        )
    )
    out.append(
        (
            "A->B",
            roce_frame(
                A["ip"],
                B["ip"],
                RC_WRITE_LAST,
                B["qpn"],
                102,
                data[2 * MTU :],
                ackreq=1,
                ecn=3,
                **a2b,
            ),
        )
    )  # CE-marked
    out.append(("B->A", ack_frame(B["ip"], A["ip"], A["qpn"], 102, msn=1, **b2a)))
    out.append(
        (
            "A->B",
            roce_frame(
                A["ip"],
                B["ip"],
                RC_READ_REQUEST,
                B["qpn"],
                103,
                va=va,
                rkey=rkey,
                dlen=2 * MTU,
                ackreq=1,
                **a2b,
            ),
        )
    )
    out.append(
        (
            "B->A",
            roce_frame(
                B["ip"],
                A["ip"],
                RC_READ_RESPONSE_FIRST,
                A["qpn"],
                103,
                data[:MTU],
                syndrome=0x1F,
                msn=2,
                **b2a,
            ),
        )
    )
    out.append(
        (
            "B->A",
            roce_frame(
                B["ip"],
                A["ip"],
                RC_READ_RESPONSE_LAST,
                A["qpn"],
                104,
                data[MTU : 2 * MTU],
                syndrome=0x1F,
                msn=2,
                **b2a,
            ),
        )
    )
    out.append(("B->A", cnp_frame(B["ip"], A["ip"], A["qpn"], **b2a)))
    out.append(("sw->A", pfc_frame("02:00:00:00:ff:01", {3: 0xFFFF})))
    return out


def table(frames: list[tuple[str, bytes]]) -> str:
    head = f"{'#':>2} {'dir':5} {'len':>5} {'what':20} {'dqpn':>8} {'psn':>6} {'ecn':>3}  detail"
    lines = [head, "-" * len(head)]
    for i, (direction, frame) in enumerate(frames, 1):
        d = decode(frame)
        if d.is_roce:
            what = RC_OPCODES.get(d.bth_opcode, f"opcode {d.bth_opcode:#x}")
            detail = []
            if d.reth_valid:
                detail.append(f"RETH va={d.reth_va:#x} rkey={d.reth_rkey:#x} len={d.reth_dlen}")
            if d.aeth_valid:
                detail.append(f"AETH syn={d.aeth_syndrome:#04x} msn={d.aeth_msn}")
            if d.bth_ackreq:
                detail.append("AckReq")
            if d.bth_becn:
                detail.append("BECN")
            detail.append(d.verdict)
            lines.append(
                f"{i:>2} {direction:5} {len(frame):>5} {what:20} {d.bth_dqpn:>#8x} "
                f"{d.bth_psn:>6} {d.ecn:>3}  {' '.join(detail)}"
            )
        elif d.is_pfc:
            q = " ".join(
                f"p{k}={getattr(d, f'pfc_quanta{k}')}" for k in range(8) if d.pfc_cev >> k & 1
            )
            lines.append(
                f"{i:>2} {direction:5} {len(frame):>5} {'PFC':20} {'':>8} {'':>6} "
                f"{'':>3}  cev={d.pfc_cev:#04x} {q}"
            )
        else:
            lines.append(f"{i:>2} {direction:5} {len(frame):>5} {d.verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m controller.packets.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("out/packets-demo"),
        help="directory for roce_demo.pcap (default: out/packets-demo)",
    )
    args = ap.parse_args(argv)
    frames = exchange()
    args.out.mkdir(parents=True, exist_ok=True)
    pcap = args.out / "roce_demo.pcap"
    packets = []
    for k, (_, frame) in enumerate(frames):
        pkt = Ether(frame)
        pkt.time = 1_700_000_000 + k * 1e-6  # fixed, 1 us apart: the pcap is reproducible
        packets.append(pkt)
    wrpcap(str(pcap), packets)
    print(table(frames))
    print(f"\nwrote {len(frames)} frames to {pcap}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
