// assigning `{ q = 9, ... }` resets the fields not written (it is a whole new value)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
struct s_t { bit<8> p; bit<8> q; }
parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        s_t s = { p = 5, q = 6 };
        s = { q = 9, ... };
        hd.h.a = s.p;
        hd.h.b = s.q;
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {  }
}
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
