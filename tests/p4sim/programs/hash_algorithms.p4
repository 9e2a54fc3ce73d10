// hash(): crc16, crc32, csum16, identity, xor16 over the same 4 bytes, with base and max
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a; bit<16> b;
    bit<16> crc16; bit<32> crc32; bit<16> csum16; bit<32> ident; bit<16> xor16; bit<16> bounded;
}
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
        hash(hdr.h.crc16, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b }, 32w65536);
        hash(hdr.h.crc32, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.h.b }, 64w4294967296);
        hash(hdr.h.csum16, HashAlgorithm.csum16, 16w0, { hdr.h.a, hdr.h.b }, 32w65536);
        hash(hdr.h.ident, HashAlgorithm.identity, 32w0, { hdr.h.a, hdr.h.b }, 64w4294967296);
        hash(hdr.h.xor16, HashAlgorithm.xor16, 16w0, { hdr.h.a, hdr.h.b }, 32w65536);
        // base + (hash % max)
        hash(hdr.h.bounded, HashAlgorithm.identity, 16w100, { hdr.h.a, hdr.h.b }, 32w9);
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
