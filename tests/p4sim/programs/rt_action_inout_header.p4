// Actions and functions taking headers and structs as inout/out parameters: copy-in, copy-out, also when the body returns early
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct M { bit<8> m; }
struct pair_t { bit<8> hi; bit<8> lo; }
void split(in bit<8> v, out pair_t p) { p.hi = v >> 4; p.lo = v & 0xF; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action bump(inout h_t x) {
        bit<8> old = x.a;
        x.a = x.a + 1;
        if (old == 0) { return; }
        x.b = old;
    }
    apply {
        sm.egress_spec = 1;
        bump(hdr.h);
        pair_t p;
        split(hdr.h.a, p);
        hdr.h.c = p.hi;
        hdr.h.d = p.lo;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
