"""Small v1model programs written inline by the p4sim checker/lowering/runtime tests."""

from __future__ import annotations

from pathlib import Path

HEADERS = """
#include <core.p4>
#include <v1model.p4>
header eth_t {{ bit<48> dst; bit<48> src; bit<16> type; }}
header data_t {{ bit<8> a; bit<8> b; bit<16> c; bit<32> d; }}
"""

TEMPLATE = (
    HEADERS
    + """
struct headers_t {{ eth_t eth; data_t data; }}
struct meta_t {{ bit<32> x; bit<8> y; }}
{decls}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {{ 0x1234: parse_data; default: accept; }}
    }}
    state parse_data {{ pkt.extract(hdr.data); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control IG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{ig_locals}
    apply {{
        sm.egress_spec = 1;
{ig}
    }}
}}
control EG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{eg_locals}
    apply {{
{eg}
    }}
}}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control DP(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr.eth); pkt.emit(hdr.data); }} }}
V1Switch(P(), VC(), IG(), EG(), CC(), DP()) main;
"""
)


def program(
    tmp_path: Path,
    ig: str = "",
    ig_locals: str = "",
    eg: str = "",
    eg_locals: str = "",
    decls: str = "",
    name: str = "prog.p4",
) -> str:
    path = tmp_path / name
    path.write_text(
        TEMPLATE.format(ig=ig, ig_locals=ig_locals, eg=eg, eg_locals=eg_locals, decls=decls)
    )
    return str(path)


def frame(a: int = 0, b: int = 0, c: int = 0, d: int = 0, payload: bytes = b"") -> bytes:
    """eth (type 0x1234) + data header."""
    return (
        bytes.fromhex("0000000000aa0000000000bb1234")
        + bytes([a, b])
        + c.to_bytes(2, "big")
        + d.to_bytes(4, "big")
        + payload
    )


def data_of(out: bytes) -> tuple[int, int, int, int]:
    h = out[14:22]
    return h[0], h[1], int.from_bytes(h[2:4], "big"), int.from_bytes(h[4:8], "big")
