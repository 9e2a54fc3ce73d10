// clone_preserving_field_list(I2E): the copy is the packet as received, with the listed metadata
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> v; }
struct headers_t { h_t h; }

struct meta_t { @field_list(1) bit<8> tag; bit<8> other; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        meta.tag = 0x42;
        meta.other = 0x99;
        hdr.h.v = 0xAA;
        sm.egress_spec = 1;
        if (hdr.h.k == 1) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        // only a clone that kept tag (and lost other) survives
        if (sm.instance_type == 1 && (meta.tag != 0x42 || meta.other != 0)) {
            mark_to_drop(sm);
        }
        // simple_switch resets all metadata of the clone, standard_metadata too:
        // its ingress_port reads 0 in egress whatever port the original came in on
        if (sm.instance_type == 1) {
            hdr.h.v = (bit<8>)sm.ingress_port;
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
