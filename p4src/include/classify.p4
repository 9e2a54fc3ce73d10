/* rocelab switch: header-derived metadata and traffic-class classification. */
#ifndef ROCE_CLASSIFY_P4
#define ROCE_CLASSIFY_P4

/* Fill the L3/L4 summary the other stages key on (one place, all encapsulations). */
control DeriveFields(inout headers_t hdr, inout metadata_t meta) {
    apply {
        meta.orig_eth_src = hdr.ethernet.src;
        meta.orig_eth_dst = hdr.ethernet.dst;
        if (hdr.ipv4.isValid()) {
            meta.l3_valid = 1;
            meta.dscp = hdr.ipv4.dscp;
            meta.ip_src = (bit<128>)hdr.ipv4.src;
            meta.ip_dst = (bit<128>)hdr.ipv4.dst;
            meta.ip_proto = hdr.ipv4.protocol;
        } else if (hdr.ipv6.isValid()) {
            meta.l3_valid = 1;
            meta.dscp = hdr.ipv6.dscp;
            meta.ip_src = hdr.ipv6.src;
            meta.ip_dst = hdr.ipv6.dst;
            meta.ip_proto = hdr.ipv6.next_hdr;
        } else if (hdr.grh.isValid()) {
            /* RoCEv1: the GRH traffic class classifies like a DSCP (see README) */
            meta.dscp = hdr.grh.dscp;
            meta.ip_src = hdr.grh.sgid;
            meta.ip_dst = hdr.grh.dgid;
        }
        if (hdr.udp.isValid()) {
            meta.l4_sport = hdr.udp.sport;
            meta.l4_dport = hdr.udp.dport;
        }
        if (hdr.bth.isValid()) {
            meta.is_roce = 1;
            meta.bth_dqpn = hdr.bth.dqpn;
            if (hdr.grh.isValid()) {
                meta.roce_version = 1;
            } else {
                meta.roce_version = 2;
            }
            if (hdr.bth.opcode == BTH_OP_CNP) {
                meta.is_cnp = 1;
            }
        }
    }
}

/* DSCP (IPv4, IPv6, GRH traffic class) or 802.1Q PCP -> traffic class 0..7.
 * The DSCP table wins when it has an entry; otherwise the PCP table; otherwise class 0.
 * CNPs always go to the configured CNP class (cnp_config). */
control Classify(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    action set_tc(bit<3> tc) {
        meta.tc = tc;
    }

    action set_tc_from_dscp(bit<3> tc) {
        meta.tc = tc;
        meta.dscp_hit = 1;
    }

    table dscp_to_tc {
        key = { meta.dscp: exact; }
        actions = { set_tc_from_dscp; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    table pcp_to_tc {
        key = { hdr.vlan.pcp: exact; }
        actions = { set_tc; NoAction; }
        default_action = NoAction();
        size = 8;
    }

    apply {
        meta.tc = 0;
        if (meta.l3_valid == 1 || hdr.grh.isValid()) {
            dscp_to_tc.apply();
        }
        if (meta.dscp_hit == 0 && hdr.vlan.isValid()) {
            pcp_to_tc.apply();
        }
        if (meta.is_cnp == 1) {
            meta.tc = meta.cnp_tc;
        }
        standard_metadata.priority = meta.tc;
    }
}

#endif
