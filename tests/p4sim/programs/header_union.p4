// header union: one member valid at a time; setValid on a member invalidates the others
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> v; }
header b_t { bit<16> v; }
header_union u_t { a_t a; b_t b; }
header sel_t { bit<8> s; }
struct headers_t { sel_t sel; u_t u; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        pkt.extract(hdr.sel);
        transition select(hdr.sel.s) {
            1: parse_a;
            3: parse_a;
            2: parse_b;
            default: accept;
        }
    }
    state parse_a { pkt.extract(hdr.u.a); transition accept; }
    state parse_b { pkt.extract(hdr.u.b); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (hdr.sel.s == 3) {
            hdr.u.b.setValid();
            hdr.u.b.v = 0xBEEF;
        } else if (hdr.u.a.isValid()) {
            hdr.u.a.v = hdr.u.a.v + 1;
        } else if (hdr.u.b.isValid()) {
            hdr.u.b.v = hdr.u.b.v + 1;
        }
        if (hdr.u.isValid()) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
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

        pkt.emit(hdr.sel);
        pkt.emit(hdr.u);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
