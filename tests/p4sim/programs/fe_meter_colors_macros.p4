// V1MODEL_METER_COLOR_GREEN/YELLOW/RED are 0/1/2 (v1model.p4's #defines)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hd.h.a = V1MODEL_METER_COLOR_GREEN;
        hd.h.b = V1MODEL_METER_COLOR_YELLOW;
        hd.h.c = V1MODEL_METER_COLOR_RED;
        hd.h.d = V1MODEL_METER_COLOR_RED + 1;
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {  }
}
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
