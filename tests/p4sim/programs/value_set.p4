// parser value_set: an empty set matches nothing, the other cases still apply
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> r; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    value_set<bit<8>>(4) special;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k) {
            special: s1;
            0x20: s2;
            default: s3;
        }
    }
    state s1 { hdr.h.r = 1; transition accept; }
    state s2 { hdr.h.r = 2; transition accept; }
    state s3 { hdr.h.r = 3; transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply { sm.egress_spec = 1; }
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
