// A header assigned from a list or a struct expression becomes valid; {#} makes a header invalid
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header g_t { bit<8> x; bit<8> y; }
struct headers { h_t h; g_t g; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) { hdr.g = { hdr.h.b, 0x22 }; }
        if (hdr.h.a == 2) { hdr.g = { y = 0x33, x = hdr.h.b }; }
        if (hdr.h.a == 3) { hdr.h = {#}; }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
