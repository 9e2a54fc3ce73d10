// Nested struct initializers: a list of lists, named fields holding a named struct, an initializer in a function return and as an action argument copy
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct M { bit<8> m; }
struct pt_t { bit<8> x; bit<8> y; }
struct outer_t { pt_t p; bit<8> z; }
outer_t mk(in bit<8> v) { return { { v, v + 1 }, 3 }; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        outer_t o = { { hdr.h.a, 1 }, hdr.h.b };
        outer_t q = { p = { x = hdr.h.b, y = 2 }, z = hdr.h.a };
        outer_t r = mk(hdr.h.c);
        hdr.h.a = o.p.x + o.p.y + o.z;
        hdr.h.b = q.p.x + q.p.y + q.z;
        hdr.h.c = r.p.x + r.p.y + r.z;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
