// const entries of an lpm table with a wildcard `_`: p4c makes it prefix length 0 (a /0 entry),
// which matches every key and loses to any longer prefix; listed first, it must not shadow them.
// A mask of 0 is the same /0 (lpm2_t); a mask must be a prefix (reject_entry_lpm_mask_not_prefix)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> o; bit<8> o2; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.o = v; }
    table lpm_t {
        key = { hdr.h.k: lpm; }
        actions = { set; }
        const entries = { _: set(0x77); 0x40 &&& 0xC0: set(1); 0x4C: set(2); }
        default_action = set(0xDD);
    }
    action set2(bit<8> v) { hdr.h.o2 = v; }
    table lpm2_t {
        key = { hdr.h.k: lpm; }
        actions = { set2; }
        const entries = { 0x00 &&& 0x00: set2(0x55); 0x80 &&& 0x80: set2(0x66); }
        default_action = set2(0xEE);
    }
    apply {
        sm.egress_spec = 1;
        lpm_t.apply();
        lpm2_t.apply();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
