// casts: truncation, zero extension, sign extension through int, bool <-> bit<1>
#include <core.p4>
#include <v1model.p4>

header h_t { bit<16> w; bit<8> t; bit<16> z; bit<16> s; bit<8> b1; int<8> si; }
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
        hdr.h.t = (bit<8>)hdr.h.w;
        hdr.h.z = (bit<16>)hdr.h.t;
        hdr.h.s = (bit<16>)(int<16>)hdr.h.si;
        bool flag = hdr.h.w > 16w0x1000;
        hdr.h.b1 = (bit<8>)(bit<1>)flag;
        if ((bool)hdr.h.b1[0:0]) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
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
