// the preprocessor: #define (object- and function-like, continued lines), #ifdef/#ifndef,
// #if with defined() and arithmetic, #else, #undef
#include <core.p4>
#include <v1model.p4>

#define PORT_OUT 3
#define ADD(a, b) ((a) + (b))
#define FEATURE_X
#ifdef FEATURE_X
#define VAL 0x11
#else
#define VAL 0x22
#endif
#if defined(FEATURE_Y) || (PORT_OUT > 2)
#define VAL2 0x33
#else
#define VAL2 0x44
#endif
#undef FEATURE_X
#ifndef FEATURE_X
#define VAL3 0x55
#endif
#define SET_TWO(x, y) \
    hdr.h.a = (x); \
    hdr.h.b = (y);

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        SET_TWO(VAL, VAL2)
        hdr.h.c = ADD(hdr.h.c, 8w1);
        hdr.h.d = VAL3;
        sm.egress_spec = PORT_OUT;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
