// advance(): skipped bytes are consumed and not emitted (constant and run-time amounts)
#include <core.p4>
#include <v1model.p4>

header skip_t { bit<8> n; }
header h_t { bit<8> v; }
struct headers_t { skip_t skip; h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start {
        pkt.extract(hdr.skip);
        pkt.advance((bit<32>)hdr.skip.n << 3);
        pkt.advance(8);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        hdr.h.v = hdr.h.v + 1;
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

        pkt.emit(hdr.skip);
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
