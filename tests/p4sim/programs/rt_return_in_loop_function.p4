// return from inside a for loop in a function (the loop and the function end), and from inside a for-in loop
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[3] st; }
struct M { bit<8> m; }
header e_t2 { bit<8> v; }
bit<8> find(in e_t[3] s, in bit<8> want) {
    bit<8> i = 0;
    for (e_t e in s) { if (e.v == want) { return i; } i = i + 1; }
    return 0xFF;
}
bit<8> first_div(in bit<8> v) {
    for (bit<8> d = 2; d < 10; d = d + 1) { if (v % d == 0) { return d; } }
    return 0;
}
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st.next); pkt.extract(hdr.st.next); pkt.extract(hdr.st.next); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hdr.h.a = find(hdr.st, hdr.h.a);
        hdr.h.b = first_div(hdr.h.b);
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
