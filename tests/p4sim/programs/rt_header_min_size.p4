// minSizeInBits() and minSizeInBytes() of headers (a varbit header counts its fixed part)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header v_t { bit<4> x; bit<4> y; varbit<32> z; }
struct headers { h_t h; v_t v; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        hdr.h.a = (bit<8>)hdr.h.minSizeInBits();
        hdr.h.b = (bit<8>)hdr.h.minSizeInBytes();
        hdr.h.c = (bit<8>)hdr.v.minSizeInBits();
        hdr.h.d = (bit<8>)hdr.v.minSizeInBytes();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
