// constructor calls as constructor arguments: each becomes an instance of its own named as p4c's MoveConstructors names it (tmp, then tmp_0, ...), so the inner control's table is I.tmp.t and the register I.tmp_0
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> r; }
struct headers { h_t h; }
struct M { }
control Inner(inout headers hdr) {
    action set(bit<8> v) { hdr.h.r = v; }
    table t { key = { hdr.h.k: exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}
control Outer(inout headers hdr)(Inner c, register<bit<8>, bit<32>> last) {
    apply { c.apply(hdr); last.write(0, hdr.h.k); }
}
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    Outer(Inner(), register<bit<8>, bit<32>>(2)) o;
    apply { sm.egress_spec = 1; o.apply(hdr); }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
