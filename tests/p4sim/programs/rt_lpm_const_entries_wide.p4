// const entries of a 32-bit lpm table (IPv4-style prefixes, a /0 default written as a mask 0), next to a ternary key in another table
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> dst; bit<8> o; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.o = v; }
    table route {
        key = { hdr.h.dst: lpm; }
        actions = { set; }
        const entries = {
            0 &&& 0: set(9);
            0x0A010000 &&& 0xFFFF0000: set(1);
            0x0A010280 &&& 0xFFFFFF80: set(3);
            0x0A010200 &&& 0xFFFFFF00: set(2);
        }
    }
    apply {
        sm.egress_spec = 1;
        route.apply();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
