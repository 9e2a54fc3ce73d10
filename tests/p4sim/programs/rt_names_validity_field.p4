// A header field named `_v` is a field like any other: it does not alias the header's
// validity bit (p4sim used `_v` for validity: input 00 22 left as 01 22, or not at all)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> _v; bit<8> x; }
header g_t { bit<8> _v; }
struct headers { h_t h; g_t g; }
struct M { }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.x == 0x33) {
            hdr.g.setValid();      // validity set, the field `_v` still 0
        }
        if (hdr.h.x == 0x44) {
            hdr.h._v = 0;          // the field cleared, the header still valid
        }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.g); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
