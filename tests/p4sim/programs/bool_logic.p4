// bool expressions: ?:, &&, ||, !, comparisons
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> r1; bit<8> r2; bit<8> r3; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        hdr.h.r1 = (hdr.h.a > hdr.h.b) ? hdr.h.a : hdr.h.b;
        bool both = (hdr.h.a != 0) && (hdr.h.b != 0);
        hdr.h.r2 = both ? 8w1 : 8w0;
        hdr.h.r3 = (!(hdr.h.a == 1) || hdr.h.b == 2) ? 8w0xAA : 8w0xBB;
        sm.egress_spec = 1;
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

        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
