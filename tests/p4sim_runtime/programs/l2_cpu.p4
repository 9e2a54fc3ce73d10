/* A small v1model program for the P4Runtime server tests: L2 forwarding with a direct
 * counter, an indirect per-port counter, a register, a meter, a direct meter, packet_in/packet_out
 * controller headers through CPU port 255, a MAC-learning digest, and tables with every
 * match kind (exact, lpm, ternary, range, optional). */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct learn_t {
    bit<48> src;
    bit<9>  port;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
}

struct metadata_t {
    learn_t learn;
    bit<2>  color;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    counter(512, CounterType.packets_and_bytes) port_rx;
    direct_counter(CounterType.packets_and_bytes) l2_hits;
    register<bit<32>>(16) last_len;
    meter(16, MeterType.packets) port_meter;
    direct_meter<bit<2>>(MeterType.packets) acl_meter;

    action drop() {
        mark_to_drop(sm);
    }
    action forward(bit<9> port) {
        sm.egress_spec = port;
    }
    action to_cpu() {
        sm.egress_spec = CPU_PORT;
    }
    action flood(bit<16> group) {
        sm.mcast_grp = group;
    }
    action learn() {
        meta.learn.src = hdr.ethernet.src;
        meta.learn.port = sm.ingress_port;
        digest<learn_t>(1, meta.learn);
    }
    action acl_police() {
        acl_meter.read(meta.color);
    }
    action set_prio(bit<3> prio) {
        sm.priority = prio;
    }

    table l2_fwd {
        key = { hdr.ethernet.dst : exact; }
        actions = { forward; to_cpu; flood; drop; }
        default_action = drop();
        counters = l2_hits;
        size = 65536;
    }
    table smac {
        key = { hdr.ethernet.src : exact; }
        actions = { learn; NoAction; }
        default_action = learn();
    }
    table acl {
        key = {
            hdr.ethernet.ether_type : ternary;
            hdr.ethernet.src        : ternary;
        }
        actions = { drop; to_cpu; acl_police; NoAction; }
        default_action = NoAction();
        meters = acl_meter;
    }
    table classify {
        key = {
            hdr.ethernet.ether_type : range;
            sm.ingress_port         : optional;
        }
        actions = { set_prio; NoAction; }
        default_action = NoAction();
    }
    table dst_prefix {
        key = { hdr.ethernet.dst : lpm; }
        actions = { forward; NoAction; }
        default_action = NoAction();
    }

    apply {
        port_rx.count((bit<32>)sm.ingress_port);
        last_len.write((bit<32>)sm.ingress_port & 15, sm.packet_length);
        port_meter.execute_meter((bit<32>)sm.ingress_port & 15, meta.color);
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            smac.apply();
            if (!l2_fwd.apply().hit) {
                dst_prefix.apply();
            }
            acl.apply();
            classify.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in.pad = 0;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
