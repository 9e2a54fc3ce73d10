// Functions returning a header and a struct (a list expression typed by the return type),
// an action copying a header to an out parameter, a cast in a function return
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct pair_t { bit<8> x; bit<8> y; }
struct headers { h_t h; h_t g; }
struct M { pair_t p; }
h_t swap(in h_t h) { h_t r = h; r.a = h.b; r.b = h.a; return r; }
pair_t mk(bit<8> x) { return { x, x + 1 }; }
pair_t mk2(bit<8> x) { pair_t p = {x = x, y = 3}; return p; }
bit<16> widen(bit<8> x) { return (bit<16>)x << 4; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action cp(out h_t o) { o = hdr.h; o.a = 9; }
    apply {
        sm.egress_spec = 1;
        hdr.g = swap(hdr.h);
        meta.p = mk(hdr.h.a);
        pair_t q = mk2(hdr.h.b);
        h_t t;
        cp(t);
        hdr.h.a = meta.p.y + q.y + t.a;
        hdr.h.b = (bit<8>)(widen(hdr.h.b) >> 8);
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.g); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
