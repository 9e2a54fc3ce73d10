// tests/p4sim/test_compiled_views.py: every per-packet read the compiled views bind
// (p4sim.compiled.views): a counter, a register, a single-key exact table, a single-key
// lpm table (lookup1), a two-key exact table (exact_get) and a keyless table (default only)
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t { bit<8> k; bit<32> addr; bit<8> tag; bit<32> seen; bit<8> cls; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter<bit<32>>(8, CounterType.packets_and_bytes) seen_by_k;
    register<bit<32>, bit<32>>(8) visits;

    action set_port(bit<9> p) { sm.egress_spec = p; }
    action set_tag(bit<8> t) { hdr.h.tag = t; }
    action set_cls(bit<8> c) { hdr.h.cls = c; }
    action stop() { mark_to_drop(sm); }

    table by_k { key = { hdr.h.k: exact; } actions = { set_port; stop; } default_action = stop(); }
    table route { key = { hdr.h.addr: lpm; } actions = { set_tag; NoAction; } default_action = NoAction(); }
    table pair { key = { hdr.h.k: exact; hdr.h.tag: exact; } actions = { set_cls; NoAction; }
                 default_action = NoAction(); }
    table fixed { actions = { set_cls; NoAction; } default_action = NoAction(); }

    apply {
        by_k.apply();
        route.apply();
        pair.apply();
        if (hdr.h.cls == 0) { fixed.apply(); }
        bit<32> i = (bit<32>)hdr.h.k & 7;
        seen_by_k.count(i);
        bit<32> v;
        visits.read(v, i);
        visits.write(i, v + 1);
        hdr.h.seen = v;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
