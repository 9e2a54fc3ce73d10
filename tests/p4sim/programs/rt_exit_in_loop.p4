// exit inside a for loop inside an action: the loop, the action and the ingress control end; egress still runs
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action walk() {
        for (bit<8> i = 0; i < 5; i = i + 1) {
            hdr.h.c = i;
            if (i == hdr.h.a) { exit; }
        }
        hdr.h.c = 5;
    }
    apply {
        sm.egress_spec = 1;
        walk();
        hdr.h.b = 0xBB;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { hdr.h.d = 0xEE; } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
