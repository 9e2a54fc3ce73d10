// action_selector as a table implementation: a group of members chosen by a crc16 hash of
// the two `selector` keys (BMv2: member hash % group size, members in handle order)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<12> f; bit<4> g; bit<8> o; }
struct H { h_t h; }
struct M { }

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set_out(bit<8> v, bit<9> port) { hdr.h.o = v; sm.egress_spec = port; }
    action miss() { hdr.h.o = 0xee; sm.egress_spec = 9; }
    action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel;
    table t {
        key = { hdr.h.k : exact; hdr.h.f : selector; hdr.h.g : selector; }
        actions = { set_out; miss; }
        implementation = sel;
        default_action = miss();
    }
    apply { t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
