// A header union inside a struct inside the headers struct; nested struct initializers
// (list and named forms); setValid on a union member invalidates the other
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> a; }
header b_t { bit<16> b; }
header_union u_t { a_t a; b_t b; }
header t_t { bit<8> tag; }
struct inner_t { u_t u; }
struct headers { t_t t; inner_t in1; }
struct pt { bit<8> x; bit<8> y; }
struct nest_t { pt p; bit<8> z; }
struct M { nest_t n; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.t); transition select(hdr.t.tag) { 1: pa; 2: pb; default: accept; } }
    state pa { pkt.extract(hdr.in1.u.a); transition accept; }
    state pb { pkt.extract(hdr.in1.u.b); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.n = { { 1, 2 }, 3 };
        nest_t m2 = { p = { x = 4, y = 5 }, z = 6 };
        if (hdr.in1.u.isValid()) { hdr.t.tag = hdr.t.tag + meta.n.p.y + m2.p.x; }
        if (hdr.in1.u.a.isValid()) { hdr.in1.u.b.setValid(); hdr.in1.u.b.b = 0xBBBB; }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
