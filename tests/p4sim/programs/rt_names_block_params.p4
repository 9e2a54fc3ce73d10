// Parameters of sub-controls and sub-parsers named after the generated code's own names (buf, off, hdr, meta, sm, _out): mangled per instance
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct M { bit<8> m; }
control Inner(in bit<8> buf, inout bit<8> off) { apply { off = buf + off; } }
parser Sub(packet_in p, out bit<8> buf, out bit<8> off) { state start { buf = 0x0C; off = 0x0D; transition accept; } }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start { pkt.extract(hdr.h); sub.apply(pkt, hdr.h.c, hdr.h.d); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    Inner() inner;
    apply {
        sm.egress_spec = 1;
        inner.apply(hdr.h.a, hdr.h.b);
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
