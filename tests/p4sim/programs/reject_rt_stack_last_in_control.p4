// expect-error: 15:23: 'last' of a header stack can only be used in a parser
// hs.last (and hs.next) outside a parser: p4c's type checker refuses it, so does p4sim
#include <core.p4>
#include <v1model.p4>
header e_t { bit<8> v; }
struct headers { e_t[2] st; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.st.next); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.st[0].v = hdr.st.last.v;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
