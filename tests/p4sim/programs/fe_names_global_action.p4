// global actions in a control's table keep their global name, with or without a relative @name (p4c 1.2.5.16 LocalizeActions; 1.2.4.0 prefixed the control)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
action set_plain(inout bit<8> x, bit<8> v) { x = v; }
@name("renamed_global") action set_named(inout bit<8> x, bit<8> v) { x = v + 1; }
parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    table t { key = { hd.h.a: exact; } actions = { set_plain(hd.h.b); set_named(hd.h.b); } }
    apply { sm.egress_spec = 1; t.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
