// header stack: extract(.next) in a loop ended by select on .last; overflow gives StackOutOfBounds
#include <core.p4>
#include <v1model.p4>

header item_t { bit<8> v; }
header count_t { bit<8> n; }
struct headers_t { count_t cnt; item_t[4] s; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { transition parse_item; }
    state parse_item {
        pkt.extract(hdr.s.next);
        transition select(hdr.s.last.v) {
            0: accept;
            default: parse_item;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        hdr.cnt.setValid();
        hdr.cnt.n = 0;
        if (hdr.s[0].isValid()) { hdr.cnt.n = 1; }
        if (hdr.s[1].isValid()) { hdr.cnt.n = 2; }
        if (hdr.s[2].isValid()) { hdr.cnt.n = 3; }
        if (hdr.s[3].isValid()) { hdr.cnt.n = 4; }
        if (sm.parser_error == error.StackOutOfBounds) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
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

        pkt.emit(hdr.cnt);
        pkt.emit(hdr.s);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
