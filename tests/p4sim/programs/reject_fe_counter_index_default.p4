// expect-error: 16:5: Type counter has 0 type parameter(s), but it is specialized with 1
/* Under v1model's default version (20180101, as in p4c's v1model.p4) counter has no index
 * type parameter: `counter<bit<32>>` is refused at the specialised type, as p4c refuses it.
 * The same declaration compiles after `#define V1MODEL_VERSION 20200408` (fe_counter_index_2020). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control I(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    counter<bit<32>>(4, CounterType.packets) c;
    apply { c.count(0); sm.egress_spec = 1; }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
