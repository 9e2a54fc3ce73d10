// error members, enum members and serializable-enum members named after Python keywords and builtins (None, True, class, lambda, int_, copy)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct M { bit<8> m; }
error { lambda, None }
enum K { None, True, int_ }
enum bit<8> V { class = 3, copy = 4 }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.a != 0xFF, error.lambda);
        transition accept;
    }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        K k = K.None;
        if (hdr.h.b == 1) { k = K.True; }
        if (k == K.True) { hdr.h.c = (bit<8>)V.class; } else { hdr.h.c = (bit<8>)V.copy; }
        if (sm.parser_error == error.lambda) { hdr.h.d = 0xEE; }
        if (sm.parser_error == error.None) { hdr.h.d = 0xDD; }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
