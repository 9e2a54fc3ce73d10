// registers: read-modify-write per index, values written into the packet, register_write/check_register
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t { bit<8> idx; bit<32> before; bit<32> after; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    register<bit<32>, bit<32>>(8) acc;
    apply {
        bit<32> v;
        acc.read(v, (bit<32>)hdr.h.idx);
        hdr.h.before = v;
        v = v + 10;
        acc.write((bit<32>)hdr.h.idx, v);
        hdr.h.after = v;
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
