// meter (two-rate three-color, packets): within CBS green, within PBS yellow, then red
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t { bit<8> idx; bit<8> color; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    meter<bit<32>>(4, MeterType.packets) m;
    apply {
        bit<2> c;
        m.execute_meter((bit<32>)hdr.h.idx, c);
        hdr.h.color = (bit<8>)c;
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

        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
