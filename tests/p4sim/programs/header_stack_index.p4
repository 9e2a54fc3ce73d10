// header stack: constant and run-time indices
#include <core.p4>
#include <v1model.p4>

header sel_t { bit<8> i; }
header item_t { bit<8> v; }
struct headers_t { sel_t sel; item_t[3] s; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        pkt.extract(hdr.sel);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (hdr.sel.i < 3) {
            hdr.s[hdr.sel.i].v = 0xFF;
        }
        hdr.s[2].v = hdr.s[2].v + 1;
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

        pkt.emit(hdr.sel);
        pkt.emit(hdr.s);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
