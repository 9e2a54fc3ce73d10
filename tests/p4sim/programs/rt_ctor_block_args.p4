// Parser and control instances passed to another parser/control as constructor arguments
// and applied there; a value constructor parameter (a compile-time constant)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> o; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t e; }
struct M { }
control Bump(inout headers hdr)(bit<8> by) { apply { hdr.h.o = hdr.h.o + by; } }
control Twice(inout headers hdr)(Bump b) { apply { b.apply(hdr); b.apply(hdr); } }
parser Ext(packet_in pkt, out e_t e) { state start { pkt.extract(e); transition accept; } }
parser Outer(packet_in pkt, out headers hdr)(Ext x) {
    state start { pkt.extract(hdr.h); transition select(hdr.h.k) { 1: more; default: accept; } }
    state more { x.apply(pkt, hdr.e); transition accept; }
}
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    Ext() ext;
    Outer(ext) outer;
    state start { outer.apply(pkt, hdr); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    Bump(3) bump3;
    Twice(bump3) twice;
    apply {
        sm.egress_spec = 1;
        twice.apply(hdr);
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
