// if/else inside an action body
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> r; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    action classify(bit<8> limit) {
        if (hdr.h.k > limit) {
            hdr.h.r = 0xAA;
        } else {
            hdr.h.r = 0xBB;
        }
    }
    table t {
        key = { }
        actions = { classify; }
        default_action = classify(0x10);
    }
    apply {
        t.apply();
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
