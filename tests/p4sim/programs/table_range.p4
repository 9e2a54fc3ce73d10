// range table: inclusive bounds; overlapping ranges resolved by priority
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

    action set_r(bit<8> v) { hdr.h.r = v; }
    table t {
        key = { hdr.h.k: range; }
        actions = { set_r; NoAction; }
        default_action = set_r(0xEE);
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
