// expect-error: 10:20: lookahead needs a fixed-width type
// lookahead<T>() of a header with a varbit field: T must have a fixed width (P4_16 spec)
#include <core.p4>
#include <v1model.p4>
header v_t { bit<8> n; varbit<16> x; }
struct headers { v_t v; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        v_t peek = pkt.lookahead<v_t>();
        transition accept;
    }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
