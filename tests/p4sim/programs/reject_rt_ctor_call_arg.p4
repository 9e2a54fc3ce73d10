// expect-error: 14:11: a constructor call as a constructor argument
// A constructor call as a constructor argument is refused at load, by name, with its location
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct headers { h_t h; }
struct M { }
control Inner(inout headers hdr) { apply { hdr.h.k = 1; } }
control Outer(inout headers hdr)(Inner c) { apply { c.apply(hdr); } }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    Outer(Inner()) o;
    apply { o.apply(hdr); }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
