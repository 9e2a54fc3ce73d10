// Types named after Python builtins and p4sim classes (header None, header int_, struct object, struct Stack, enum True_): generated class names are mangled
#include <core.p4>
#include <v1model.p4>
header None { bit<8> a; }
header Stack { bit<8> b; }
struct object { None n; Stack s; }
struct headers { object o; }
struct M { bit<8> m; }
enum bit<8> True_ { one = 1, two = 2 }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.o.n); pkt.extract(hdr.o.s); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        object copy = hdr.o;
        copy.n.a = copy.n.a + 1;
        if (copy.s.b == (bit<8>)True_.two) { copy.s.b = 0x22; }
        hdr.o = copy;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
