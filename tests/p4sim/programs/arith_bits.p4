// bit<8> arithmetic modulo 2^8, shifts (>= width gives 0), bitwise operators
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a; bit<8> b;
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> shl; bit<8> shr;
    bit<8> and_; bit<8> or_; bit<8> xor_; bit<8> not_; bit<8> neg; bit<8> shv;
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
        hdr.h.add = hdr.h.a + hdr.h.b;
        hdr.h.sub = hdr.h.a - hdr.h.b;
        hdr.h.mul = hdr.h.a * hdr.h.b;
        hdr.h.shl = hdr.h.a << 3;
        hdr.h.shr = hdr.h.a >> 1;
        hdr.h.and_ = hdr.h.a & hdr.h.b;
        hdr.h.or_ = hdr.h.a | hdr.h.b;
        hdr.h.xor_ = hdr.h.a ^ hdr.h.b;
        hdr.h.not_ = ~hdr.h.a;
        hdr.h.neg = -hdr.h.a;
        hdr.h.shv = hdr.h.a << hdr.h.b;
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
