/* rocelab switch: notification-point (NP) emulation.
 * With np_enable = 1 (cnp_config), a CE-marked RoCEv2 request/data packet leaving toward a
 * host port makes the switch send a CNP back to the packet's source, at most one per flow
 * (cnp_qp entry) per interval. The CNP is an E2E clone of the data packet (session
 * CNP_SESSION_BASE + the data packet's ingress port) rewritten in egress. */
#ifndef ROCE_CNP_P4
#define ROCE_CNP_P4

register<bit<48>, bit<32>>(CNP_FLOW_SLOTS) cnp_last;   /* time of the flow's last CNP, us */
register<bit<1>, bit<32>>(CNP_FLOW_SLOTS) cnp_sent;    /* 1 once the flow has had a CNP */

control CnpNp(inout headers_t hdr, inout metadata_t meta,
              inout standard_metadata_t standard_metadata) {
    action set_host_port() {
        meta.is_host_port = 1;
    }

    /* ports facing hosts (NICs): only packets leaving there trigger CNPs */
    table host_port {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_host_port; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action set_cnp_target(bit<24> dqpn, bit<32> slot) {
        meta.cnp_hit = 1;
        meta.cnp_dqpn = dqpn;
        meta.cnp_slot = slot;
    }

    /* (data src IP, data dst IP, data dst QP) -> the sender's QP and a rate-limit slot */
    table cnp_qp {
        key = {
            meta.ip_src: exact;
            meta.ip_dst: exact;
            hdr.bth.dqpn: exact;
        }
        actions = { set_cnp_target; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        bit<2> ect = 0;
        if (hdr.ipv4.isValid()) {
            ect = hdr.ipv4.ecn;
        } else if (hdr.ipv6.isValid()) {
            ect = hdr.ipv6.ecn;
        }
        /* RC requests and data: opcodes 0x00..0x10 and the atomics CMP_SWAP 0x13 and
           FETCH_ADD 0x14 (not ACK 0x11, ATOMIC ACK 0x12, CNP 0x81) */
        if (meta.np_enable == 1 && meta.roce_version == 2 && ect == 3
                && (hdr.bth.opcode <= 8w0x10 || hdr.bth.opcode == 8w0x13
                    || hdr.bth.opcode == 8w0x14) && meta.clone_kind == CLONE_NONE
                && meta.drop_reason == DROP_NONE) {
            host_port.apply();
            if (meta.is_host_port == 1) {
                cnp_qp.apply();
            }
            if (meta.cnp_hit == 1) {
                bit<1> sent;
                bit<48> last;
                bit<48> now = standard_metadata.egress_global_timestamp;
                cnp_sent.read(sent, meta.cnp_slot);
                cnp_last.read(last, meta.cnp_slot);
                if (sent == 0 || now - last >= meta.cnp_interval) {
                    cnp_sent.write(meta.cnp_slot, 1);
                    cnp_last.write(meta.cnp_slot, now);
                    meta.clone_kind = CLONE_CNP;
                    meta.clone_tc = meta.cnp_tc;
                    meta.clone_dscp = meta.cnp_dscp;
                    clone_preserving_field_list(CloneType.E2E,
                        CNP_SESSION_BASE + (bit<32>)meta.in_port, 1);
                }
            }
        }
    }
}

/* Rewrite an E2E clone of a CE-marked data packet into a CNP to the data packet's source. */
control CnpBuild(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        bit<32> len = 14 + 8 + 12 + 16 + 4;    /* Ethernet, UDP, BTH, reserved, ICRC */
        hdr.packet_in.setInvalid();
        hdr.reth.setInvalid();
        hdr.immdt.setInvalid();
        hdr.aeth.setInvalid();
        hdr.atomiceth.setInvalid();
        hdr.atomicacketh.setInvalid();

        hdr.ethernet.dst = meta.orig_eth_src;
        hdr.ethernet.src = meta.orig_eth_dst;
        if (hdr.vlan.isValid()) {
            hdr.vlan.pcp = meta.clone_tc;
            len = len + 4;
        }

        meta.ones64 = 0xFFFFFFFFFFFFFFFF;
        meta.ones8_tc = 0xFF;
        meta.ones8_ttl = 0xFF;
        meta.ones16_csum = 0xFFFF;
        meta.ones20_flow = 0xFFFFF;
        meta.ones16_udp = 0xFFFF;
        meta.ones8_bth = 0xFF;

        hdr.udp.dport = ROCE_UDP_PORT;
        hdr.udp.len = 8 + 12 + 16 + 4;
        hdr.udp.checksum = 0;

        hdr.bth.opcode = BTH_OP_CNP;
        hdr.bth.se = 0;
        hdr.bth.m = 0;
        hdr.bth.pad = 0;
        hdr.bth.tver = 0;
        hdr.bth.fecn = 0;
        hdr.bth.becn = 1;
        hdr.bth.resv6 = 0;
        hdr.bth.dqpn = meta.cnp_dqpn;
        hdr.bth.ackreq = 0;
        hdr.bth.resv7 = 0;
        hdr.bth.psn = 0;
        hdr.cnp_pad.setValid();
        hdr.cnp_pad.reserved = 0;

        if (hdr.ipv4.isValid()) {
            ipv4_addr_t a = hdr.ipv4.src;
            hdr.ipv4.src = hdr.ipv4.dst;
            hdr.ipv4.dst = a;
            hdr.ipv4.version = 4;
            hdr.ipv4.ihl = 5;
            hdr.ipv4.dscp = meta.clone_dscp;
            hdr.ipv4.ecn = 0;
            hdr.ipv4.total_len = 20 + 8 + 12 + 16 + 4;
            hdr.ipv4.identification = 0;
            hdr.ipv4.flags = 2;       /* don't fragment */
            hdr.ipv4.frag_offset = 0;
            hdr.ipv4.ttl = 64;
            hdr.ipv4.protocol = IP_PROTO_UDP;
            len = len + 20;
            hash(meta.icrc, HashAlgorithm.crc32, 32w0,
                 { meta.ones64,
                   hdr.ipv4.version, hdr.ipv4.ihl, meta.ones8_tc, hdr.ipv4.total_len,
                   hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                   meta.ones8_ttl, hdr.ipv4.protocol, meta.ones16_csum,
                   hdr.ipv4.src, hdr.ipv4.dst,
                   hdr.udp.sport, hdr.udp.dport, hdr.udp.len, meta.ones16_udp,
                   hdr.bth.opcode, hdr.bth.se, hdr.bth.m, hdr.bth.pad, hdr.bth.tver,
                   hdr.bth.pkey, meta.ones8_bth, hdr.bth.dqpn, hdr.bth.ackreq,
                   hdr.bth.resv7, hdr.bth.psn,
                   hdr.cnp_pad.reserved },
                 64w0x100000000);
        } else {
            bit<128> a = hdr.ipv6.src;
            hdr.ipv6.src = hdr.ipv6.dst;
            hdr.ipv6.dst = a;
            hdr.ipv6.version = 6;
            hdr.ipv6.dscp = meta.clone_dscp;
            hdr.ipv6.ecn = 0;
            hdr.ipv6.flow_label = 0;
            hdr.ipv6.payload_len = 8 + 12 + 16 + 4;
            hdr.ipv6.next_hdr = IP_PROTO_UDP;
            hdr.ipv6.hop_limit = 64;
            len = len + 40;
            hash(meta.icrc, HashAlgorithm.crc32, 32w0,
                 { meta.ones64,
                   hdr.ipv6.version, meta.ones8_tc, meta.ones20_flow, hdr.ipv6.payload_len,
                   hdr.ipv6.next_hdr, meta.ones8_ttl, hdr.ipv6.src, hdr.ipv6.dst,
                   hdr.udp.sport, hdr.udp.dport, hdr.udp.len, meta.ones16_udp,
                   hdr.bth.opcode, hdr.bth.se, hdr.bth.m, hdr.bth.pad, hdr.bth.tver,
                   hdr.bth.pkey, meta.ones8_bth, hdr.bth.dqpn, hdr.bth.ackreq,
                   hdr.bth.resv7, hdr.bth.psn,
                   hdr.cnp_pad.reserved },
                 64w0x100000000);
        }
        /* the ICRC travels least-significant byte first (as scapy and NICs write it) */
        hdr.icrc.setValid();
        hdr.icrc.icrc = meta.icrc[7:0] ++ meta.icrc[15:8] ++ meta.icrc[23:16] ++ meta.icrc[31:24];
        truncate(len);
        cnp_tx.count(PORT_TC(standard_metadata.egress_port, meta.clone_tc));
    }
}

#endif
