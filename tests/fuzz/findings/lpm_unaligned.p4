// p4c + BMv2 bug found by tests/fuzz: an lpm key whose width is not a multiple of 8.
// The const entry is prefix 1 of a 5-bit field (k = 1xxxx). p4c 1.2.5.16 writes
// "prefix_length": 1 into the BMv2 JSON; BMv2 counts it from the top of the key's padded
// byte (bm_sim match_units.cpp, create_mask_from_pref_len), where the 3 pad bits are 0 in
// both the entry and the key: every packet matches. P4 (and p4sim): only k >= 16 matches.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header h_t { bit<5> k; bit<3> pad; }
struct headers_t { eth_t eth; h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action hit() { sm.egress_spec = 1; }
    action miss() { sm.egress_spec = 2; }
    table t {
        key = { hdr.h.k: lpm; }
        actions = { hit; miss; }
        default_action = miss();
        const entries = { 5w0x10 &&& 5w0x10 : hit(); }
    }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
