// A local variable initialised from a header-stack element at a run-time index: p4c moves
// the declaration up (MoveDeclarations) and HSIndexSimplifier guards the initialisation, so
// with the index out of range the variable keeps its initial value (0 in BMv2).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> j; bit<8> r; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[2] st; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st[0]); pkt.extract(hdr.st[1]); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> x = hdr.st[hdr.h.j].v;
        hdr.h.r = x + 1;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
