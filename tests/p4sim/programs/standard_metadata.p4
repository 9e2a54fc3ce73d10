// standard_metadata: ingress_port, packet_length, egress_port, instance_type; log_msg
#include <core.p4>
#include <v1model.p4>

header h_t { bit<16> in_port; bit<32> len; bit<16> out_port; bit<8> inst; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        hdr.h.in_port = (bit<16>)sm.ingress_port;
        hdr.h.len = sm.packet_length;
        log_msg("ingress port {}", { sm.ingress_port });
        sm.egress_spec = 5;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.out_port = (bit<16>)sm.egress_port;
        hdr.h.inst = (bit<8>)sm.instance_type;
    }
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
