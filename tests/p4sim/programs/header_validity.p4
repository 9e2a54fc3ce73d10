// setValid/setInvalid: invalid headers are not emitted, a new valid header is inserted
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> v; }
header b_t { bit<16> w; }
struct headers_t { a_t a; b_t b; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.a); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (hdr.a.v == 1) {
            hdr.b.setValid();
            hdr.b.w = 0xB00B;
        } else if (hdr.a.v == 2) {
            hdr.a.setInvalid();
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

        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
