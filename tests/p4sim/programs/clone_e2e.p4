// clone_preserving_field_list(E2E): the copy carries egress changes and runs egress again
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> v; bit<8> w; }
struct headers_t { h_t h; }

struct meta_t { @field_list(1) bit<8> mark; }

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
        if (sm.instance_type == 0) {
            hdr.h.v = hdr.h.v + 1;
            meta.mark = 7;
            clone_preserving_field_list(CloneType.E2E, 6, 1);
        } else if (sm.instance_type == 2) {
            hdr.h.w = meta.mark;
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
