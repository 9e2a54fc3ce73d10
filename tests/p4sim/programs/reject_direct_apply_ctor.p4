// expect-error: 41:9: Bump has constructor parameters
// a control with constructor parameters cannot be applied by its type name
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> r; }
header t_t { bit<8> v; }
struct headers_t { h_t h; t_t t; }

struct meta_t { }

parser Sub(packet_in pkt, out t_t t) {
    state start { pkt.extract(t); transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k) { 1: tail; default: accept; }
    }
    state tail {
        Sub.apply(pkt, hdr.t);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control Bump(inout bit<8> x)(bit<8> step) {
    counter(4, CounterType.packets) hits;
    apply {
        x = x + 1;
        hits.count((bit<32>)x[1:0]);
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        Bump.apply(hdr.h.r);
        if (hdr.t.isValid()) {
            hdr.t.v = hdr.t.v + hdr.h.r;
        }
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
    apply { pkt.emit(hdr.h); pkt.emit(hdr.t); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
