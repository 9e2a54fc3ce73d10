// extract into a header reached through an expression: hs[0], hs[run-time index], a struct member, a stack element's union member
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> i; }
header e_t { bit<8> v; }
struct inner_t { e_t e; }
struct headers { h_t h; e_t[3] st; inner_t in1; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st[0]); pkt.extract(hdr.st[hdr.h.i]); pkt.extract(hdr.in1.e); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hdr.st[0].v = hdr.st[0].v + 1;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
