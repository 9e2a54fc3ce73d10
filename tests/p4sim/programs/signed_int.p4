// int<8>: signed comparison, arithmetic shift right, negation, wrap-around
#include <core.p4>
#include <v1model.p4>

header h_t { int<8> a; int<8> b; bit<8> lt; int<8> shr; int<8> neg; int<8> sum; }
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
        hdr.h.lt = (hdr.h.a < hdr.h.b) ? 8w1 : 8w0;
        hdr.h.shr = hdr.h.a >> 2;
        hdr.h.neg = -hdr.h.a;
        hdr.h.sum = hdr.h.a + hdr.h.b;
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
