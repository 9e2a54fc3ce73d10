// a fragment guarded by #ifndef _V1_MODEL_P4_ (as programs written for several architectures do) is skipped
#include <core.p4>
#include <v1model.p4>
#ifndef _V1_MODEL_P4_
#error this fragment needs v1model
#endif
#ifdef _V1_MODEL_P4_
const bit<8> ANSWER = 42;
#else
const bit<8> ANSWER = 0;
#endif
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hd.h.b = ANSWER;
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {  }
}
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
