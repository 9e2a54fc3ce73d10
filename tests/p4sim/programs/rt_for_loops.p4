// P4_16 1.2.4 for loops: C-style with two init/update statements, continue, break;
// for-in over a header stack (the variable is a copy) and over a range; return from nested loops
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; bit<8> s; bit<8> r; bit<8> f; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[3] st; }
struct M { bit<8> m; }
bit<8> first_big(in bit<8> lim) {
    for (bit<8> i = 1; i < 100; i = i + 1) {
        for (bit<8> j = 0; j < 3; j = j + 1) {
            if (i * 3 + j > lim) { return i; }
        }
    }
    return 0xFF;
}
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st.next); pkt.extract(hdr.st.next); pkt.extract(hdr.st.next); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> sum = 0;
        for (bit<8> i = 0, bit<8> k = 10; i < hdr.h.n; i = i + 1, k = k + 1) {
            if (i == 2) { continue; }
            if (i == 6) { break; }
            sum = sum + k;
        }
        hdr.h.s = sum;
        bit<8> acc = 0;
        for (e_t e in hdr.st) { acc = acc + e.v; e.v = 0; }
        for (bit<8> x in 1 .. 4) { acc = acc + x; }
        hdr.h.r = acc;
        hdr.h.f = first_big(hdr.h.n);
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
