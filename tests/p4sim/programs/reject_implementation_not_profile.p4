// expect-error: 20:26: implementation = must name or construct an action_profile
// a table's implementation is an action_profile or action_selector, not a counter
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> f; }
struct H { h_t h; }
struct M { }

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action a(bit<8> v) { hdr.h.f = v; }
    counter(32w4, CounterType.packets) c;
    table t {
        key = { hdr.h.k : exact; }
        actions = { a; }
        implementation = c;
    }
    apply { t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
