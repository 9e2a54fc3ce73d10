// expect-error: 19:27: a constructor call as a constructor argument
// A constructor call as a constructor argument of a package argument (outside any control, where p4c's MoveConstructors leaves it) is refused at load, by name, with its location; inside a control or parser it works (rt_ctor_call_arg)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct headers { h_t h; }
struct M { }
control Inner(inout headers hdr) { apply { hdr.h.k = 1; } }
control Outer(inout headers hdr, inout M meta, inout standard_metadata_t sm)(Inner c) {
    apply { c.apply(hdr); }
}
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Outer(Inner()), E(), CC(), D()) main;
