// lookahead<T>() of a header type past the end of the packet is PacketTooShort (nothing consumed before it stays extracted)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header w_t { bit<32> w; }
struct headers { h_t h; w_t w; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); w_t peek = pkt.lookahead<w_t>(); hdr.h.b = peek.w[7:0]; transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.PacketTooShort) { hdr.h.a = 0xEE; }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
