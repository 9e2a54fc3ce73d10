/* rocelab switch: fault injection (drop chosen RoCE packets to exercise go-back-N). */
#ifndef ROCE_FAULT_P4
#define ROCE_FAULT_P4

/* packets seen per fault slot since the last injected drop */
register<bit<32>, bit<32>>(FAULT_SLOTS) fault_count;

control FaultInject(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets) fault_psn_hits;
    direct_counter(CounterType.packets) fault_nth_hits;

    /* the direct counters count every hit (BMv2 semantics): no count() call needed */
    action drop_psn() {
        meta.drop_reason = DROP_FAULT;
        mark_to_drop(standard_metadata);
    }

    /* drop the packet of (destination QP, PSN): one loss at a chosen place */
    table fault_psn {
        key = {
            meta.ip_dst: exact;
            hdr.bth.dqpn: exact;
            hdr.bth.psn: exact;
        }
        actions = { drop_psn; NoAction; }
        default_action = NoAction();
        counters = fault_psn_hits;
        size = 1024;
    }

    action drop_every_nth(bit<32> n, bit<32> slot) {
        meta.fault_nth_hit = 1;
        meta.fault_n = n;
        meta.fault_slot = slot;
    }

    /* drop every Nth packet of a QP (the Nth, 2Nth, ...); slot = its counter cell */
    table fault_every_nth {
        key = {
            meta.ip_dst: exact;
            hdr.bth.dqpn: exact;
        }
        actions = { drop_every_nth; NoAction; }
        default_action = NoAction();
        counters = fault_nth_hits;
        size = 1024;
    }

    apply {
        if (hdr.bth.isValid()) {
            fault_psn.apply();
            if (meta.drop_reason == DROP_NONE) {
                fault_every_nth.apply();
                if (meta.fault_nth_hit == 1) {
                    bit<32> seen;
                    fault_count.read(seen, meta.fault_slot);
                    seen = seen + 1;
                    if (seen >= meta.fault_n) {
                        seen = 0;
                        meta.drop_reason = DROP_FAULT;
                        mark_to_drop(standard_metadata);
                    }
                    fault_count.write(meta.fault_slot, seen);
                }
            }
        }
    }
}

#endif
