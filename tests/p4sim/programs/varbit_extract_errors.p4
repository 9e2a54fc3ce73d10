// extract of a varbit header with a run-time length: BMv2's error codes, in BMv2's order
// (length not a multiple of 8: ParserInvalidArgument; too few bytes: PacketTooShort; longer
// than the field: HeaderTooShort)
#include <core.p4>
#include <v1model.p4>

header f_t { bit<8> len; bit<8> r; }
header v_t { bit<8> k; varbit<16> d; }
struct headers_t { f_t f; v_t v; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.f);
        pkt.extract(hdr.v, (bit<32>)hdr.f.len);
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
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.f.r = 4;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.f.r = 6;
        } else if (sm.parser_error != error.NoError) {
            hdr.f.r = 0xEE;
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
    apply { pkt.emit(hdr.f); pkt.emit(hdr.v); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
