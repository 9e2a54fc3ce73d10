/* rocelab switch: telemetry counters and the flow mirror.
 * Per-port, per-class counters are indexed port * 8 + traffic class; drops port * 16 + reason.
 * They are top-level instances because ingress and egress both count into them. */
#ifndef ROCE_TELEMETRY_P4
#define ROCE_TELEMETRY_P4

counter<bit<32>>(PORT_TC_CELLS, CounterType.packets_and_bytes) roce_rx;   /* RoCE (v1+v2) in, ingress port */
counter<bit<32>>(PORT_TC_CELLS, CounterType.packets_and_bytes) roce_tx;   /* RoCE (v1+v2) out, egress port */
counter<bit<32>>(NUM_PORTS, CounterType.packets_and_bytes) rocev1_rx;     /* RoCEv1 in, per port */
counter<bit<32>>(PORT_TC_CELLS, CounterType.packets) ecn_marked;          /* ECT -> CE marks, egress port */
counter<bit<32>>(PORT_TC_CELLS, CounterType.packets) pfc_tx;              /* PFC frames sent (XOFF+XON) */
counter<bit<32>>(PORT_TC_CELLS, CounterType.packets) pfc_rx;              /* PFC frames received, per enabled class */
counter<bit<32>>(NUM_PORTS, CounterType.packets) pause_rx;                /* 802.3x PAUSE received */
counter<bit<32>>(PORT_TC_CELLS, CounterType.packets) cnp_rx;              /* CNPs in, ingress port */
counter<bit<32>>(PORT_TC_CELLS, CounterType.packets) cnp_tx;              /* CNPs generated (NP emulation) */
counter<bit<32>>(DROP_CELLS, CounterType.packets_and_bytes) drops;        /* dropped, by port and reason */

/* index helpers */
#define PORT_TC(port, tc) ((((bit<32>)(port)) << 3) | ((bit<32>)(tc)))
#define PORT_REASON(port, reason) ((((bit<32>)(port)) << 4) | ((bit<32>)(reason)))

/* Mirror chosen flows (to a capture port or to the CPU) through a clone session. */
control FlowMirror(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    action mirror_to(bit<32> session) {
        meta.clone_kind = CLONE_MIRROR;
        clone_preserving_field_list(CloneType.I2E, session, 1);
    }

    table mirror_flow {
        key = {
            meta.ip_src: ternary;
            meta.ip_dst: ternary;
            meta.l4_dport: ternary;
            meta.bth_dqpn: ternary;
        }
        actions = { mirror_to; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    apply {
        mirror_flow.apply();
    }
}

#endif
