// switch on table.apply().action_run, with a default label
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> x; bit<8> r; }
struct headers_t { h_t h; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {

    action a1() { hdr.h.x = 1; }
    action a2(bit<8> v) { hdr.h.x = v; }
    table t {
        key = { hdr.h.k: exact; }
        actions = { a1; a2; NoAction; }
        default_action = NoAction();
    }
    apply {
        switch (t.apply().action_run) {
            a1: { hdr.h.r = 0x11; }
            a2: { hdr.h.r = 0x22; }
            default: { hdr.h.r = 0xDD; }
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {

        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
