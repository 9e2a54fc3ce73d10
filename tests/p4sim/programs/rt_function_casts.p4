// Casts in function returns and arguments: narrowing, widening a signed value, bool to bit, an enum to its bit type
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct M { bit<8> m; }
enum bit<8> Col { a = 7, b = 9 }
bit<8> lo(in bit<16> v) { return (bit<8>)v; }
bit<16> ext(in int<4> v) { return (bit<16>)(int<16>)v; }
bit<1> flag(in bool x) { return (bit<1>)x; }
Col col(in bit<8> v) { if (v == 1) { return Col.a; } return Col.b; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hdr.h.b = lo(hdr.h.a ++ hdr.h.b);
        hdr.h.c = (bit<8>)(ext((int<4>)hdr.h.c[3:0]) >> 8);
        hdr.h.d = (bit<8>)flag(hdr.h.d == 0) + (bit<8>)col(hdr.h.d);
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
