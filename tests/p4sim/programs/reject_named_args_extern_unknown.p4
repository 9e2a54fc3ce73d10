// expect-error: 14:28: register.write has no parameter 'val'
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>, bit<32>>(4) r;
    apply {
        r.write(index = 2, val = hd.h.a);
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
