// varbit: two-argument extract with a run-time size; too big for the varbit -> HeaderTooShort
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> n; }
header opt_t { varbit<32> data; }
header tail_t { bit<8> t; }
struct headers_t { len_t len; opt_t opt; tail_t tail; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)hdr.len.n << 3);
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (sm.parser_error == error.HeaderTooShort) {
            sm.egress_spec = 2;
        } else {
            hdr.len.n = hdr.len.n | 0x10;
            hdr.tail.t = hdr.tail.t + 1;
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

        pkt.emit(hdr.len);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.tail);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
