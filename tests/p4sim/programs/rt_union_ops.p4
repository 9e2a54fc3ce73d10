// Header unions: in a struct copied to metadata, returned from a function, compared (two
// all-invalid unions are equal), a stack of unions filled by extract(us.next.member) (each
// extract advances the stack, as BMv2's ParserOpExtractUnionStack) and emitted
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> a; }
header b_t { bit<16> b; }
header_union u_t { a_t a; b_t b; }
header t_t { bit<8> tag; bit<8> r; }
struct inner_t { u_t u; }
struct headers { t_t t; inner_t in1; u_t u2; u_t[2] us; }
struct M { inner_t keep; }
u_t pick(in u_t x) { return x; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.t); transition select(hdr.t.tag) { 1: pa; 2: pb; 3: st; default: accept; } }
    state pa { pkt.extract(hdr.in1.u.a); transition accept; }
    state pb { pkt.extract(hdr.in1.u.b); transition accept; }
    state st { pkt.extract(hdr.us.next.a); pkt.extract(hdr.us.next.b); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.keep = hdr.in1;
        hdr.u2 = pick(meta.keep.u);
        if (hdr.u2.isValid()) { hdr.t.r = 1; }
        if (hdr.u2 == hdr.in1.u) { hdr.t.r = hdr.t.r + 2; }
        if (hdr.us[1].b.isValid()) { hdr.t.r = hdr.t.r + 4; }
        hdr.in1.u.a.setInvalid();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
