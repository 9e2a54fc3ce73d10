// named arguments on extern methods and extern functions (P4_16 spec 8.21; p4c CheckNamedArgs): register read/write, counter count, hash, mark_to_drop, the two log_msg overloads
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
    register<bit<8>, bit<32>>(4) r;
    counter<bit<32>>(4, CounterType.packets) cnt;
    apply {
        sm.egress_spec = 1;
        r.write(value = hd.h.a, index = 2);
        r.read(index = 2, result = hd.h.b);
        cnt.count(index = 1);
        hash(max = 16w0, data = { hd.h.a }, base = 8w0, algo = HashAlgorithm.identity, result = hd.h.c);
        log_msg(msg = "a={}", data = { hd.h.a });
        log_msg(msg = "plain");
        if (hd.h.d == 0xff) {
            mark_to_drop(standard_metadata = sm);
        }
    }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
