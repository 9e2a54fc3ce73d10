// A for loop whose update is a method call (push_front on a header stack) and whose condition reads the stack
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[4] st; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st.next); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        for (bit<8> i = 0; i < hdr.h.n; hdr.st.push_front(1)) { i = i + 1; }
        for (bit<8> k = 0; k < 4; k = k + 1) { if (!hdr.st[k].isValid()) { hdr.st[k].setValid(); hdr.st[k].v = k; } }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
