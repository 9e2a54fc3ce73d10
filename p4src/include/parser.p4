/* rocelab switch: parser, checksums, deparser. */
#ifndef ROCE_PARSER_P4
#define ROCE_PARSER_P4

parser RoceParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
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
        transition select(hdr.ethernet.ether_type) {
            ETH_VLAN: parse_vlan;
            ETH_IPV4: parse_ipv4;
            ETH_IPV6: parse_ipv6;
            ETH_ROCEV1: parse_grh;
            ETH_MAC_CONTROL: parse_mac_ctrl;
            default: accept;
        }
    }

    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETH_IPV4: parse_ipv4;
            ETH_IPV6: parse_ipv6;
            ETH_ROCEV1: parse_grh;
            ETH_MAC_CONTROL: parse_mac_ctrl;
            default: accept;
        }
    }

    state parse_mac_ctrl {
        pkt.extract(hdr.mac_ctrl);
        transition select(hdr.mac_ctrl.opcode) {
            MAC_CONTROL_PFC: parse_pfc;
            MAC_CONTROL_PAUSE: parse_pause;
            default: accept;
        }
    }

    state parse_pfc {
        pkt.extract(hdr.pfc);
        transition accept;
    }

    state parse_pause {
        pkt.extract(hdr.pause);
        transition accept;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* options (IHL != 5) and fragments are forwarded but not looked into */
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w5, 13w0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_grh {
        pkt.extract(hdr.grh);
        transition select(hdr.grh.next_hdr) {
            GRH_NEXT_BTH: parse_bth;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dport) {
            ROCE_UDP_PORT: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        pkt.extract(hdr.bth);
        /* extended headers by RC opcode; an unknown transport version stops here */
        transition select(hdr.bth.tver, hdr.bth.opcode) {
            (4w0, 8w0x06): parse_reth;    /* RDMA WRITE FIRST */
            (4w0, 8w0x0A): parse_reth;    /* RDMA WRITE ONLY */
            (4w0, 8w0x0B): parse_reth;    /* RDMA WRITE ONLY with immediate */
            (4w0, 8w0x0C): parse_reth;    /* RDMA READ REQUEST */
            (4w0, 8w0x03): parse_immdt;   /* SEND LAST with immediate */
            (4w0, 8w0x05): parse_immdt;   /* SEND ONLY with immediate */
            (4w0, 8w0x09): parse_immdt;   /* RDMA WRITE LAST with immediate */
            (4w0, 8w0x0D): parse_aeth;    /* RDMA READ RESPONSE FIRST */
            (4w0, 8w0x0F): parse_aeth;    /* RDMA READ RESPONSE LAST */
            (4w0, 8w0x10): parse_aeth;    /* RDMA READ RESPONSE ONLY */
            (4w0, 8w0x11): parse_aeth;    /* ACKNOWLEDGE */
            (4w0, 8w0x12): parse_aeth;    /* ATOMIC ACKNOWLEDGE (then AtomicAckETH) */
            (4w0, 8w0x13): parse_atomiceth;   /* CMP_SWAP */
            (4w0, 8w0x14): parse_atomiceth;   /* FETCH_ADD */
            (4w0, 8w0x81): parse_cnp;     /* CNP */
            default: accept;
        }
    }

    state parse_reth {
        pkt.extract(hdr.reth);
        transition select(hdr.bth.opcode) {
            8w0x0B: parse_immdt;
            default: accept;
        }
    }

    state parse_immdt {
        pkt.extract(hdr.immdt);
        transition accept;
    }

    state parse_aeth {
        pkt.extract(hdr.aeth);
        transition select(hdr.bth.opcode) {
            8w0x12: parse_atomicacketh;
            default: accept;
        }
    }

    state parse_atomiceth {
        pkt.extract(hdr.atomiceth);
        transition accept;
    }

    state parse_atomicacketh {
        pkt.extract(hdr.atomicacketh);
        transition accept;
    }

    state parse_cnp {
        pkt.extract(hdr.cnp_pad);
        transition accept;
    }
}

control RoceVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RoceComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        /* TTL decrement, ECN marking and CNP construction all change the header */
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RoceDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mac_ctrl);
        pkt.emit(hdr.pfc);
        pkt.emit(hdr.pause);
        pkt.emit(hdr.pfc_pad);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.grh);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.reth);
        pkt.emit(hdr.immdt);
        pkt.emit(hdr.aeth);
        pkt.emit(hdr.atomiceth);
        pkt.emit(hdr.atomicacketh);
        pkt.emit(hdr.cnp_pad);
        pkt.emit(hdr.icrc);
    }
}

#endif
