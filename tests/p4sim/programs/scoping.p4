// block scopes: a local declared in an inner block shadows the outer one only inside it
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
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
        bit<8> x = 1;
        {
            bit<8> y = x + 1;
            x = y + 1;
            hdr.h.a = y;
        }
        hdr.h.b = x;
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
