// recirculate_preserving_field_list: the deparsed packet comes back to ingress until a condition holds
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> v; bit<8> passes; }
struct headers_t { h_t h; }

struct meta_t { @field_list(1) bit<8> passes; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply { sm.egress_spec = 1; }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.v = hdr.h.v + 1;
        meta.passes = meta.passes + 1;
        hdr.h.passes = meta.passes;
        if (hdr.h.v < 3) {
            recirculate_preserving_field_list(1);
        }
    }
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
