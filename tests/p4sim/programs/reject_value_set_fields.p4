// expect-error: 18:13: value set pair_vs holds
// a struct value set matches one select key per field: two fields against one key
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
struct pair_t { bit<8> a; bit<8> b; }

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    value_set<pair_t>(4) pair_vs;
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.a) {
            0: accept;
            8w1 &&& 8w1: accept;
            pair_vs: accept;
            default: reject;
        }
    }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
