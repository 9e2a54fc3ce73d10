// functions: return values, early return, in/out/inout parameters (copy-in/copy-out)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> m; bit<8> inc; bit<8> dbl; }
struct headers_t { h_t h; }

bit<8> max8(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x;
    }
    return y;
}

void swap8(inout bit<8> x, inout bit<8> y) {
    bit<8> t = x;
    x = y;
    y = t;
}

bit<8> next_and_double(in bit<8> x, out bit<8> doubled) {
    doubled = x + x;
    return x + 1;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        hdr.h.m = max8(hdr.h.a, hdr.h.b);
        swap8(hdr.h.a, hdr.h.b);
        hdr.h.inc = next_and_double(hdr.h.a, hdr.h.dbl);
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
