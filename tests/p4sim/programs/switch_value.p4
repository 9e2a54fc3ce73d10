// switch on a bit<8> value: grouped labels, default, no match
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> r; bit<8> q; }
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
        switch (hdr.h.k) {
            1:
            2: { hdr.h.r = 0x12; }
            3: { hdr.h.r = 0x03; }
            default: { hdr.h.r = 0xFF; }
        }
        switch (hdr.h.k) {
            3: { hdr.h.q = 0x33; }
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
    apply {

        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
