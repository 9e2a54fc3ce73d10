// expect-error: 17:27: invalid mask for LPM key
// a const entry's mask on an lpm key must be a contiguous prefix: p4c refuses 0xF0F0 on a 16-bit key
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> k; bit<8> o; }
struct headers { h_t h; }
struct M { bit<8> m; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.o = v; }
    table t {
        key = { hdr.h.k: lpm; }
        actions = { set; }
        const entries = { 0x1010 &&& 0xF0F0: set(1); }
    }
    apply { t.apply(); }
}
control E_(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E_(), CC(), D()) main;
