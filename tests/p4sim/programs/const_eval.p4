// compile-time evaluation: int constants of any size, / and % on constants, casts of wide literals
#include <core.p4>
#include <v1model.p4>

const int BIG = 1 << 40;
const int Q = BIG / 3;
const bit<8> R = (bit<8>)(BIG % 1000);
const bit<16> K = 16w0xFFFF + 16w2;
header h_t { bit<8> a; bit<8> r; bit<16> k; bit<8> t; bit<48> q; }
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
        hdr.h.a = (bit<8>)300;
        hdr.h.r = R;
        hdr.h.k = K;
        hdr.h.t = (bit<8>)(3 * 5 + 2);
        hdr.h.q = (bit<48>)Q;
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
