// P4 names equal to the generated code's own locals and helpers (buf, off, st, e, _RT, _out, sx, pack, ONCE, Exit, ParserError, Stack, _struct, _t, _c, _src): all mangled
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> buf; bit<8> off; bit<8> st; bit<8> e; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        bit<8> off = 7;
        bit<8> buf = 1;
        pkt.extract(hdr.h);
        hdr.h.off = hdr.h.off + off + buf;
        transition select(hdr.h.st) { 1: e; default: accept; }
    }
    state e { hdr.h.e = 0xEE; transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        bit<8> _RT = 1;
        bit<8> _out = 2;
        bit<8> sx = 3;
        bit<8> pack = 4;
        bit<8> ONCE = 5;
        bit<8> Exit = 6;
        bit<8> ParserError = 7;
        bit<8> _struct = 8;
        bit<8> _t = 9; bit<8> _c = 10; bit<8> _src = 11;
        hdr.h.buf = _RT + _out + sx + pack + ONCE + Exit + ParserError + _struct + _t + _c + _src;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
