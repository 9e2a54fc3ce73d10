// lookahead<bit<8>>() chooses a state without consuming the bytes
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> tag; bit<8> x; }
header b_t { bit<8> tag; bit<16> y; }
struct headers_t { a_t a; b_t b; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        transition select(pkt.lookahead<bit<8>>()) {
            0x0A: parse_a;
            0x0B: parse_b;
            default: accept;
        }
    }
    state parse_a { pkt.extract(hdr.a); transition accept; }
    state parse_b { pkt.extract(hdr.b); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (hdr.a.isValid()) {
            hdr.a.x = hdr.a.x + 1;
            sm.egress_spec = 1;
        } else if (hdr.b.isValid()) {
            hdr.b.y = hdr.b.y + 1;
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {

        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
