// expect-error: 12:33: break outside a for loop
// break is allowed only inside a for loop
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply { if (hdr.h.a == 1) { break; } }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
