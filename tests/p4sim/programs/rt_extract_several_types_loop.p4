// Regression (commit 64aa1ae) in a looping parser (state dispatch, not inlined): headers of types H and G_H extracted in a loop into a stack and a header
#include <core.p4>
#include <v1model.p4>
header H { bit<8> more; bit<8> v; }
header G_H { bit<16> w; }
struct headers { H[3] hs; G_H g; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.hs.next); transition select(hdr.hs.last.more) { 1: start; default: tail; } }
    state tail { pkt.extract(hdr.g); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hdr.g.w = hdr.g.w + (bit<16>)hdr.hs.lastIndex;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
