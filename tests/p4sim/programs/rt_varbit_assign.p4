// A varbit field assigned to another varbit field carries its current width (the emitted
// length); a header copy of a varbit header too
#include <core.p4>
#include <v1model.p4>
header l_t { bit<8> n; }
header v_t { varbit<32> x; }
struct headers { l_t l; v_t a; v_t b; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.l); pkt.extract(hdr.a, (bit<32>)hdr.l.n * 8); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.b.setValid(); hdr.b.x = hdr.a.x; v_t c = hdr.a; hdr.a = c; }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
