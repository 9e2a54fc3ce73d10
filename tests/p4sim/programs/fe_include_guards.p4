// #ifdef _CORE_P4_ / _V1_MODEL_P4_: the include guards p4c's headers define
#include <core.p4>
#include <v1model.p4>
#ifdef _CORE_P4_
#define SAW_CORE 1
#else
#define SAW_CORE 0
#endif
#if defined(_V1_MODEL_P4_) && defined(V1MODEL_VERSION)
#define SAW_V1 2
#else
#define SAW_V1 0
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
        hd.h.a = SAW_CORE;
        hd.h.b = SAW_V1;
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {  }
}
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
