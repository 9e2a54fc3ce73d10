// A local varbit variable carries the bits and the current width of what is assigned to it
// (declared with an initializer or assigned later; p4c sample issue447-5-bmv2).
// Checked on p4c 1.2.5.16 + BMv2.
#include <core.p4>
#include <v1model.p4>
header s_t { bit<8> na; bit<8> nb; }
header v_t { varbit<32> x; }
struct headers { s_t s; v_t a; v_t b; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.s);
        pkt.extract(hdr.a, (bit<32>)hdr.s.na * 8);
        pkt.extract(hdr.b, (bit<32>)hdr.s.nb * 8);
        transition accept;
    }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    varbit<32> keep;
    apply {
        sm.egress_spec = 1;
        varbit<32> t = hdr.a.x;
        keep = t;
        hdr.a.x = hdr.b.x;
        hdr.b.x = keep;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
