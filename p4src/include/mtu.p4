/* rocelab switch: egress MTU enforcement (a packet larger than the port's MTU is dropped,
   reason DROP_MTU: a switch does not fragment RoCE, and IPv6 never fragments in transit). */
#ifndef ROCE_MTU_P4
#define ROCE_MTU_P4

control MtuCheck(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    bit<16> mtu = 0;

    action set_port_mtu(bit<16> mtu_bytes) {
        mtu = mtu_bytes;
    }

    /* the IP MTU of a port (bytes of IP header + payload); no entry: not enforced */
    table port_mtu {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_port_mtu; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        port_mtu.apply();
        bit<16> len = 0;
        if (hdr.ipv4.isValid()) {
            len = hdr.ipv4.total_len;
        } else if (hdr.ipv6.isValid()) {
            len = 16w40 + hdr.ipv6.payload_len;
        } else if (hdr.grh.isValid()) {
            len = 16w40 + hdr.grh.paylen;   /* RoCEv1: the GRH is the L2 payload */
        }
        if (mtu != 0 && len > mtu && meta.drop_reason == DROP_NONE) {
            meta.drop_reason = DROP_MTU;
            mark_to_drop(standard_metadata);
        }
    }
}

#endif
