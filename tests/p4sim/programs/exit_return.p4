// exit (in an action) ends ingress, return ends the control; egress still runs
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> x; bit<8> r; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    action set_and_exit() {
        hdr.h.x = 0xE1;
        exit;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.k == 1) {
            set_and_exit();
        }
        if (hdr.h.k == 2) {
            hdr.h.x = 0xE2;
            return;
        }
        hdr.h.x = 0x55;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.r = 0x77; }
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
