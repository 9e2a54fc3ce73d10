// expect-error: 8:33: cannot assign bit<16> to bit<8> without a cast
// a function returning a value of another type than it declares (no implicit conversion)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct M { }
bit<8> f(in bit<16> v) { return v; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { hdr.h.a = f(1); } }
control VC(inout headers hdr, inout M meta) { apply { } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
