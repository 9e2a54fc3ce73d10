// a parser instantiated and applied inside another parser
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> v; }
struct headers_t { h_t first; h_t second; }

parser Inner(packet_in pkt, out h_t h) {
    state start {
        pkt.extract(h);
        transition accept;
    }
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    Inner() inner;
    state start {
        inner.apply(pkt, hdr.first);
        inner.apply(pkt, hdr.second);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        bit<8> t = hdr.first.v;
        hdr.first.v = hdr.second.v;
        hdr.second.v = t;
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

        pkt.emit(hdr.first);
        pkt.emit(hdr.second);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
