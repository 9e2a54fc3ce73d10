/* Tables of the key layouts Write's fast path stores through the tables' pre-checked
 * entry points (tests/p4sim_runtime/test_p4rt_fastwrite.py): two exact keys with a
 * two-parameter action, a 1-bit exact key, exact + lpm (a VRF route), and optional +
 * lpm + ternary (tuple space search, with priorities), and a small one-key exact table
 * that a batch fills (the bulk commit's capacity check). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<4> vrf;
    bit<1> flag;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action forward(bit<9> port) {
        sm.egress_spec = port;
    }
    action set_both(bit<9> port, bit<16> group) {
        sm.egress_spec = port;
        sm.mcast_grp = group;
    }
    @defaultonly action fallback() {
        sm.egress_spec = 1;
    }
    action set_vrf(bit<4> vrf) {
        meta.vrf = vrf;
    }
    table pair {
        key = {
            hdr.ethernet.ether_type : exact;
            hdr.ethernet.src        : exact;
        }
        actions = { set_both; drop; fallback; }
        default_action = fallback();
        size = 64;
    }
    table flag {
        key = { meta.flag : exact; }
        actions = { set_vrf; NoAction; }
        default_action = NoAction();
        size = 4;
    }
    table vrf_route {
        key = {
            meta.vrf       : exact;
            hdr.ethernet.dst : lpm;
        }
        actions = { forward; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table small {
        key = { hdr.ethernet.dst : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 16;
    }
    table mixed {
        key = {
            sm.ingress_port         : optional;
            hdr.ethernet.dst        : lpm;
            hdr.ethernet.ether_type : ternary;
        }
        actions = { forward; set_both; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    apply {
        flag.apply();
        pair.apply();
        vrf_route.apply();
        mixed.apply();
        small.apply();
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
