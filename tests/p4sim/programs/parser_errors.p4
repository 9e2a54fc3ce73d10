// parser errors reach ingress: PacketTooShort (truncated extract) and NoMatch (select without default)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> t; bit<8> x; }
header g_t { bit<32> w; }
struct headers_t { h_t h; g_t g; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.t) {
            1: parse_g;
            2: accept;
        }
    }
    state parse_g { pkt.extract(hdr.g); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (sm.parser_error == error.PacketTooShort) {
            hdr.h.x = 0xEE;
            sm.egress_spec = 3;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.h.x = 0xEE;
            sm.egress_spec = 4;
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

        pkt.emit(hdr.h);
        pkt.emit(hdr.g);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
