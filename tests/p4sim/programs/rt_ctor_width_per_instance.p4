// Two instances of one control whose local variable is bit<W>, W a constructor parameter:
// each instance has its own width (bit<2> and bit<4>): 0 - 1 is 3 in one and 15 in the other.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control Sub(inout headers_t hdr)(bit<32> W) {
    apply { bit<W> t = 0; t = t - 1; hdr.h.b = hdr.h.b + (bit<8>)t; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control IG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub(2) s2;
    Sub(4) s4;
    apply { sm.egress_spec = 1; s2.apply(hdr); s4.apply(hdr); }
}
control EG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control DP(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), IG(), EG(), CC(), DP()) main;
