// expect-error: 13:26: unsupported by p4sim: for-in over a bit<8>
// for-in over something that is neither a header stack nor a range: refused by name
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        for (bit<8> x in hdr.h.a) { hdr.h.a = x; }
    }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
