// lookahead<T>() of a header type into a local header, then a select on its field; lookahead does not consume
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> o; }
header t_t { bit<4> kind; bit<4> len; }
struct headers { h_t h; t_t t; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        t_t peek = pkt.lookahead<t_t>();
        transition select(peek.kind) { 0xA: with_t; default: plain; }
    }
    state with_t { pkt.extract(hdr.t); pkt.extract(hdr.h); hdr.h.o = (bit<8>)hdr.t.len; transition accept; }
    state plain { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;

    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
