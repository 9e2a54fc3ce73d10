// list expressions, struct expressions (named fields), header assigned from a list
#include <core.p4>
#include <v1model.p4>

struct pair_t { bit<8> a; bit<8> b; }
header h_t { bit<8> x; bit<8> y; bit<8> s; }
header h2_t { bit<8> p; bit<8> q; }
struct headers_t { h_t h; h2_t h2; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        pair_t p = { hdr.h.x, hdr.h.y };
        pair_t q = { a = 8w1, b = 8w2 };
        p = { b = p.a, a = p.b };
        hdr.h.x = p.a;
        hdr.h.y = p.b;
        hdr.h.s = q.a + q.b;
        hdr.h2 = { 8w0xAB, 8w0xCD };
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
        pkt.emit(hdr.h2);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
