// lookahead of a header type: the peeked header's fields decide, nothing is consumed
#include <core.p4>
#include <v1model.p4>

header probe_t { bit<4> version; bit<4> kind; }
header v4_t { bit<8> vk; bit<8> x; }
header v6_t { bit<8> vk; bit<16> y; }
struct headers_t { v4_t v4; v6_t v6; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        probe_t p = pkt.lookahead<probe_t>();
        transition select(p.version) {
            4: parse_v4;
            6: parse_v6;
            default: accept;
        }
    }
    state parse_v4 { pkt.extract(hdr.v4); transition accept; }
    state parse_v6 { pkt.extract(hdr.v6); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (hdr.v4.isValid()) {
            hdr.v4.x = hdr.v4.x + 1;
        } else if (hdr.v6.isValid()) {
            hdr.v6.y = hdr.v6.y + 1;
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

        pkt.emit(hdr.v4);
        pkt.emit(hdr.v6);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
