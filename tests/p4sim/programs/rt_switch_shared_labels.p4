// switch on a value with several labels sharing one body, and on action_run with a default
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
    action seta() { hdr.h.d = 1; }
    table t { key = { hdr.h.a: exact; } actions = { seta; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        switch (hdr.h.a) {
            1:
            2: { hdr.h.b = 0x12; }
            3: { hdr.h.b = 0x03; }
            default: { hdr.h.b = 0xDD; }
        }
        switch (t.apply().action_run) {
            seta: { hdr.h.c = 0xAA; }
            default: { hdr.h.c = 0xFF; }
        }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
