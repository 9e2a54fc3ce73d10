// verify_checksum / update_checksum (csum16) on an IPv4 header; checksum_error reaches ingress
#include <core.p4>
#include <v1model.p4>

header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> total_len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst;
}
struct headers_t { ipv4_t h; }

struct meta_t { bit<1> fix; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.h.isValid(),
            { hdr.h.version, hdr.h.ihl, hdr.h.tos, hdr.h.total_len, hdr.h.id, hdr.h.flags,
              hdr.h.frag, hdr.h.ttl, hdr.h.proto, hdr.h.src, hdr.h.dst },
            hdr.h.csum, HashAlgorithm.csum16);
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    apply {
        if (sm.checksum_error == 1) {
            sm.egress_spec = 2;
        } else {
            hdr.h.ttl = hdr.h.ttl - 1;
            meta.fix = 1;
            sm.egress_spec = 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(meta.fix == 1,
            { hdr.h.version, hdr.h.ihl, hdr.h.tos, hdr.h.total_len, hdr.h.id, hdr.h.flags,
              hdr.h.frag, hdr.h.ttl, hdr.h.proto, hdr.h.src, hdr.h.dst },
            hdr.h.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {

        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
