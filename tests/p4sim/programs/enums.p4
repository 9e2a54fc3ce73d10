// enum and serializable enum (enum bit<8>): casts both ways, comparison
#include <core.p4>
#include <v1model.p4>

enum Color { Red, Green, Blue }
enum bit<8> Kind { A = 1, B = 2, C = 0x10 }
header h_t { bit<8> k; bit<8> r; bit<8> c; }
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
        Kind kd = (Kind)hdr.h.k;
        Color col = Color.Red;
        if (kd == Kind.B) {
            col = Color.Blue;
        } else if (kd == Kind.C) {
            col = Color.Green;
        }
        hdr.h.r = (bit<8>)Kind.C + (bit<8>)kd;
        if (col == Color.Blue) {
            hdr.h.c = 3;
        } else if (col == Color.Green) {
            hdr.h.c = 2;
        } else {
            hdr.h.c = 1;
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
    apply {

        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
