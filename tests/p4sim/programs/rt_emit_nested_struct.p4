// emit of a struct holding structs of headers, a header union and a header stack: depth-first in field order, invalid ones skipped
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> a; }
header b_t { bit<8> b; }
header_union u_t { a_t a; b_t b; }
struct in_t { b_t b1; u_t u; }
struct headers { a_t a; in_t i; b_t[2] st; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hdr.i.b1.setValid(); hdr.i.b1.b = 0x11;
        if (hdr.a.a == 1) { hdr.i.u.b.setValid(); hdr.i.u.b.b = 0x22; }
        hdr.st[1].setValid(); hdr.st[1].b = 0x33;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
