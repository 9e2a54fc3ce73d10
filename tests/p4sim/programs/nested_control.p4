// a control instantiated twice inside ingress: separate tables (I.inc1.t, I.inc2.t), constructor-free apply with arguments
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> a; bit<8> b; }
struct headers_t { h_t h; }

control Inc(inout bit<8> x, in bit<8> k) {
    action add(bit<8> d) { x = x + d; }
    table t {
        key = { k: exact; }
        actions = { add; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    Inc() inc1;
    Inc() inc2;
    apply {
        inc1.apply(hdr.h.a, hdr.h.k);
        inc2.apply(hdr.h.b, hdr.h.k);
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
