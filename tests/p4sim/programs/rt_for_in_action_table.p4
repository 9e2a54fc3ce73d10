// A for loop inside an action run by a table, summing the parameter's bits; the action's loop variable does not leak
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
    action count(bit<8> v) {
        bit<8> n = 0;
        for (bit<8> i = 0; i < 8; i = i + 1) { if (((v >> i) & 1) == 1) { n = n + 1; } }
        hdr.h.c = n;
        bit<8> m = 0;
        for (bit<8> i = 0; i < 8; i = i + 1) { if (((hdr.h.a >> i) & 1) == 1) { m = m + 1; } }
        hdr.h.d = m;
    }
    table popcount { key = { hdr.h.a: exact; } actions = { count; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        popcount.apply();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
