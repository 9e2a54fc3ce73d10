// STF `add` that leaves keys out: an omitted lpm key is a /0 entry (BMv2 LPMMatchUnit, prefix
// length 0); an omitted ternary/optional key is mask 0, an omitted range key the full range
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> t; bit<8> o; bit<8> r; bit<8> out1; bit<8> out2; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action set1(bit<8> v) { hdr.h.out1 = v; }
    action set2(bit<8> v) { hdr.h.out2 = v; }
    table lpm_t {
        key = { hdr.h.k: lpm; }
        actions = { set1; }
        default_action = set1(0xDD);
    }
    table mix_t {
        key = { hdr.h.t: ternary; hdr.h.o: optional; hdr.h.r: range; }
        actions = { set2; }
        default_action = set2(0xEE);
    }
    apply {
        sm.egress_spec = 1;
        lpm_t.apply();
        mix_t.apply();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
