// typedef of a typedef, and a typedef used as a header field and a key
#include <core.p4>
#include <v1model.p4>
typedef bit<8> byte_t;
typedef byte_t octet_t;
header h_t { octet_t a; byte_t b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action setc(octet_t v) { hd.h.c = v; }
    table t { key = { hd.h.a: exact; } actions = { setc; } }
    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {  }
}
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
