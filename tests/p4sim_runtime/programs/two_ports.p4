/* Two egress ports: a frame goes out of the port in EtherType bits 7:4, in the priority in
 * bits 2:0 (incast.p4 otherwise: egress writes the queueing metadata into the source MAC,
 * enq_qdepth in the high 24 bits, deq_qdepth in the low 24; frames from port 3 dropped). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 3) {
            mark_to_drop(sm);
        } else {
            sm.egress_spec = (bit<9>)hdr.ethernet.ether_type[7:4];
            sm.priority = hdr.ethernet.ether_type[2:0];
        }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.ethernet.src = ((bit<48>)sm.enq_qdepth << 24) | (bit<48>)sm.deq_qdepth;
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
