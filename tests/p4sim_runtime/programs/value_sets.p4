// parser value sets the P4Runtime tests write: exact (bit<8>), ternary and lpm (one-field
// structs with @match), a two-field one over the pair (k, r) (exact k, ternary r), and a
// range one (declared, unused: p4sim refuses range members, BMv2 matches value/mask)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }
struct tern_t { @match(ternary) bit<8> k; }
struct lpm_t { @match(lpm) bit<8> k; }
struct pair_t { bit<8> a; @match(ternary) bit<8> b; }
struct rng_t { @match(range) bit<8> k; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<8>>(2) exact_vs;
    value_set<tern_t>(4) tern_vs;
    value_set<lpm_t>(4) lpm_vs;
    value_set<pair_t>(2) pair_vs;
    value_set<rng_t>(1) rng_vs;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k, hdr.h.r) {
            pair_vs: s5;
            default: s0;
        }
    }
    state s0 {
        transition select(hdr.h.k) {
            exact_vs: s1;
            tern_vs: s2;
            lpm_vs: s3;
            default: s4;
        }
    }
    state s1 { hdr.h.r = 1; transition accept; }
    state s2 { hdr.h.r = 2; transition accept; }
    state s3 { hdr.h.r = 3; transition accept; }
    state s4 { hdr.h.r = 4; transition accept; }
    state s5 { hdr.h.r = 5; transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { sm.egress_spec = 2; } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
