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
/* The senders each queue has paused (its waiters), a doubly linked list of (ingress port, class)
 * cells, value = cell + 1, 0 = none: when the queue drains, every one of them gets its XON, not
 * only those with a packet still queued (a sender whose last packet left above XON would
 * otherwise stay paused with the queue empty: a wedge in a fabric, fix1). */
register<bit<32>, bit<32>>(PORT_TC_CELLS) pfc_head;       /* egress port * 8 + class: first waiter */
register<bit<32>, bit<32>>(PORT_TC_CELLS) pfc_next;       /* ingress port * 8 + class: next waiter */
register<bit<32>, bit<32>>(PORT_TC_CELLS) pfc_prev;       /* ingress port * 8 + class: previous waiter */

/* Take waiter meta.pfc_node (cell + 1) out of the list of queue meta.pfc_list; a cell that
 * is in no list (never paused, or paused by a register write) is left alone. */
control PfcUnlink(inout metadata_t meta) {
    apply {
        bit<32> i = meta.pfc_node - 1;
        bit<32> h;
        bit<32> p;
        bit<32> n;
        pfc_head.read(h, meta.pfc_list);
        pfc_prev.read(p, i);
        pfc_next.read(n, i);
        bool listed = true;
        if (h == meta.pfc_node) {
            pfc_head.write(meta.pfc_list, n);
        } else if (p != 0) {
            pfc_next.write(p - 1, n);
        } else {
            listed = false;
        }
        if (listed && n != 0) {
            pfc_prev.write(n - 1, p);
        }
        pfc_prev.write(i, 0);
        pfc_next.write(i, 0);
    }
}

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

    PfcUnlink() unlink;

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
            bool push = false;
            bool drop_waiter = false;
            pfc_paused.read(paused, idx);
            pfc_cause.read(cause, idx);
            pfc_last_sent.read(last, idx);
            meta.pfc_quanta = meta.pfc_cfg_quanta;
            meta.pfc_node = idx + 1;
            meta.pfc_list = PORT_TC(cause, meta.tc);
            if (paused == 0) {
                if (depth >= meta.pfc_xoff) {
                    send = true;   /* XOFF: the queue this sender feeds reached the threshold */
                    pfc_paused.write(idx, 1);
                    pfc_cause.write(idx, eport);
                    push = true;
                    drop_waiter = true;  /* a stale entry (registers written by hand): never twice */
                }
            } else if (depth >= meta.pfc_xon) {
                if (now - last >= meta.pfc_refresh) {
                    send = true;   /* refresh before the peer's pause expires */
                }
            } else if (cause == eport) {
                /* the queue that paused it is below XON and this sender is sending again
                 * (its pause expired, or it ignores pause): its XON went to no departure;
                 * the XON frame then releases the queue's other waiters (PfcBuild) */
                send = true;
                meta.pfc_quanta = 0;
                meta.pfc_chain = q + 1;
                pfc_paused.write(idx, 0);
                drop_waiter = true;
            }
            if (drop_waiter) {
                unlink.apply(meta);
            }
            if (push) {
                bit<32> h;
                pfc_head.read(h, q);
                pfc_next.write(idx, h);
                pfc_prev.write(idx, 0);
                if (h != 0) {
                    pfc_prev.write(h - 1, idx + 1);
                }
                pfc_head.write(q, idx + 1);
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
    PfcUnlink() unlink;

    apply {
        if (meta.pfc_enabled == 1) {
            bit<32> depth = (bit<32>)standard_metadata.deq_qdepth;
            bit<32> q = PORT_TC(standard_metadata.egress_port, meta.tc);
            bit<32> idx = PORT_TC(meta.in_port, meta.tc);
            bit<1> paused;
            bit<9> cause;
            bit<48> last;
            bit<48> now = standard_metadata.egress_global_timestamp;
            bool send = false;
            bool xon = false;
            pfc_paused.read(paused, idx);
            pfc_cause.read(cause, idx);
            pfc_last_sent.read(last, idx);
            /* a departure from another queue says nothing about the one that paused it */
            if (paused == 1 && cause == standard_metadata.egress_port) {
                if (depth < meta.pfc_xon) {
                    xon = true;    /* XON to this packet's own sender */
                } else if (now - last >= meta.pfc_refresh) {
                    send = true;
                    meta.pfc_quanta = meta.pfc_cfg_quanta;
                }
            } else if (depth < meta.pfc_xon) {
                /* the queue is below XON and this packet's sender is not one it paused: XON
                 * the first sender it did pause (its own packets may all have left already) */
                bit<32> h;
                pfc_head.read(h, q);
                if (h != 0) {
                    xon = true;
                    idx = h - 1;
                }
            }
            if (xon) {
                send = true;       /* XON: pause time 0; its frame releases the other waiters */
                meta.pfc_quanta = 0;
                meta.pfc_chain = q + 1;
                pfc_paused.write(idx, 0);
                meta.pfc_node = idx + 1;
                meta.pfc_list = q;
                unlink.apply(meta);
            }
            if (send) {
                pfc_last_sent.write(idx, now);
                meta.clone_kind = CLONE_PFC;
                meta.pfc_class = (bit<3>)idx;
                clone_preserving_field_list(CloneType.E2E, PFC_SESSION_BASE + (idx >> 3), 1);
            }
        }
    }
}

/* Turn a clone (I2E from PfcIngress, E2E from PfcEgress) into an 802.1Qbb frame. */
control PfcBuild(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    PfcUnlink() unlink;

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

        /* an XON for a drained queue: the next sender that queue paused gets its XON too (one
         * E2E clone per frame, a chain through the list; BMv2's egress_thread clones any
         * packet, clones included), so no waiter stays paused with the queue empty */
        if (meta.pfc_quanta == 0 && meta.pfc_chain != 0) {
            bit<32> q = meta.pfc_chain - 1;
            bit<32> h;
            pfc_head.read(h, q);
            if (h != 0) {
                bit<32> w = h - 1;
                meta.pfc_node = h;
                meta.pfc_list = q;
                unlink.apply(meta);
                pfc_paused.write(w, 0);
                pfc_last_sent.write(w, standard_metadata.egress_global_timestamp);
                meta.pfc_class = (bit<3>)w;
                clone_preserving_field_list(CloneType.E2E, PFC_SESSION_BASE + (w >> 3), 1);
            }
        }
    }
}

#endif
