/* rocelab switch: L2 and L3 forwarding, ECMP and per-packet spray. */
#ifndef ROCE_FORWARDING_P4
#define ROCE_FORWARDING_P4

/* round-robin position per ECMP group, for sprayed QPs */
register<bit<32>, bit<32>>(ECMP_GROUPS) spray_rr;

control Forwarding(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* ---- L2 */
    action set_router_mac() {
        meta.is_router_mac = 1;
    }

    table router_mac {
        key = { hdr.ethernet.dst: exact; }
        actions = { set_router_mac; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    action l2_forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action l2_flood(bit<16> mcast_grp) {
        standard_metadata.mcast_grp = mcast_grp;
    }

    action l2_miss() {
        meta.drop_reason = DROP_L2_MISS;
        mark_to_drop(standard_metadata);
    }

    table l2_fwd {
        key = { hdr.ethernet.dst: exact; }
        actions = { l2_forward; l2_flood; l2_miss; }
        default_action = l2_miss();
        size = 4096;
    }

    /* ---- L3 */
    action no_route() {
        meta.drop_reason = DROP_NO_ROUTE;
        mark_to_drop(standard_metadata);
    }

    action set_nhop(bit<16> nhop_id) {
        meta.route_hit = 1;
        meta.nhop_id = nhop_id;
    }

    action set_ecmp(bit<16> group, bit<16> size) {
        meta.route_hit = 1;
        meta.is_ecmp = 1;
        meta.ecmp_group = group;
        meta.ecmp_size = size;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst: lpm; }
        actions = { set_nhop; set_ecmp; no_route; }
        default_action = no_route();
        size = 4096;
    }

    table ipv6_lpm {
        key = { hdr.ipv6.dst: lpm; }
        actions = { set_nhop; set_ecmp; no_route; }
        default_action = no_route();
        size = 4096;
    }

    /* QPs the controller marks WRITE-only: spray their packets over the ECMP group */
    action spray() {
        meta.spray = 1;
    }

    table spray_qp {
        key = {
            meta.ip_dst: exact;
            hdr.bth.dqpn: exact;
        }
        actions = { spray; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    table ecmp_member {
        key = {
            meta.ecmp_group: exact;
            meta.ecmp_member: exact;
        }
        actions = { set_nhop; no_route; }
        default_action = no_route();
        size = 4096;
    }

    action set_nexthop(bit<9> port, mac_addr_t smac, mac_addr_t dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src = smac;
        hdr.ethernet.dst = dmac;
    }

    table nexthop {
        key = { meta.nhop_id: exact; }
        actions = { set_nexthop; no_route; }
        default_action = no_route();
        size = 1024;
    }

    apply {
        router_mac.apply();
        if (meta.is_router_mac == 0) {
            /* L2: every frame, RoCEv1 included, is bridged on its destination MAC */
            l2_fwd.apply();
        } else if (hdr.grh.isValid()) {
            /* RoCEv1 is link-local: the L3 path never routes it */
            meta.drop_reason = DROP_ROCEV1_L3;
            mark_to_drop(standard_metadata);
        } else if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ttl <= 1) {
                meta.drop_reason = DROP_TTL;
                mark_to_drop(standard_metadata);
            } else {
                ipv4_lpm.apply();
            }
        } else if (hdr.ipv6.isValid()) {
            if (hdr.ipv6.hop_limit <= 1) {
                meta.drop_reason = DROP_TTL;
                mark_to_drop(standard_metadata);
            } else {
                ipv6_lpm.apply();
            }
        } else {
            /* neither IP nor bridged: nothing to route */
            meta.drop_reason = DROP_NO_ROUTE;
            mark_to_drop(standard_metadata);
        }

        if (meta.route_hit == 1) {
            if (meta.is_ecmp == 1 && meta.ecmp_size == 0) {
                /* an empty group cannot forward (and hash() must not divide by 0) */
                meta.drop_reason = DROP_NO_ROUTE;
                mark_to_drop(standard_metadata);
            } else if (meta.is_ecmp == 1) {
                if (hdr.bth.isValid()) {
                    spray_qp.apply();
                }
                if (meta.spray == 1) {
                    bit<32> rr;
                    spray_rr.read(rr, (bit<32>)meta.ecmp_group);
                    spray_rr.write((bit<32>)meta.ecmp_group, rr + 1);
                    hash(meta.ecmp_member, HashAlgorithm.identity, 16w0, { rr }, meta.ecmp_size);
                } else {
                    /* 5-tuple; the RoCEv2 UDP source port carries the QP's entropy */
                    hash(meta.ecmp_member, HashAlgorithm.crc16, 16w0,
                         { meta.ip_src, meta.ip_dst, meta.ip_proto, meta.l4_sport, meta.l4_dport },
                         meta.ecmp_size);
                }
                ecmp_member.apply();
            }
            if (meta.drop_reason == DROP_NONE) {
                nexthop.apply();
            }
            if (meta.drop_reason == DROP_NONE) {
                if (hdr.ipv4.isValid()) {
                    hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                } else {
                    hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
                }
            }
        }
    }
}

#endif
