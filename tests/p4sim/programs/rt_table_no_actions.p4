// A table with no actions: p4c gives it NoAction as its only (default) action; apply still hits or misses
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> o; }
struct headers { h_t h; }
struct M { bit<8> m; }

parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    table noact { key = { hdr.h.k: exact; } actions = { } }
    apply {
        sm.egress_spec = 1;
        if (noact.apply().hit) { hdr.h.o = 1; } else { hdr.h.o = 2; }
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
