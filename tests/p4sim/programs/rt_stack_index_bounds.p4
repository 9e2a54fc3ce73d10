// Header-stack indices out of range at run time, as p4c + BMv2 run them: p4c's
// HSIndexSimplifier (midend/hsIndexSimplify.cpp) rewrites a statement using hs[i] into
// `if (i == 0) ... else if (i == 1) ...` with no final else, so with i out of range the
// statement does nothing: no extract (the bytes stay payload, no parser error), no write,
// no read (the target keeps its value), and an `if` on hs[i] takes its else branch.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> i; bit<8> j; bit<8> r; bit<8> c; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[2] st; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st[hdr.h.i]); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error != error.NoError) { hdr.h.c = 0xEE; }
        hdr.h.r = 0x99;
        hdr.h.r = hdr.st[hdr.h.j].v;
        if (hdr.st[hdr.h.j].isValid()) { hdr.h.c = hdr.h.c + 1; } else { hdr.h.c = hdr.h.c + 2; }
        hdr.st[hdr.h.j].v = 0x55;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
