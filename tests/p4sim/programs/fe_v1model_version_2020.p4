// #define V1MODEL_VERSION 20200408 before the #include selects the index-typed externs and PortId_t
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    counter<bit<8>>(4, CounterType.packets) cnt;
    register<bit<8>, bit<2>>(4) reg;
    apply {
        sm.egress_spec = 1;
        hd.h.a = (bit<8>)(__v1model_version - 32w20200000);
        PortId_t p = sm.ingress_port;
        hd.h.b = (p == 0) ? 8w1 : 8w2;
        cnt.count(8w3);
        reg.write(2w1, 8w7);
        reg.read(hd.h.c, 2w1);
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {

    apply {  }
}
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
