// Every standard_metadata field egress sees, written into the packet: the switch's fast
// path (an idle traffic manager) against its queued path (tests/p4sim_runtime/test_switch_fastpath.py).
// The ethernet destination is the packet's instructions, low bits first:
//   [8:0] egress_spec, [11:9] priority, [19:12] mcast_grp, [20] I2E clone (session 5),
//   [21] E2E clone (session 6), [22] recirculate once, [23] resubmit once, [24] truncate to 40 B,
//   [25] drop in egress.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header echo_t {
    bit<48> ig_ts; bit<48> eg_ts; bit<32> enq_ts; bit<32> enq_qdepth; bit<32> deq_td;
    bit<32> deq_qdepth; bit<16> eport; bit<16> ingress_port; bit<32> itype; bit<32> plen;
    bit<16> rid; bit<8> prio; bit<8> passes; bit<16> mcast_grp; bit<16> cksum_err;
    bit<16> espec;
}
struct headers_t { eth_t eth; echo_t echo; }
struct meta_t { @field_list(1) bit<8> passes; bit<32> seen; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(1) count;
    apply {
        bit<48> d = hdr.eth.dst;
        sm.egress_spec = d[8:0];
        sm.priority = d[11:9];
        sm.mcast_grp = (bit<16>)d[19:12];
        // values ingress leaves in egress-only fields: egress must see the TM's own
        sm.enq_timestamp = 11; sm.enq_qdepth = 12; sm.deq_timedelta = 13; sm.deq_qdepth = 14;
        sm.egress_global_timestamp = 15; sm.egress_port = 16;
        bit<32> c;
        count.read(c, 0);
        count.write(0, c + 1);
        meta.seen = c;
        if (d[20:20] == 1 && sm.instance_type == 0) { clone(CloneType.I2E, 5); }
        if (d[23:23] == 1 && meta.passes == 0) {
            meta.passes = 1;
            resubmit_preserving_field_list(1);
        }
        if (d[24:24] == 1) { truncate(40); }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.echo.setValid();
        hdr.echo.ig_ts = sm.ingress_global_timestamp;
        hdr.echo.eg_ts = sm.egress_global_timestamp;
        hdr.echo.enq_ts = sm.enq_timestamp;
        hdr.echo.enq_qdepth = (bit<32>)sm.enq_qdepth;
        hdr.echo.deq_td = sm.deq_timedelta;
        hdr.echo.deq_qdepth = (bit<32>)sm.deq_qdepth;
        hdr.echo.eport = (bit<16>)sm.egress_port;
        hdr.echo.ingress_port = (bit<16>)sm.ingress_port;
        hdr.echo.itype = sm.instance_type;
        hdr.echo.plen = sm.packet_length;
        hdr.echo.rid = sm.egress_rid;
        hdr.echo.prio = (bit<8>)sm.priority;
        hdr.echo.passes = meta.passes;
        hdr.echo.mcast_grp = sm.mcast_grp;
        hdr.echo.cksum_err = (bit<16>)sm.checksum_error;
        hdr.echo.espec = (bit<16>)sm.egress_spec;
        hdr.eth.src = (bit<48>)meta.seen;
        bit<48> d = hdr.eth.dst;
        if (d[21:21] == 1 && sm.instance_type == 0) { clone_preserving_field_list(CloneType.E2E, 6, 1); }
        if (d[22:22] == 1 && meta.passes == 0) {
            meta.passes = 1;
            hdr.eth.dst[22:22] = 0;
            hdr.echo.setInvalid();
            recirculate_preserving_field_list(1);
        }
        if (d[25:25] == 1) { mark_to_drop(sm); }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.echo); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
