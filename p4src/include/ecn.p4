/* rocelab switch: DCQCN-style ECN marking in egress.
 * depth = enq_qdepth (packets, BMv2 semantics) unless debug_qdepth overrides it.
 *   depth <= Kmin          : never marked (exactly Kmin: probability 0)
 *   Kmin < depth <= Kmax   : CE with probability Pmax * (depth - Kmin) / (Kmax - Kmin)
 *                            (exactly Kmax: probability Pmax)
 *   depth > Kmax           : always marked
 * Only ECT(0)/ECT(1) packets are marked; a non-ECT packet above Kmax is dropped when the
 * profile says drop_non_ect = 1, else passed. The comparison avoids division:
 *   mark  <=>  r * (Kmax - Kmin) < Pmax * (depth - Kmin),  r uniform in [0, 2^24). */
#ifndef ROCE_ECN_P4
#define ROCE_ECN_P4

control EcnMark(inout headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    action set_ecn_profile(bit<32> kmin, bit<32> kmax, bit<32> pmax, bit<1> drop_non_ect) {
        meta.ecn_hit = 1;
        meta.ecn_kmin = kmin;
        meta.ecn_kmax = kmax;
        meta.ecn_pmax = pmax;
        meta.ecn_drop_non_ect = drop_non_ect;
    }

    /* no entry: no marking on that (port, class) */
    table ecn_profile {
        key = {
            standard_metadata.egress_port: exact;
            meta.tc: exact;
        }
        actions = { set_ecn_profile; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    action override_qdepth(bit<32> depth) {
        meta.qdepth = depth;
    }

    /* test hook: pin the queue depth a port's packets see (empty in production) */
    table debug_qdepth {
        key = { standard_metadata.egress_port: exact; }
        actions = { override_qdepth; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        meta.qdepth = (bit<32>)standard_metadata.enq_qdepth;
        debug_qdepth.apply();
        ecn_profile.apply();
        if (meta.ecn_hit == 1) {
            bit<2> ect = 0;
            if (hdr.ipv4.isValid()) {
                ect = hdr.ipv4.ecn;
            } else if (hdr.ipv6.isValid()) {
                ect = hdr.ipv6.ecn;
            } else if (hdr.grh.isValid()) {
                ect = hdr.grh.ecn;
            }
            bool over = meta.qdepth > meta.ecn_kmax;
            bool mark = over;
            if (!over && meta.qdepth > meta.ecn_kmin) {
                bit<32> r;
                random(r, 32w0, 32w0xFFFFFF);
                bit<64> lhs = (bit<64>)r * (bit<64>)(meta.ecn_kmax - meta.ecn_kmin);
                bit<64> rhs = (bit<64>)meta.ecn_pmax * (bit<64>)(meta.qdepth - meta.ecn_kmin);
                if (lhs < rhs) {
                    mark = true;
                }
            }
            if (mark && (ect == 1 || ect == 2)) {
                if (hdr.ipv4.isValid()) {
                    hdr.ipv4.ecn = 3;
                } else if (hdr.ipv6.isValid()) {
                    hdr.ipv6.ecn = 3;
                } else {
                    hdr.grh.ecn = 3;
                }
                ecn_marked.count(PORT_TC(standard_metadata.egress_port, meta.tc));
            } else if (over && ect == 0 && meta.ecn_drop_non_ect == 1) {
                meta.drop_reason = DROP_ECN_NON_ECT;
                mark_to_drop(standard_metadata);
            }
        }
    }
}

#endif
