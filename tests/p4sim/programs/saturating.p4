// saturating |+| and |-| on bit<8> and int<8>
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a; bit<8> b; bit<8> sum; bit<8> diff;
    int<8> sa; int<8> sb; int<8> ssum; int<8> sdiff;
}
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
        hdr.h.sum = hdr.h.a |+| hdr.h.b;
        hdr.h.diff = hdr.h.a |-| hdr.h.b;
        hdr.h.ssum = hdr.h.sa |+| hdr.h.sb;
        hdr.h.sdiff = hdr.h.sa |-| hdr.h.sb;
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
