// A for loop that never ends (bit<8> i stepping by 2 never equals 255): p4sim stops it after
// a bounded number of iterations and drops that packet (logged), instead of hanging
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; }
struct headers { h_t h; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> c = 0;
        for (bit<8> i = hdr.h.n; i != 255; i = i + 2) { c = c + 1; }
        hdr.h.n = c;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
