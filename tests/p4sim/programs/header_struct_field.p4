// A header holds a struct (and a struct inside it): extract and emit lay the leaves out in
// order, a table matches on a leaf, whole structs are assigned, and a header copied is
// independent of the one it was copied from (p4c sample bvec-hdr-bmv2; p4c flattens these
// headers in midend/flattenHeaders.cpp). Checked on p4c 1.2.5.16 + BMv2.
#include <core.p4>
#include <v1model.p4>
struct pair_t { bit<3> hi; bool f; bit<4> lo; }
struct row_t { bit<8> key; pair_t p; bit<16> w; }
header r_t { row_t row; bit<8> tag; }
struct headers { r_t a; r_t b; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); pkt.extract(hdr.b); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    action swap_rows() {
        row_t t = hdr.a.row;
        hdr.a.row = hdr.b.row;
        hdr.b.row = t;
        sm.egress_spec = 2;
    }
    action copy_header() {
        hdr.b = hdr.a;
        hdr.a.row.p.lo = 0;
        hdr.a.row.p = { 7, true, hdr.b.row.p.lo + 1 };
        sm.egress_spec = 3;
    }
    table t {
        key = { hdr.a.row.key : exact; hdr.a.row.p.f : exact; }
        actions = { to; swap_rows; copy_header; }
        default_action = to(0);
        const entries = {
            (1, true) : to(1);
            (2, false) : swap_rows();
            (3, true) : copy_header();
        }
    }
    apply {
        t.apply();
        if (hdr.b.row.p.f) { hdr.b.tag = hdr.b.tag + 1; }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
