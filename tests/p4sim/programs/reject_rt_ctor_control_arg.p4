// expect-error: 9:1: unsupported by p4sim: control constructor parameters
// A control instance passed to another control as a constructor argument: refused at load, by name
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> o; }
struct headers { h_t h; }
struct M { bit<8> m; }
control Inner(inout headers hdr) { apply { hdr.h.o = 1; } }
control Outer(inout headers hdr)(Inner c) { apply { c.apply(hdr); } }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    Inner() i0;
    Outer(i0) inner;
    apply {
        sm.egress_spec = 1;
        inner.apply(hdr);
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
