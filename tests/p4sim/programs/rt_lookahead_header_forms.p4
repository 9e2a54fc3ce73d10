// lookahead<T>() of a header type assigned straight to a header (it arrives valid) and used
// in a select expression; lookahead consumes nothing
#include <core.p4>
#include <v1model.p4>
header h_t { bit<4> k; bit<4> l; bit<8> o; }
header v_t { bit<8> n; varbit<16> x; }
struct headers { h_t h; h_t peek; }
struct M { }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        hdr.peek = pkt.lookahead<h_t>();
        transition select(pkt.lookahead<h_t>().k) { 1: one; default: accept; }
    }
    state one { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
