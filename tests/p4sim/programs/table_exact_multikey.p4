// exact table with two key fields, hit/miss, action parameters
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<16> b; bit<8> r; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    action fwd(bit<9> port, bit<8> v) {
        sm.egress_spec = port;
        hdr.h.r = v;
    }
    action miss() {
        sm.egress_spec = 7;
    }
    table t {
        key = {
            hdr.h.a: exact;
            hdr.h.b: exact;
        }
        actions = { fwd; miss; }
        default_action = miss();
    }
    apply {
        if (t.apply().hit) {
            hdr.h.a = hdr.h.a + 1;
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

        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
