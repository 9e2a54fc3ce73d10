// Nested for loops: break and continue leave or skip the inner loop only; the outer loop goes on
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
        bit<8> n = 0;
        for (bit<8> i = 0; i < 4; i = i + 1) {
            for (bit<8> j = 0; j < 4; j = j + 1) {
                if (j == hdr.h.a) { break; }
                if (j == hdr.h.b) { continue; }
                n = n + 1;
            }
        }
        hdr.h.c = n;
        bit<8> m = 0;
        for (bit<8> k = 0; k < 3; k = k + 1) { m = m + k; if (k == hdr.h.d) { break; } }
        hdr.h.d = m;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
