// Action and table parameter names equal to the generated table-apply locals (r, aid, hit, args, default, self): mangled, so the control-plane arguments still arrive
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
    action set(bit<8> args, bit<8> aid, bit<8> self) { hdr.h.b = args; hdr.h.c = aid; hdr.h.d = self; }
    table t { key = { hdr.h.a: exact; } actions = { set; } default_action = set(0x0D, 0x0E, 0x0F); }
    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
