// indirect counter arrays: packets, bytes, packets_and_bytes, run-time index
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t { bit<8> idx; bit<8> pad; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    counter<bit<32>>(16, CounterType.packets) pkts;
    counter<bit<32>>(16, CounterType.bytes) octets;
    counter<bit<32>>(16, CounterType.packets_and_bytes) both;
    apply {
        pkts.count((bit<32>)hdr.h.idx);
        octets.count((bit<32>)hdr.h.idx);
        both.count((bit<32>)hdr.h.idx + 1);
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
