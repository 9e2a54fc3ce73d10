// Header-stack indices out of range at run time. In the parser, extract into hs[i] with
// i >= size is the parser error StackOutOfBounds (as `.next` past the end): the packet
// reaches ingress with parser_error set. In a control, a run-time index out of range is
// undefined in P4_16; p4sim drops that packet and logs it (see the README's divergences).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> i; bit<8> j; bit<8> err; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[2] st; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st[hdr.h.i]); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.StackOutOfBounds) { hdr.h.err = 0xEE; }
        if (hdr.h.j != 0xFF) { hdr.st[hdr.h.j].v = 0x55; }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
