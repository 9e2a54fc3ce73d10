/* rocelab: a RoCEv2-aware switch for the v1model architecture (BMv2 simple_switch,
 * simple_switch_grpc, p4sim). L2/L3 forwarding with ECMP, DSCP/PCP classification,
 * DCQCN-style ECN marking, 802.1Qbb PFC generation, CNP accounting and NP emulation,
 * fault injection, per-port/per-class telemetry and flow mirroring.
 * Tables, registers and counters are described in p4src/README.md. */
#include <core.p4>
#define V1MODEL_VERSION 20200408  /* counter<I>, register<T, I>: p4c's v1model.p4 defaults to 20180101 */
#include <v1model.p4>

#include "include/headers.p4"
#include "include/parser.p4"
#include "include/telemetry.p4"
#include "include/classify.p4"
#include "include/forwarding.p4"
#include "include/fault.p4"
#include "include/pfc.p4"
#include "include/ecn.p4"
#include "include/cnp.p4"
#include "include/mtu.p4"

control RoceIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    DeriveFields() derive;
    Classify() classify;
    Forwarding() fwd;
    FaultInject() fault;
    FlowMirror() mirror;
    PfcReceive() pfc_receive;
    PfcIngress() pfc_ingress;

    action set_cnp_config(bit<3> cnp_tc, bit<1> np_enable, bit<48> interval_us, bit<6> cnp_dscp) {
        meta.cnp_tc = cnp_tc;
        meta.np_enable = np_enable;
        meta.cnp_interval = interval_us;
        meta.cnp_dscp = cnp_dscp;
    }

    /* switch-wide CNP settings: the controller sets the default action */
    table cnp_config {
        actions = { set_cnp_config; }
        default_action = set_cnp_config(6, 0, 50, 48);
        size = 1;
    }

    apply {
        meta.in_port = standard_metadata.ingress_port;
        if (hdr.packet_out.isValid()) {
            /* from the controller: straight out of the port it names */
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (standard_metadata.parser_error != error.NoError) {
            meta.drop_reason = DROP_MALFORMED;
            mark_to_drop(standard_metadata);
        } else if (standard_metadata.checksum_error == 1) {
            meta.drop_reason = DROP_BAD_CHECKSUM;
            mark_to_drop(standard_metadata);
        } else if (hdr.mac_ctrl.isValid()) {
            pfc_receive.apply(hdr, meta, standard_metadata);
        } else {
            cnp_config.apply();
            derive.apply(hdr, meta);
            classify.apply(hdr, meta, standard_metadata);
            if (meta.is_roce == 1) {
                roce_rx.count(PORT_TC(meta.in_port, meta.tc));
                if (meta.roce_version == 1) {
                    rocev1_rx.count((bit<32>)meta.in_port);
                }
                if (meta.is_cnp == 1) {
                    cnp_rx.count(PORT_TC(meta.in_port, meta.tc));
                }
            }
            fwd.apply(hdr, meta, standard_metadata);
            if (meta.drop_reason == DROP_NONE) {
                fault.apply(hdr, meta, standard_metadata);
            }
            if (meta.drop_reason == DROP_NONE) {
                mirror.apply(hdr, meta, standard_metadata);
            }
            /* unicast packets count into their egress queue's PFC depth (a PFC clone overrides a mirror) */
            if (meta.drop_reason == DROP_NONE && standard_metadata.mcast_grp == 0) {
                pfc_ingress.apply(hdr, meta, standard_metadata);
            }
        }
        if (meta.drop_reason != DROP_NONE) {
            drops.count(PORT_REASON(meta.in_port, meta.drop_reason));
        }
    }
}

control RoceEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    PfcDepth() pfc_depth;
    PfcEgress() pfc_egress;
    PfcBuild() pfc_build;
    EcnMark() ecn;
    CnpNp() np;
    CnpBuild() cnp_build;
    MtuCheck() mtu_check;

    apply {
        /* first, whatever the packet: what it left behind in its queue */
        pfc_depth.apply(hdr, meta, standard_metadata);
        if (standard_metadata.instance_type == INSTANCE_I2E_CLONE
                || standard_metadata.instance_type == INSTANCE_E2E_CLONE) {
            if (meta.clone_kind == CLONE_PFC) {
                pfc_build.apply(hdr, meta, standard_metadata);
            } else if (meta.clone_kind == CLONE_CNP) {
                cnp_build.apply(hdr, meta, standard_metadata);
            }
            /* CLONE_MIRROR: the copy leaves unchanged */
        } else {
            /* a clone requested in ingress is not this packet's business any more */
            meta.clone_kind = CLONE_NONE;
            if (standard_metadata.instance_type == INSTANCE_REPLICATION
                    && standard_metadata.egress_port == meta.in_port) {
                meta.drop_reason = DROP_SELF_REPLICA;
                mark_to_drop(standard_metadata);
            } else {
                if (meta.admitted == 1) {
                    pfc_egress.apply(hdr, meta, standard_metadata);
                }
                mtu_check.apply(hdr, meta, standard_metadata);
                if (meta.drop_reason == DROP_NONE
                        && (hdr.ipv4.isValid() || hdr.ipv6.isValid() || hdr.grh.isValid())) {
                    ecn.apply(hdr, meta, standard_metadata);
                }
                np.apply(hdr, meta, standard_metadata);
                if (meta.is_roce == 1 && meta.drop_reason == DROP_NONE) {
                    roce_tx.count(PORT_TC(standard_metadata.egress_port, meta.tc));
                }
            }
            if (meta.drop_reason != DROP_NONE) {
                drops.count(PORT_REASON(standard_metadata.egress_port, meta.drop_reason));
            }
        }
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.in_port;
            hdr.packet_in.reason = meta.clone_kind;
            hdr.packet_in._pad = 0;
        }
    }
}

V1Switch(RoceParser(), RoceVerifyChecksum(), RoceIngress(), RoceEgress(),
         RoceComputeChecksum(), RoceDeparser()) main;
