// const entries of a ternary table: without priorities the first entry listed wins (BMv2 gets the entries in order); a range table's entries
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action setb(bit<8> v) { hdr.h.b = v; }
    action setc(bit<8> v) { hdr.h.c = v; }
    table tern {
        key = { hdr.h.a: ternary; }
        actions = { setb; NoAction; }
        const entries = { 0x10 &&& 0xF0: setb(1); 0x12 &&& 0xFF: setb(2); 0x20 &&& 0xF0: setb(3); }
        default_action = NoAction();
    }
    table rng {
        key = { hdr.h.d: range; }
        actions = { setc; NoAction; }
        const entries = { 0 .. 9: setc(1); 10 .. 19: setc(2); }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        tern.apply();
        rng.apply();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
