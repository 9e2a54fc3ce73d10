/* rocelab switch: 802.1Qbb PFC generation and PFC/PAUSE reception.
 * Occupancy is the depth of the egress queue (egress port, class) as the target reports it,
 * in packets: every departure writes deq_qdepth (exact at that instant, whatever was dropped
 * or cloned before), every admitted unicast packet adds one until the next departure (so a
 * burst is seen on arrival). Nothing the traffic manager drops can leak: the next departure
 * overwrites the estimate, and the departure that empties the queue writes 0.
 * Pause state stays per (ingress port, class): who gets the XOFF and the XON.
 * Why this and not an ingress counter: p4src/README.md, "PFC generation". */
#ifndef ROCE_PFC_P4
#define ROCE_PFC_P4

register<bit<32>, bit<32>>(PORT_TC_CELLS) pfc_qdepth;     /* egress port * 8 + class: packets queued */
register<bit<1>, bit<32>>(PORT_TC_CELLS) pfc_paused;      /* ingress port * 8 + class: 1 after an XOFF, 0 after the XON */
register<bit<9>, bit<32>>(PORT_TC_CELLS) pfc_cause;       /* ingress port * 8 + class: egress port whose queue paused it */
register<bit<48>, bit<32>>(PORT_TC_CELLS) pfc_last_sent;  /* ingress port * 8 + class: time of the last XOFF/refresh/XON, us */

/* Consume received 802.1Qbb PFC and 802.3x PAUSE frames: count them, never forward. */
control PfcReceive(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        bit<9> port = standard_metadata.ingress_port;
        if (hdr.pfc.isValid()) {
            if (hdr.pfc.cev[0:0] == 1) { pfc_rx.count(PORT_TC(port, 0)); }
            if (hdr.pfc.cev[1:1] == 1) { pfc_rx.count(PORT_TC(port, 1)); }
            if (hdr.pfc.cev[2:2] == 1) { pfc_rx.count(PORT_TC(port, 2)); }
            if (hdr.pfc.cev[3:3] == 1) { pfc_rx.count(PORT_TC(port, 3)); }
            if (hdr.pfc.cev[4:4] == 1) { pfc_rx.count(PORT_TC(port, 4)); }
            if (hdr.pfc.cev[5:5] == 1) { pfc_rx.count(PORT_TC(port, 5)); }
            if (hdr.pfc.cev[6:6] == 1) { pfc_rx.count(PORT_TC(port, 6)); }
            if (hdr.pfc.cev[7:7] == 1) { pfc_rx.count(PORT_TC(port, 7)); }
        } else if (hdr.pause.isValid()) {
            pause_rx.count((bit<32>)port);
        }
        meta.drop_reason = DROP_MAC_CONTROL;
        mark_to_drop(standard_metadata);
    }
}

/* Admission (unicast packets that passed ingress): count the packet into the depth of the
 * queue it goes to; XOFF its sender when that depth reaches XOFF, refresh while paused. */
control PfcIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    action set_pfc_thresholds(bit<32> xoff, bit<32> xon, bit<16> quanta, bit<48> refresh_us) {
        meta.pfc_enabled = 1;
        meta.pfc_xoff = xoff;
        meta.pfc_xon = xon;
        meta.pfc_cfg_quanta = quanta;
        meta.pfc_refresh = refresh_us;
    }

    /* no entry: the class is counted but never paused */
    table pfc_thresholds {
        key = {
            standard_metadata.ingress_port: exact;
            meta.tc: exact;
        }
        actions = { set_pfc_thresholds; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        bit<9> eport = standard_metadata.egress_spec;
        bit<32> q = PORT_TC(eport, meta.tc);
        bit<32> depth;
        pfc_qdepth.read(depth, q);
        if (depth != 0xFFFFFFFF) {
            depth = depth + 1;   /* this packet, once queued (over by the drops since the last departure) */
        }
        pfc_qdepth.write(q, depth);
        meta.admitted = 1;

        pfc_thresholds.apply();
        if (meta.pfc_enabled == 1) {
            if (meta.pfc_xon == 0) {
                meta.pfc_xon = 1;  /* "below 0" never happens: XON 0 would never resume */
            }
            bit<32> idx = PORT_TC(standard_metadata.ingress_port, meta.tc);
            bit<1> paused;
            bit<9> cause;
            bit<48> last;
            bit<48> now = standard_metadata.ingress_global_timestamp;
            bool send = false;
            pfc_paused.read(paused, idx);
            pfc_cause.read(cause, idx);
            pfc_last_sent.read(last, idx);
            meta.pfc_quanta = meta.pfc_cfg_quanta;
            if (paused == 0) {
                if (depth >= meta.pfc_xoff) {
                    send = true;   /* XOFF: the queue this sender feeds reached the threshold */
                    pfc_paused.write(idx, 1);
                    pfc_cause.write(idx, eport);
                }
            } else if (depth >= meta.pfc_xon) {
                if (now - last >= meta.pfc_refresh) {
                    send = true;   /* refresh before the peer's pause expires */
                }
            } else if (cause == eport) {
                /* the queue that paused it is below XON and this sender is sending again
                 * (its pause expired, or it ignores pause): its XON went to no departure */
                send = true;
                meta.pfc_quanta = 0;
                pfc_paused.write(idx, 0);
            }
            if (send) {
                pfc_last_sent.write(idx, now);
                meta.clone_kind = CLONE_PFC;
                meta.pfc_class = meta.tc;
                clone_preserving_field_list(CloneType.I2E,
                    PFC_SESSION_BASE + (bit<32>)standard_metadata.ingress_port, 1);
            }
        }
    }
}

/* Every packet that left a queue (data, replicas, clones): the queue's depth as the target
 * reports it. BMv2 simple_switch (SimpleSwitch::egress_thread) sets deq_qdepth after the
 * packet left its priority queue: the packets still waiting there. */
control PfcDepth(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        pfc_qdepth.write(PORT_TC(standard_metadata.egress_port, standard_metadata.priority),
                         (bit<32>)standard_metadata.deq_qdepth);
    }
}

/* Departure of an admitted packet: XON its sender once the queue that paused it holds fewer
 * than XON packets, refresh while it holds more. */
control PfcEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (meta.pfc_enabled == 1) {
            bit<32> depth = (bit<32>)standard_metadata.deq_qdepth;
            bit<32> idx = PORT_TC(meta.in_port, meta.tc);
            bit<1> paused;
            bit<9> cause;
            bit<48> last;
            bit<48> now = standard_metadata.egress_global_timestamp;
            bool send = false;
            pfc_paused.read(paused, idx);
            pfc_cause.read(cause, idx);
            pfc_last_sent.read(last, idx);
            /* a departure from another queue says nothing about the one that paused it */
            if (paused == 1 && cause == standard_metadata.egress_port) {
                if (depth < meta.pfc_xon) {
                    send = true;   /* XON: pause time 0 */
                    meta.pfc_quanta = 0;
                    pfc_paused.write(idx, 0);
                } else if (now - last >= meta.pfc_refresh) {
                    send = true;
                    meta.pfc_quanta = meta.pfc_cfg_quanta;
                }
            }
            if (send) {
                pfc_last_sent.write(idx, now);
                meta.clone_kind = CLONE_PFC;
                meta.pfc_class = meta.tc;
                clone_preserving_field_list(CloneType.E2E,
                    PFC_SESSION_BASE + (bit<32>)meta.in_port, 1);
            }
        }
    }
}

/* Turn a clone (I2E from PfcIngress, E2E from PfcEgress) into an 802.1Qbb frame. */
control PfcBuild(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    action set_port_mac(mac_addr_t mac) {
        meta.port_mac = mac;
    }

    /* source MAC of the PFC frames a port sends */
    table port_mac {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_port_mac; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        port_mac.apply();
        hdr.packet_in.setInvalid();
        hdr.vlan.setInvalid();
        hdr.pause.setInvalid();
        hdr.ipv4.setInvalid();
        hdr.ipv6.setInvalid();
        hdr.grh.setInvalid();
        hdr.udp.setInvalid();
        hdr.bth.setInvalid();
        hdr.reth.setInvalid();
        hdr.immdt.setInvalid();
        hdr.aeth.setInvalid();
        hdr.atomiceth.setInvalid();
        hdr.atomicacketh.setInvalid();
        hdr.cnp_pad.setInvalid();
        hdr.icrc.setInvalid();

        hdr.ethernet.setValid();
        hdr.ethernet.dst = PFC_DST_MAC;
        hdr.ethernet.src = meta.port_mac;
        hdr.ethernet.ether_type = ETH_MAC_CONTROL;
        hdr.mac_ctrl.setValid();
        hdr.mac_ctrl.opcode = MAC_CONTROL_PFC;
        hdr.pfc.setValid();
        hdr.pfc.cev = (bit<16>)1 << meta.pfc_class;
        hdr.pfc.quanta0 = 0;
        hdr.pfc.quanta1 = 0;
        hdr.pfc.quanta2 = 0;
        hdr.pfc.quanta3 = 0;
        hdr.pfc.quanta4 = 0;
        hdr.pfc.quanta5 = 0;
        hdr.pfc.quanta6 = 0;
        hdr.pfc.quanta7 = 0;
        if (meta.pfc_class == 0) { hdr.pfc.quanta0 = meta.pfc_quanta; }
        else if (meta.pfc_class == 1) { hdr.pfc.quanta1 = meta.pfc_quanta; }
        else if (meta.pfc_class == 2) { hdr.pfc.quanta2 = meta.pfc_quanta; }
        else if (meta.pfc_class == 3) { hdr.pfc.quanta3 = meta.pfc_quanta; }
        else if (meta.pfc_class == 4) { hdr.pfc.quanta4 = meta.pfc_quanta; }
        else if (meta.pfc_class == 5) { hdr.pfc.quanta5 = meta.pfc_quanta; }
        else if (meta.pfc_class == 6) { hdr.pfc.quanta6 = meta.pfc_quanta; }
        else { hdr.pfc.quanta7 = meta.pfc_quanta; }
        hdr.pfc_pad.setValid();
        hdr.pfc_pad.zero = 0;
        /* 14 + 2 + 18 + 26 = 60 bytes: a minimum frame; cut whatever payload follows */
        truncate(60);
        pfc_tx.count(PORT_TC(standard_metadata.egress_port, meta.pfc_class));
    }
}

#endif
