// const entries on keys of a serializable enum type (enum bit<8>): as in p4c (TypeInference
// typeSet and Entry), a keyset may be written in the enum's underlying bit<8>, an enum member
// may be masked with a bit<8>, and a range may mix both; all compare as plain 8-bit values
#include <core.p4>
#include <v1model.p4>
enum bit<8> E { A = 0x15, B = 0x22, C = 0x33, D = 0x4F }
header h_t { E k; E r; bit<8> o1; bit<8> o2; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action set1(bit<8> v) { hdr.h.o1 = v; }
    action set2(bit<8> v) { hdr.h.o2 = v; }
    table tern_t {
        key = { hdr.h.k: ternary; }
        actions = { set1; }
        const entries = {
            ((bit<8>)E.A) &&& 0xF0: set1(1);
            E.B: set1(2);
            E.C &&& (bit<8>)0xFF: set1(3);
            (bit<8>)0x60: set1(4);
        }
        default_action = set1(0xDD);
    }
    table range_t {
        key = { hdr.h.r: range; }
        actions = { set2; }
        const entries = { (bit<8>)0x40 .. E.D: set2(5); }
        default_action = set2(0xEE);
    }
    apply {
        sm.egress_spec = 1;
        tern_t.apply();
        range_t.apply();
    }
}
control E_(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E_(), CC(), D()) main;
