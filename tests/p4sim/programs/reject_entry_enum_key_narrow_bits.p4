// expect-error: 20:13: expected E, got bit<4>
// an enum bit<8> key takes its underlying bit<8> in a keyset (p4c typeSet/Entry), not another width
#include <core.p4>
#include <v1model.p4>
enum bit<8> E { A = 0x15, B = 0x22 }
enum bit<8> F { X = 0x15 }
header h_t { E k; bit<8> o; }
struct headers { h_t h; }
struct M { bit<8> m; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.o = v; }
    table t {
        key = { hdr.h.k: ternary; }
        actions = { set; }
        const entries = {
            (bit<4>)1 &&& 0xF: set(1);
        }
    }
    apply { t.apply(); }
}
control E_(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E_(), CC(), D()) main;
