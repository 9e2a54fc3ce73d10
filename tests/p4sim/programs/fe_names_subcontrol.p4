// sub-control instances: each has its own table, named <Control>.<instance>.t (an @name on the instance renames it, `.x` makes it global)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control Sub(inout bit<8> key, inout bit<8> out_v) {
    action put(bit<8> v) { out_v = v; }
    table t { key = { key: exact; } actions = { put; NoAction; } }
    apply { t.apply(); }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    Sub() first;
    @name("renamed") Sub() second;
    @name(".global_sub") Sub() third;
    apply {
        sm.egress_spec = 1;
        first.apply(hd.h.a, hd.h.b);
        second.apply(hd.h.a, hd.h.c);
        third.apply(hd.h.a, hd.h.d);
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
