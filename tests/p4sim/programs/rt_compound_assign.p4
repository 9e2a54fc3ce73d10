// Compound assignments (P4_16 1.2.4): += -= *= &= |= ^= <<= >>= on bit<8> fields, wrapping at the width
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

    apply {
        sm.egress_spec = 1;
        hdr.h.a += 0xF0;
        hdr.h.b -= 3;
        hdr.h.c *= 3;
        hdr.h.d ^= 0xFF;
        hdr.h.a &= 0x7F;
        hdr.h.b |= 0x80;
        hdr.h.c <<= 1;
        hdr.h.d >>= 2;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
