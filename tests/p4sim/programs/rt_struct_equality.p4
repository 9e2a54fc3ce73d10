// == and != on structs and headers: fields compared member by member; two invalid headers are equal, a valid and an invalid one are not
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> r; }
header g_t { bit<8> a; bit<8> b; }
struct headers { h_t h; g_t x; g_t y; }
struct M { bit<8> m; }
struct pt { bit<8> a; bit<8> b; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition select(hdr.h.a) { 1: one; 2: two; default: accept; } }
    state one { pkt.extract(hdr.x); transition accept; }
    state two { pkt.extract(hdr.x); pkt.extract(hdr.y); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        pt p = { hdr.h.a, hdr.h.b };
        pt q = { a = hdr.h.b, b = hdr.h.a };
        bit<8> r = 0;
        if (p == q) { r = r | 1; }
        if (p != q) { r = r | 2; }
        if (hdr.x == hdr.y) { r = r | 4; }
        if (hdr.x != hdr.y) { r = r | 8; }
        hdr.h.r = r;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
