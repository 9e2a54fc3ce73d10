// verify() with a user-declared error; the error reaches ingress in parser_error
#include <core.p4>
#include <v1model.p4>

error { BadVersion }
header h_t { bit<8> v; bit<8> x; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.v == 4, error.BadVersion);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (sm.parser_error == error.BadVersion) {
            hdr.h.x = 0xBD;
            sm.egress_spec = 2;
        } else if (sm.parser_error == error.NoError) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 3;
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
