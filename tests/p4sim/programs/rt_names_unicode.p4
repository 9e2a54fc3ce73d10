// Unicode look-alikes are distinct names: `ax` and `aｘ` (fullwidth x), `b1` and `b１`
// (fullwidth digit). Python NFKC-normalises identifiers, so the generated code must not use them.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> ax; bit<8> aｘ; bit<8> b1; bit<8> b１; }
header hｘ_t { bit<8> v; }
struct headers { h_t h; hｘ_t h2; }
struct M { bit<8> ax; bit<8> aｘ; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.h2); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> tｖ = hdr.h.ax;
        bit<8> tv = hdr.h.aｘ;
        meta.ax = hdr.h.b1;
        meta.aｘ = hdr.h.b１;
        hdr.h.ax = tv;
        hdr.h.aｘ = tｖ;
        hdr.h.b1 = meta.aｘ;
        hdr.h.b１ = meta.ax;
        hdr.h2.v = hdr.h2.v + 1;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.h2); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
