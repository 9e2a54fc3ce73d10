// resubmit_preserving_field_list: the received packet runs ingress again with the listed metadata
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> v; bit<8> r; }
struct headers_t { h_t h; }

struct meta_t { @field_list(1) bit<8> note; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (sm.instance_type == 6) {
            hdr.h.r = meta.note;
            sm.egress_spec = 1;
        } else {
            meta.note = 0x21;
            hdr.h.v = 0xFF;   // discarded: the resubmitted packet is the received one
            resubmit_preserving_field_list(1);
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
