// Indirect tables for the action-profile tests: `sel` (an action_selector hashing two
// selector keys with crc16), `ap` (an action_profile shared by t_a and t_b) and an
// action_profile constructed in place on t_c.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> r; bit<16> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<8> r) { sm.egress_spec = port; hdr.h.r = r; }
    action mark(bit<8> r) { hdr.h.r = r; sm.egress_spec = 4; }
    @max_group_size(4) action_selector(HashAlgorithm.crc16, 32w8, 32w16) sel;
    action_profile(32w4) ap;
    table t_sel {
        key = { hdr.h.k : exact; hdr.h.c : selector; hdr.h.d : selector; }
        actions = { fwd; mark; }
        implementation = sel;
        default_action = mark(8w0xee);
    }
    table t_a {
        key = { hdr.h.k : exact; }
        actions = { fwd; mark; }
        implementation = ap;
    }
    table t_b {
        key = { hdr.h.c : exact; }
        actions = { mark; fwd; }
        implementation = ap;
    }
    table t_c {
        key = { hdr.h.d : exact; }
        actions = { mark; }
        @name("inplace") implementation = action_profile(32w2);
    }
    apply {
        sm.egress_spec = 2;  // where a packet goes when no action sets its port
        if (hdr.h.k == 0) {
            t_c.apply();
        } else if (hdr.h.k < 0x80) {
            t_sel.apply();
        } else if (hdr.h.k < 0xc0) {
            t_a.apply();
        } else {
            t_b.apply();
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
