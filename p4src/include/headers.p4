/* rocelab switch: constants, headers and metadata.
 * Header field names follow the parsed-field record (docs/parsed-record.md): the record's
 * `bth_opcode` is hdr.bth.opcode here, `pfc_quanta3` is hdr.pfc.quanta3, and so on. */
#ifndef ROCE_HEADERS_P4
#define ROCE_HEADERS_P4

/* ---- ports and sessions (see p4src/README.md) */
#define CPU_PORT 255             /* start simple_switch_grpc with --cpu-port 255 */
#define DROP_PORT 511            /* BMv2's drop port (mark_to_drop) */
#define PFC_SESSION_BASE 256     /* PFC frames for port P leave through clone session 256+P */
#define CNP_SESSION_BASE 768     /* CNPs for a packet that came in on port P: session 768+P */

#define NUM_PORTS 512
#define PORT_TC_CELLS 4096       /* index = port * 8 + traffic class */
#define DROP_CELLS 8192          /* index = port * 16 + drop reason */
#define CNP_FLOW_SLOTS 4096
#define FAULT_SLOTS 1024
#define ECMP_GROUPS 1024

/* ---- EtherTypes, protocols, opcodes */
const bit<16> ETH_VLAN = 0x8100;
const bit<16> ETH_IPV4 = 0x0800;
const bit<16> ETH_IPV6 = 0x86DD;
const bit<16> ETH_ROCEV1 = 0x8915;
const bit<16> ETH_MAC_CONTROL = 0x8808;
const bit<16> MAC_CONTROL_PAUSE = 0x0001;
const bit<16> MAC_CONTROL_PFC = 0x0101;
const bit<48> PFC_DST_MAC = 0x0180C2000001;
const bit<8> IP_PROTO_UDP = 17;
const bit<16> ROCE_UDP_PORT = 4791;
const bit<8> GRH_NEXT_BTH = 0x1B;
const bit<8> BTH_OP_CNP = 0x81;

/* ---- standard_metadata.instance_type values (BMv2 simple_switch; NORMAL, 0, is not
 * named: nothing tests for it, and p4c warns about an unused constant) */
const bit<32> INSTANCE_I2E_CLONE = 1;
const bit<32> INSTANCE_E2E_CLONE = 2;
const bit<32> INSTANCE_REPLICATION = 5;

/* ---- what a clone is for (meta.clone_kind) */
const bit<8> CLONE_NONE = 0;
const bit<8> CLONE_PFC = 1;      /* rewrite into an 802.1Qbb frame */
const bit<8> CLONE_CNP = 2;      /* rewrite into a CNP (NP emulation) */
const bit<8> CLONE_MIRROR = 3;   /* leave unchanged (telemetry mirror) */

/* ---- drop reasons (index = port * 16 + reason in the `drops` counter) */
const bit<8> DROP_NONE = 0;
const bit<8> DROP_NO_ROUTE = 1;     /* IPv4/IPv6 LPM or next-hop miss */
const bit<8> DROP_TTL = 2;          /* TTL / hop limit <= 1 on the L3 path */
const bit<8> DROP_L2_MISS = 3;      /* unknown destination MAC (l2_fwd default) */
const bit<8> DROP_FAULT = 4;        /* fault injection */
const bit<8> DROP_ECN_NON_ECT = 5;  /* non-ECT above Kmax with drop_non_ect = 1 */
const bit<8> DROP_ROCEV1_L3 = 6;    /* RoCEv1 frame sent to the router MAC: never routed */
const bit<8> DROP_MAC_CONTROL = 7;  /* PFC/PAUSE frames are consumed */
const bit<8> DROP_MALFORMED = 8;    /* parser error (truncated header) */
const bit<8> DROP_BAD_CHECKSUM = 9; /* IPv4 header checksum wrong */
const bit<8> DROP_SELF_REPLICA = 10;/* flood replica back to its ingress port */
const bit<8> DROP_MTU = 11;         /* larger than the egress port's MTU (include/mtu.p4) */

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<128> ipv6_addr_t;

/* ---- controller headers (CPU port only) */
@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<8> reason;      /* CLONE_* kind that sent it to the CPU */
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    mac_addr_t dst;
    mac_addr_t src;
    bit<16> ether_type;
}

header vlan_t {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    ipv4_addr_t src;
    ipv4_addr_t dst;
}

header ipv6_t {
    bit<4> version;
    bit<6> dscp;
    bit<2> ecn;
    bit<20> flow_label;
    bit<16> payload_len;
    bit<8> next_hdr;
    bit<8> hop_limit;
    ipv6_addr_t src;
    ipv6_addr_t dst;
}

/* RoCEv1 global route header (40 bytes) */
header grh_t {
    bit<4> ipver;
    bit<6> dscp;        /* traffic class, upper 6 bits */
    bit<2> ecn;         /* traffic class, lower 2 bits */
    bit<20> flow_label;
    bit<16> paylen;
    bit<8> next_hdr;
    bit<8> hop_limit;
    bit<128> sgid;
    bit<128> dgid;
}

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

/* InfiniBand base transport header (12 bytes) */
header bth_t {
    bit<8> opcode;
    bit<1> se;
    bit<1> m;
    bit<2> pad;
    bit<4> tver;
    bit<16> pkey;
    bit<1> fecn;
    bit<1> becn;
    bit<6> resv6;
    bit<24> dqpn;
    bit<1> ackreq;
    bit<7> resv7;
    bit<24> psn;
}

header reth_t {
    bit<64> va;
    bit<32> rkey;
    bit<32> dlen;
}

header aeth_t {
    bit<8> syndrome;
    bit<24> msn;
}

header immdt_t {
    bit<32> immdt;
}

/* atomic extended transport header (CMP_SWAP 0x13, FETCH_ADD 0x14) */
header atomiceth_t {
    bit<64> va;
    bit<32> rkey;
    bit<64> swap_add;   /* swap data (CMP_SWAP) or add data (FETCH_ADD) */
    bit<64> compare;
}

/* atomic acknowledge extended transport header (after the AETH of 0x12) */
header atomicacketh_t {
    bit<64> orig;
}

/* the 16 reserved bytes of a CNP */
header cnp_pad_t {
    bit<128> reserved;
}

/* ICRC of a CNP the switch builds (little-endian on the wire) */
header icrc_t {
    bit<32> icrc;
}

/* 802.3 MAC control (EtherType 0x8808) */
header mac_ctrl_t {
    bit<16> opcode;
}

/* 802.1Qbb priority flow control body */
header pfc_t {
    bit<16> cev;        /* class-enable vector, bit i = priority i */
    bit<16> quanta0;
    bit<16> quanta1;
    bit<16> quanta2;
    bit<16> quanta3;
    bit<16> quanta4;
    bit<16> quanta5;
    bit<16> quanta6;
    bit<16> quanta7;
}

/* 802.3x PAUSE body */
header pause_t {
    bit<16> pause_time;
}

/* zero padding of a generated PFC frame up to 60 bytes (64 with FCS) */
header pfc_pad_t {
    bit<208> zero;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t ethernet;
    vlan_t vlan;
    mac_ctrl_t mac_ctrl;
    pfc_t pfc;
    pause_t pause;
    pfc_pad_t pfc_pad;
    ipv4_t ipv4;
    ipv6_t ipv6;
    grh_t grh;
    udp_t udp;
    bth_t bth;
    reth_t reth;
    immdt_t immdt;
    aeth_t aeth;
    atomiceth_t atomiceth;
    atomicacketh_t atomicacketh;
    cnp_pad_t cnp_pad;
    icrc_t icrc;
}

/* Per-packet metadata. Fields marked @field_list(1) survive clone_preserving_field_list. */
struct metadata_t {
    /* derived from the headers in ingress */
    bit<1> l3_valid;          /* IPv4 or IPv6 header present */
    bit<6> dscp;              /* of IPv4 / IPv6 / GRH */
    bit<128> ip_src;          /* IPv4 in the low 32 bits (as the parsed-field record) */
    bit<128> ip_dst;
    bit<8> ip_proto;
    bit<16> l4_sport;
    bit<16> l4_dport;
    bit<2> roce_version;      /* 0 none, 1 RoCEv1, 2 RoCEv2 */
    bit<1> is_roce;
    bit<1> is_cnp;
    bit<24> bth_dqpn;         /* 0 when there is no BTH */
    bit<1> is_router_mac;
    bit<1> dscp_hit;

    /* forwarding */
    bit<1> route_hit;
    bit<16> nhop_id;
    bit<16> ecmp_group;
    bit<16> ecmp_size;
    bit<16> ecmp_member;
    bit<1> is_ecmp;
    bit<1> spray;

    /* fault injection */
    bit<1> fault_nth_hit;
    bit<32> fault_n;
    bit<32> fault_slot;

    /* drops */
    bit<8> drop_reason;

    /* global configuration (cnp_config) */
    bit<3> cnp_tc;
    bit<1> np_enable;
    bit<48> cnp_interval;     /* microseconds */
    bit<6> cnp_dscp;

    /* PFC admission, carried from ingress to egress */
    bit<1> admitted;
    bit<1> pfc_enabled;
    bit<32> pfc_xoff;
    bit<32> pfc_xon;
    bit<48> pfc_refresh;      /* microseconds */
    bit<16> pfc_cfg_quanta;   /* pause time of an XOFF, in 512-bit-time quanta */
    mac_addr_t port_mac;

    /* ECN (egress) */
    bit<1> ecn_hit;
    bit<32> ecn_kmin;
    bit<32> ecn_kmax;
    bit<32> ecn_pmax;         /* probability at Kmax in units of 2^-24 (16777216 = 100%) */
    bit<1> ecn_drop_non_ect;
    bit<32> qdepth;           /* enq_qdepth in packets, or the debug_qdepth override */
    bit<1> is_host_port;
    bit<1> cnp_hit;
    bit<32> cnp_slot;
    bit<32> pfc_node;         /* PfcUnlink's argument: ingress port * 8 + class, + 1 */
    bit<32> pfc_list;         /* PfcUnlink's argument: the queue whose waiter list holds it */

    /* carried into clones */
    @field_list(1) bit<9> in_port;
    @field_list(1) bit<3> tc;
    @field_list(1) bit<8> clone_kind;
    @field_list(1) bit<16> pfc_quanta;
    @field_list(1) bit<3> pfc_class;
    @field_list(1) bit<32> pfc_chain;  /* an XON for queue pfc_chain - 1: release its next waiter */
    @field_list(1) bit<24> cnp_dqpn;
    @field_list(1) bit<48> orig_eth_src;
    @field_list(1) bit<48> orig_eth_dst;
    @field_list(1) bit<6> clone_dscp;
    @field_list(1) bit<3> clone_tc;

    /* ICRC computation inputs (constants kept in fields: hash inputs are fields) */
    bit<64> ones64;           /* the absent LRH */
    bit<8> ones8_tc;          /* IPv4 TOS / IPv6 traffic class */
    bit<8> ones8_ttl;         /* IPv4 TTL / IPv6 hop limit */
    bit<16> ones16_csum;      /* IPv4 header checksum */
    bit<20> ones20_flow;      /* IPv6 flow label */
    bit<16> ones16_udp;       /* UDP checksum */
    bit<8> ones8_bth;         /* BTH FECN, BECN, reserved 6 */
    bit<32> icrc;
}

#endif
