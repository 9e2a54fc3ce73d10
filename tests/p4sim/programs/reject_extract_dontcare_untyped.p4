// expect-error: 17:21: cannot infer the header type of _
// extract(_) without a type argument: p4c cannot infer the type of _ either
#include <core.p4>
#include <v1model.p4>

header f_t { bit<8> r; }
header a_t { bit<16> x; bit<16> y; }
header b_t { bit<8> v; }
header vs_t { varbit<16> d; }
struct headers_t { f_t f; b_t b; b_t c; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.f);
        pkt.extract(_);
        pkt.extract(hdr.b);
        transition select(hdr.b.v) { 2: skip_var; default: accept; }
    }
    state skip_var {
        pkt.extract<vs_t>(_, 16);
        pkt.extract(hdr.c);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.PacketTooShort) {
            hdr.f.r = 1;
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
    apply { pkt.emit(hdr); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
