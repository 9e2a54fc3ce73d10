// Regression (commit 64aa1ae): inlined extract/emit of headers of several types, among
// them types named H and x_H, whose generated names contain `_H` (NameError '_S_H_xh3')
#include <core.p4>
#include <v1model.p4>

header H { bit<8> a; }
header G { bit<4> hi; bit<4> lo; bit<16> w; }
header x_H { bit<1> f; bit<7> g; }
header H_ { bit<32> d; }
struct headers { H h; G g; x_H x; H_ d; }
struct M { }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.g);
        transition select(hdr.g.lo) { 1: more; default: accept; }
    }
    state more { pkt.extract(hdr.x); pkt.extract(hdr.d); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.a = hdr.h.a + 1;
        if (hdr.x.isValid()) {
            hdr.x.f = ~hdr.x.f;
            hdr.d.d = hdr.d.d + (bit<32>)hdr.g.w;
        }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.g); pkt.emit(hdr.x); pkt.emit(hdr.d); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
