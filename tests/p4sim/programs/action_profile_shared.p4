// one action_profile shared by two tables that list its actions in different orders,
// and one constructed in place; an indirect table's miss runs its default action
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action seta(bit<8> v) { hdr.h.a = v; }
    action setb(bit<8> v) { hdr.h.b = v; }
    action_profile(32w4) ap;
    table t1 {
        key = { hdr.h.k : exact; }
        actions = { seta; setb; }
        implementation = ap;
    }
    table t2 {
        key = { hdr.h.a : exact; }
        actions = { setb; seta; }
        implementation = ap;
        default_action = setb(0xdd);
    }
    table t3 {
        key = { hdr.h.k : exact; }
        actions = { seta; }
        implementation = action_profile(32w2);
    }
    apply {
        sm.egress_spec = 1;
        t1.apply();
        t2.apply();
        if (hdr.h.k == 9) { t3.apply(); }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
