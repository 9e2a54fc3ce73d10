// a control passed to V1Switch as an instance, and @name on a control: objects are named after the control's declared name (p4c HierarchicalNames)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
@name("ignored_name") control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action setb(bit<8> v) { hd.h.b = v; }
    table t { key = { hd.h.a: exact; } actions = { setb; NoAction; } }
    apply { sm.egress_spec = 1; t.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
Ing() ingress_instance;
V1Switch(P(), V(), ingress_instance, E(), C(), D()) main;
