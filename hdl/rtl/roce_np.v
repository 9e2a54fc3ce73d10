/*
 * rocelab: RoCEv2 notification point (the DCQCN NP of a receiving NIC).
 *
 * Consumes roce_parser's result records (named fields, never bit offsets of res_data) and
 * turns CE-marked RoCEv2 data frames into CNPs (BTH opcode 0x81, BECN set, 16 reserved
 * bytes, ICRC) to the sender's QP, at most one per flow per interval.
 *
 * - Flow = one slot of a small QP context table written through cfg_* (as a driver
 *   would): the key is the local QP number a data frame targets (its BTH DestQP), the
 *   peer's IP (the frame's IP source) and its family; the slot holds what the CNP needs:
 *   the peer's QP (the CNP's DestQP), the next-hop MAC, the UDP source port.
 * - Rate limit: per slot, a CNP when the slot never sent one or when at least
 *   cfg interval cycles passed since its last CNP (the last CNP's cycle is kept, as
 *   controller.hosts.dcqcn.NotificationPoint keeps its ns). A CE frame inside the
 *   interval is counted, not answered.
 * - Output, as the switch program's CNP (p4src/include/cnp.p4, CnpBuild) and the Python
 *   host's (controller.hosts.host.Host._cnp): the data frame's family (IPv4, 74 bytes
 *   untagged; IPv6, 94 bytes; IPv4 header checksum and ICRC computed here), addresses
 *   swapped (from the local IPv4 or IPv6 address to the frame's source), the CNP DSCP,
 *   ECN 0, TTL / hop limit 64, IPv6 flow label 0; an 802.1Q tag when the data frame had
 *   one: its VID, the CNP PCP (4 bytes more). On m_axis, byte 0 in tdata[7:0]; tvalid
 *   held until tready, tdata/tkeep/tlast stable while stalled.
 * - Records of frames with errors, non-RoCE, RoCEv1 or CNPs are taken and ignored.
 *
 * Pipeline (for timing; the decisions are those of a single-cycle NP on the take cycles):
 * take (cycle T): the record's key is compared with every slot, the first hit registered;
 * decide (T+1): the hit slot's rate-limit state -> a CNP or not; a CNP's context joins a
 * two-entry queue; load: the queue's head becomes the frame register (checksum, ICRC,
 * tag) when the output is free; send: the frame register shifts out a beat per tready.
 * rec_ready falls when the queue could overflow (two CNPs waiting, or one waiting and one
 * being decided): backpressure on the parser, never a lost CNP. A non-CE record never
 * stalls: one record per cycle.
 * Configuration writes: a slot's key (valid, family, local QPN, peer IP) takes effect at
 * once, for the records taken from the next cycle on; everything else (the slot's CNP
 * context, the clearing of its rate-limit state, the global registers) a cycle later,
 * i.e. at the decision of the records taken from the next cycle on. So a record sees the
 * configuration written before its take cycle, as in a single-cycle NP.
 *
 * Register map (cfg_addr, 32-bit words): 0x00 interval (cycles), 0x01 local MAC[47:32],
 * 0x02 local MAC[31:0], 0x03 local IPv4, 0x04 CNP DSCP (6 bits), 0x05 CNP PCP (3 bits),
 * 0x06..0x09 local IPv6 (bits 127:96 first);
 * slot s at 0x10 + 16*s: +0 {valid, IPv6, 6'b0, local QPN}, +1 peer QPN,
 * +2..+5 peer IP (bits 127:96 first; IPv4: +2..+4 zero, the address in +5),
 * +6 next-hop MAC[47:32], +7 next-hop MAC[31:0], +8 UDP source port.
 *
 * Test-only faults (defines, used only by tests/hdl to prove the checks can fail):
 * ROCE_NP_FAULT_INTERVAL halves the interval, ROCE_NP_FAULT_QP sends to the local QP,
 * ROCE_NP_FAULT_REUSE lets a rewritten slot keep the previous flow's rate-limit state,
 * ROCE_NP_FAULT_NH6 gives the IPv6 CNP next header 6 (TCP), ROCE_NP_FAULT_PCP tags the
 * CNP with PCP 0 instead of the CNP PCP.
 *
 * Slot reuse: writing a slot's word +0 starts a new flow there: its rate-limit state is
 * cleared, also when a record of the old flow was taken in the same cycle (the write wins),
 * and a CNP already decided for the old flow keeps the old flow's context (it is copied
 * when the CNP is decided, not when it is sent).
 */

`resetall
`timescale 1ns / 1ps
`default_nettype none

module roce_np #(
    parameter DATA_WIDTH = 64,
    parameter KEEP_WIDTH = DATA_WIDTH / 8,
    parameter SLOTS = 4
) (
    input  wire                   clk,
    input  wire                   rst,

    input  wire                   rec_valid,
    output wire                   rec_ready,
    input  wire [1:0]             rec_roce_version,
    input  wire                   rec_vlan_valid,
    input  wire [11:0]            rec_vlan_vid,
    input  wire [3:0]             rec_ip_version,
    input  wire [127:0]           rec_ip_src,
    input  wire [23:0]            rec_bth_dqpn,
    input  wire                   rec_is_roce,
    input  wire                   rec_is_cnp,
    input  wire                   rec_ecn_ce,
    input  wire                   rec_err_truncated,
    input  wire                   rec_err_ip_csum,
    input  wire                   rec_err_icrc,
    input  wire                   rec_err_unsupported,

    input  wire                   cfg_we,
    input  wire [7:0]             cfg_addr,
    input  wire [31:0]            cfg_wdata,

    output wire [DATA_WIDTH-1:0]  m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_tkeep,
    output wire                   m_axis_tvalid,
    input  wire                   m_axis_tready,
    output wire                   m_axis_tlast,

    output reg  [31:0]            stat_ce,      // CE-marked data records of a known flow
    output reg  [31:0]            stat_cnp      // CNPs queued
);

localparam integer BYTES = DATA_WIDTH / 8;
localparam integer MAX_BYTES = 18 + 80;  // tagged IPv6: 18 + 40 + 8 UDP + 12 BTH + 16 + 4 ICRC
localparam integer NBEATS = (MAX_BYTES + BYTES - 1) / BYTES;
localparam integer SW = (SLOTS > 1) ? $clog2(SLOTS) : 1;
localparam integer BW = (NBEATS > 1) ? $clog2(NBEATS) : 1;

// Frame length in bytes of each kind (index {IPv6, tagged}), its last beat and the bytes
// valid in it.
function integer kind_len(input integer k);
    kind_len = (k % 2 == 1 ? 18 : 14) + (k >= 2 ? 80 : 60);
endfunction
function integer kind_last(input integer k);
    kind_last = (kind_len(k) + BYTES - 1) / BYTES - 1;
endfunction
function integer kind_keep(input integer k);
    kind_keep = kind_len(k) - kind_last(k) * BYTES;
endfunction

// ---------------------------------------------------------------- configuration
// slot keys: written at once
reg         slot_valid [0:SLOTS-1];
reg         slot_v6    [0:SLOTS-1];
reg [23:0]  slot_lqpn  [0:SLOTS-1];
reg [127:0] slot_pip   [0:SLOTS-1];
// the rest: written a cycle later (cfgq_*)
reg [31:0]  interval;
reg [47:0]  local_mac;
reg [31:0]  local_ip4;
reg [127:0] local_ip6;
reg [5:0]   cnp_dscp;
reg [2:0]   cnp_pcp;
reg [23:0]  slot_pqpn  [0:SLOTS-1];
reg [47:0]  slot_pmac  [0:SLOTS-1];
reg [15:0]  slot_sport [0:SLOTS-1];
// rate limiter state per slot
reg         slot_sent  [0:SLOTS-1];
reg [31:0]  slot_last  [0:SLOTS-1];

reg         cfgq_we;
reg [7:0]   cfgq_addr;
reg [31:0]  cfgq_wdata;

reg [31:0] now;  // free-running cycle count; differences are taken modulo 2^32

`ifdef ROCE_NP_FAULT_INTERVAL
wire [31:0] eff_interval = {1'b0, interval[31:1]};
`else
wire [31:0] eff_interval = interval;
`endif

// ---------------------------------------------------------------- take: key lookup
wire rec_v6 = rec_ip_version == 4'd6;
wire ce_data = rec_is_roce && !rec_is_cnp && rec_ecn_ce && rec_roce_version == 2'd2
               && (rec_ip_version == 4'd4 || rec_v6)
               && !rec_err_truncated && !rec_err_ip_csum && !rec_err_icrc
               && !rec_err_unsupported;

reg [SLOTS-1:0] match;
reg [SLOTS-1:0] first;  // the lowest matching slot, one-hot
integer i;
always @* begin
    for (i = 0; i < SLOTS; i = i + 1)
        match[i] = slot_valid[i] && slot_v6[i] == rec_v6 && slot_lqpn[i] == rec_bth_dqpn
                   && slot_pip[i] == rec_ip_src;
    first = match & ~(match - 1'b1);
end

reg             look_valid;  // a CE data record of a known flow, taken last cycle
reg [SLOTS-1:0] look_hit;
reg [127:0]     look_ip;
reg             look_v6;
reg             look_tag;
reg [11:0]      look_vid;

// ---------------------------------------------------------------- decide: rate limit
reg [SW-1:0] hit_slot;
integer j;
always @* begin
    hit_slot = {SW{1'b0}};
    for (j = 0; j < SLOTS; j = j + 1)
        if (look_hit[j])
            hit_slot = j[SW-1:0];
end
wire [31:0] since = now - slot_last[hit_slot];
wire allow = !slot_sent[hit_slot] || since >= eff_interval;
wire decide = look_valid && allow;

// the CNP queue (two entries, q[0] the head): the decided CNPs' contexts
localparam integer QW = 1 + 1 + 12 + 128 + 24 + 48 + 16;  // v6, tag, vid, ip, qpn, mac, sport
`ifdef ROCE_NP_FAULT_QP
wire [23:0] ctx_qpn = slot_lqpn[hit_slot];
`else
wire [23:0] ctx_qpn = slot_pqpn[hit_slot];
`endif
wire [QW-1:0] ctx = {look_v6, look_tag, look_vid, look_ip, ctx_qpn, slot_pmac[hit_slot],
                     slot_sport[hit_slot]};
reg [QW-1:0] q0, q1;
reg          q0_valid, q1_valid;
reg          tx_busy;
wire         load = q0_valid && !tx_busy;
assign rec_ready = !q1_valid && !(q0_valid && look_valid);
wire take = rec_valid && rec_ready;

// ---------------------------------------------------------------- load: the CNP's bytes
// Bytes from the IP header to the reserved bytes (76 for IPv6, 56 for IPv4; byte j at
// bits [8j+7:8j], the AXI lane order) from the variable fields
// v = {source IP, destination IP, UDP source port, DestQP} (VB bits; IPv4 in the low 32
// bits of each address).
localparam integer VB = 128 + 128 + 16 + 24;
localparam integer L3B = 76;
`ifdef ROCE_NP_FAULT_NH6
localparam [7:0] NH6 = 8'd6;
`else
localparam [7:0] NH6 = 8'd17;
`endif

function [8*L3B-1:0] cnp_l3(input v6, input [5:0] dscp, input [VB-1:0] v);
    integer k, u;
    reg [19:0] sum;
    begin
        cnp_l3 = {8*L3B{1'b0}};
        if (v6) begin
            // version 6, traffic class {DSCP, ECN 0}, flow label 0, payload 40, UDP, hop 64
            cnp_l3[8*0 +: 8] = {4'h6, dscp[5:2]}; cnp_l3[8*1 +: 8] = {dscp[1:0], 6'd0};
            cnp_l3[8*5 +: 8] = 8'd40; cnp_l3[8*6 +: 8] = NH6; cnp_l3[8*7 +: 8] = 8'd64;
            for (k = 0; k < 16; k = k + 1) begin
                cnp_l3[8*(8 + k) +: 8] = v[VB - 1 - 8*k -: 8];     // source: the local IP
                cnp_l3[8*(24 + k) +: 8] = v[VB - 129 - 8*k -: 8];  // destination: the peer
            end
            u = 40;
        end else begin
            // IPv4: version 4, IHL 5, DSCP, ECN 0, total 60, id 0, DF, TTL 64, UDP
            cnp_l3[8*0 +: 8] = 8'h45; cnp_l3[8*1 +: 8] = {dscp, 2'b00};
            cnp_l3[8*3 +: 8] = 8'd60;
            cnp_l3[8*6 +: 8] = 8'h40; cnp_l3[8*8 +: 8] = 8'd64; cnp_l3[8*9 +: 8] = 8'd17;
            for (k = 0; k < 4; k = k + 1) begin
                cnp_l3[8*(12 + k) +: 8] = v[VB - 97 - 8*k -: 8];
                cnp_l3[8*(16 + k) +: 8] = v[VB - 225 - 8*k -: 8];
            end
            sum = 20'd0;
            for (k = 0; k < 20; k = k + 2)
                sum = sum + {4'd0, cnp_l3[8*k +: 8], cnp_l3[8*(k + 1) +: 8]};
            sum = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
            sum = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
            cnp_l3[8*10 +: 8] = ~sum[15:8]; cnp_l3[8*11 +: 8] = ~sum[7:0];
            u = 20;
        end
        // UDP: source port, 4791, length 40, checksum 0
        cnp_l3[8*u +: 8] = v[39:32]; cnp_l3[8*(u + 1) +: 8] = v[31:24];
        cnp_l3[8*(u + 2) +: 8] = 8'h12; cnp_l3[8*(u + 3) +: 8] = 8'hB7;
        cnp_l3[8*(u + 5) +: 8] = 8'd40;
        // BTH: CNP, pkey 0xFFFF, BECN, DestQP; PSN 0; then 16 reserved bytes (zero)
        cnp_l3[8*(u + 8) +: 8] = 8'h81; cnp_l3[8*(u + 10) +: 16] = 16'hFFFF;
        cnp_l3[8*(u + 12) +: 8] = 8'h40;
        cnp_l3[8*(u + 13) +: 8] = v[23:16]; cnp_l3[8*(u + 14) +: 8] = v[15:8];
        cnp_l3[8*(u + 15) +: 8] = v[7:0];
    end
endfunction

// ICRC (IBA A17): CRC-32 over 8 x 0xFF, the IP header with the variant fields as ones
// (IPv4: TOS, TTL, checksum; IPv6: traffic class, flow label, hop limit), UDP with its
// checksum as ones, BTH with byte 4 as ones, the reserved bytes.
function [31:0] icrc_of(input v6, input [8*L3B-1:0] h);
    integer k, t, u;
    reg [31:0] c;
    reg [7:0] d;
    begin
        c = 32'hFFFFFFFF;
        u = v6 ? 40 : 20;
        for (k = -8; k < u + 36; k = k + 1) begin
            if (k < 0)
                d = 8'hFF;
            else if (v6)
                d = (k == 0) ? (h[7:0] | 8'h0F)
                    : (k == 1 || k == 2 || k == 3 || k == 7) ? 8'hFF : h[8*k +: 8];
            else
                d = (k == 1 || k == 8 || k == 10 || k == 11) ? 8'hFF : h[8*k +: 8];
            if (k == u + 6 || k == u + 7 || k == u + 12)
                d = 8'hFF;
            for (t = 0; t < 8; t = t + 1)
                c = (c[0] ^ d[t]) ? ((c >> 1) ^ 32'hEDB88320) : (c >> 1);
        end
        icrc_of = ~c;
    end
endfunction

// The ICRC is affine in v (the masked bytes hide the DSCP and the checksum): ICRC0 for
// v = 0, and per output bit b the v bits that flip it (row b at [b*VB +: VB]), so the
// hardware is 32 parity trees per family, not a byte-serial CRC chain. A data bit at
// stream bit n (of N, LSB first) flips the state by the polynomial, which the N-1-n later
// steps carry on as a zero-data CRC: one backward pass gives every bit's column (cheap to
// elaborate: a CRC per column made yosys spend minutes here).
localparam integer NSTREAM = 8 * (8 + L3B);
function [32*VB-1:0] icrc_rows(input v6);
    integer n, k, f, t, u, nbits;
    reg [31:0] g;
    reg [32*NSTREAM-1:0] hh;  // the column of stream bit n at [32n +: 32]
    begin  // every bit of icrc_rows is set below
        u = v6 ? 40 : 20;
        nbits = 8 * (8 + u + 36);
        g = 32'hEDB88320;
        for (n = NSTREAM - 1; n >= 0; n = n - 1) begin
            if (n < nbits) begin
                hh[32*n +: 32] = g;
                g = g[0] ? ((g >> 1) ^ 32'hEDB88320) : (g >> 1);
            end
        end
        for (f = 0; f < VB; f = f + 1)
            for (t = 0; t < 32; t = t + 1)
                icrc_rows[t*VB + f] = 1'b0;
        // v bit (hi - 7 + t) is bit t of l3 byte k: stream bit 8 * (8 + k) + t
        for (t = 0; t < 8; t = t + 1) begin
            for (f = 0; f < (v6 ? 16 : 4); f = f + 1) begin
                k = (v6 ? 8 : 12) + f;
                for (n = 0; n < 32; n = n + 1)
                    icrc_rows[n*VB + (v6 ? VB - 1 : VB - 97) - 8*f - 7 + t] = hh[32*(8*(8 + k) + t) + n];
                k = (v6 ? 24 : 16) + f;
                for (n = 0; n < 32; n = n + 1)
                    icrc_rows[n*VB + (v6 ? VB - 129 : VB - 225) - 8*f - 7 + t] = hh[32*(8*(8 + k) + t) + n];
            end
            for (f = 0; f < 2; f = f + 1)
                for (n = 0; n < 32; n = n + 1)
                    icrc_rows[n*VB + 39 - 8*f - 7 + t] = hh[32*(8*(8 + u + f) + t) + n];
            for (f = 0; f < 3; f = f + 1)
                for (n = 0; n < 32; n = n + 1)
                    icrc_rows[n*VB + 23 - 8*f - 7 + t] = hh[32*(8*(8 + u + 13 + f) + t) + n];
        end
    end
endfunction

localparam [31:0] ICRC0_4 = icrc_of(1'b0, cnp_l3(1'b0, 6'd0, {VB{1'b0}}));
localparam [31:0] ICRC0_6 = icrc_of(1'b1, cnp_l3(1'b1, 6'd0, {VB{1'b0}}));
localparam [32*VB-1:0] ROWS_4 = icrc_rows(1'b0);
localparam [32*VB-1:0] ROWS_6 = icrc_rows(1'b1);

// the head of the queue, unpacked
wire         h_v6   = q0[QW-1];
wire         h_tag  = q0[QW-2];
wire [11:0]  h_vid  = q0[QW-3 -: 12];
wire [127:0] h_ip   = q0[QW-15 -: 128];
wire [23:0]  h_qpn  = q0[QW-143 -: 24];
wire [47:0]  h_mac  = q0[QW-167 -: 48];
wire [15:0]  h_sport = q0[15:0];

wire [VB-1:0] h_v = {h_v6 ? local_ip6 : {96'd0, local_ip4}, h_ip, h_sport, h_qpn};
wire [31:0]   icrc;
genvar gj;
generate
    for (gj = 0; gj < 32; gj = gj + 1) begin : g_icrc
        assign icrc[gj] = h_v6 ? ICRC0_6[gj] ^ (^(h_v & ROWS_6[gj*VB +: VB]))
                               : ICRC0_4[gj] ^ (^(h_v & ROWS_4[gj*VB +: VB]));
    end
endgenerate

`ifdef ROCE_NP_FAULT_PCP
wire [2:0] tag_pcp = 3'd0;
`else
wire [2:0] tag_pcp = cnp_pcp;
`endif

// IP header .. ICRC (80 bytes; IPv4 60, then zeros), the ICRC least significant byte first
wire [8*L3B-1:0] l3 = cnp_l3(h_v6, cnp_dscp, h_v);
wire [8*80-1:0]  l3i = h_v6 ? {icrc, l3} : {160'd0, icrc, l3[8*56-1:0]};
wire [15:0]      etype = h_v6 ? 16'hDD86 : 16'h0008;  // 0x86DD / 0x0800, lane order
reg  [8*12-1:0]  macs;
integer m;
always @* begin
    for (m = 0; m < 6; m = m + 1) begin
        macs[8*m +: 8] = h_mac[47 - 8*m -: 8];
        macs[8*(6 + m) +: 8] = local_mac[47 - 8*m -: 8];
    end
end
wire [8*MAX_BYTES-1:0] frame = h_tag
    ? {l3i, etype, h_vid[7:0], tag_pcp, 1'b0, h_vid[11:8], 16'h0081, macs}
    : {32'd0, l3i, etype, macs};
wire [1:0] h_kind = {h_v6, h_tag};

// ---------------------------------------------------------------- send
reg [NBEATS*DATA_WIDTH-1:0] tx_data;  // the frame, shifted down a beat per transfer
reg [BW-1:0]                tx_left;  // beats after this one
reg [KEEP_WIDTH-1:0]        tx_keep;  // tkeep of the last beat
wire tx_last = tx_left == {BW{1'b0}};
assign m_axis_tdata  = tx_data[DATA_WIDTH-1:0];
assign m_axis_tkeep  = tx_last ? tx_keep : {KEEP_WIDTH{1'b1}};
assign m_axis_tvalid = tx_busy;
assign m_axis_tlast  = tx_busy && tx_last;

localparam integer L0 = kind_last(0), L1 = kind_last(1), L2 = kind_last(2), L3 = kind_last(3);
localparam [BW-1:0] LAST0 = L0[BW-1:0], LAST1 = L1[BW-1:0], LAST2 = L2[BW-1:0],
                    LAST3 = L3[BW-1:0];

function [KEEP_WIDTH-1:0] keep_of(input integer n);
    integer b;
    begin
        for (b = 0; b < KEEP_WIDTH; b = b + 1)
            keep_of[b] = b < n;
    end
endfunction

// ---------------------------------------------------------------- state
integer s;
always @(posedge clk) begin
    now <= now + 32'd1;

    // take: the key is looked up now, decided next cycle
    look_valid <= take && ce_data && (|match);
    look_hit <= first;
    look_ip <= rec_ip_src;
    look_v6 <= rec_v6;
    look_tag <= rec_vlan_valid;
    look_vid <= rec_vlan_vid;

    // decide
    if (look_valid)
        stat_ce <= stat_ce + 32'd1;
    if (decide) begin
        slot_sent[hit_slot] <= 1'b1;
        slot_last[hit_slot] <= now;
        stat_cnp <= stat_cnp + 32'd1;
    end
    // the queue: the head leaves on load, a decided CNP joins at the tail
    if (load) begin
        q0 <= q1;
        q0_valid <= q1_valid;
        q1_valid <= 1'b0;
        if (decide) begin
            if (q1_valid) begin
                q1 <= ctx;
                q1_valid <= 1'b1;
            end else begin
                q0 <= ctx;
                q0_valid <= 1'b1;
            end
        end
    end else if (decide) begin
        if (q0_valid) begin
            q1 <= ctx;
            q1_valid <= 1'b1;
        end else begin
            q0 <= ctx;
            q0_valid <= 1'b1;
        end
    end

    // slot keys, at once
    if (cfg_we) begin
        for (s = 0; s < SLOTS; s = s + 1) begin
            if ({1'b0, cfg_addr[7:4]} == s[4:0] + 5'd1) begin
                case (cfg_addr[3:0])
                    4'd0: begin
                        slot_valid[s] <= cfg_wdata[31];
                        slot_v6[s] <= cfg_wdata[30];
                        slot_lqpn[s] <= cfg_wdata[23:0];
                    end
                    4'd2: slot_pip[s][127:96] <= cfg_wdata;
                    4'd3: slot_pip[s][95:64] <= cfg_wdata;
                    4'd4: slot_pip[s][63:32] <= cfg_wdata;
                    4'd5: slot_pip[s][31:0] <= cfg_wdata;
                    default: ;
                endcase
            end
        end
    end
    // the rest a cycle later, after the decision: a slot rewritten when a record of the
    // old flow was taken starts clean
    cfgq_we <= cfg_we;
    cfgq_addr <= cfg_addr;
    cfgq_wdata <= cfg_wdata;
    if (cfgq_we) begin
        case (cfgq_addr)
            8'h00: interval <= cfgq_wdata;
            8'h01: local_mac[47:32] <= cfgq_wdata[15:0];
            8'h02: local_mac[31:0] <= cfgq_wdata;
            8'h03: local_ip4 <= cfgq_wdata;
            8'h04: cnp_dscp <= cfgq_wdata[5:0];
            8'h05: cnp_pcp <= cfgq_wdata[2:0];
            8'h06: local_ip6[127:96] <= cfgq_wdata;
            8'h07: local_ip6[95:64] <= cfgq_wdata;
            8'h08: local_ip6[63:32] <= cfgq_wdata;
            8'h09: local_ip6[31:0] <= cfgq_wdata;
            default: ;
        endcase
        for (s = 0; s < SLOTS; s = s + 1) begin
            if ({1'b0, cfgq_addr[7:4]} == s[4:0] + 5'd1) begin
                case (cfgq_addr[3:0])
`ifndef ROCE_NP_FAULT_REUSE
                    4'd0: slot_sent[s] <= 1'b0;  // a new context starts a new flow
`endif
                    4'd1: slot_pqpn[s] <= cfgq_wdata[23:0];
                    4'd6: slot_pmac[s][47:32] <= cfgq_wdata[15:0];
                    4'd7: slot_pmac[s][31:0] <= cfgq_wdata;
                    4'd8: slot_sport[s] <= cfgq_wdata[15:0];
                    default: ;
                endcase
            end
        end
    end

    // load and send
    if (tx_busy) begin
        if (m_axis_tready) begin
            tx_data <= tx_data >> DATA_WIDTH;
            tx_left <= tx_left - 1'b1;
            if (tx_last)
                tx_busy <= 1'b0;
        end
    end else if (q0_valid) begin
        tx_busy <= 1'b1;
        tx_data <= {{(NBEATS*DATA_WIDTH - 8*MAX_BYTES){1'b0}}, frame};
        case (h_kind)
            2'd0: begin tx_left <= LAST0; tx_keep <= keep_of(kind_keep(0)); end
            2'd1: begin tx_left <= LAST1; tx_keep <= keep_of(kind_keep(1)); end
            2'd2: begin tx_left <= LAST2; tx_keep <= keep_of(kind_keep(2)); end
            default: begin tx_left <= LAST3; tx_keep <= keep_of(kind_keep(3)); end
        endcase
    end

    if (rst) begin
        now <= 32'd0;
        interval <= 32'd0;
        local_mac <= 48'd0;
        local_ip4 <= 32'd0;
        local_ip6 <= 128'd0;
        cnp_dscp <= 6'd0;
        cnp_pcp <= 3'd0;
        cfgq_we <= 1'b0;
        cfgq_addr <= 8'd0;
        cfgq_wdata <= 32'd0;
        look_valid <= 1'b0;
        look_hit <= {SLOTS{1'b0}};
        look_ip <= 128'd0;
        look_v6 <= 1'b0;
        look_tag <= 1'b0;
        look_vid <= 12'd0;
        q0 <= {QW{1'b0}};
        q1 <= {QW{1'b0}};
        q0_valid <= 1'b0;
        q1_valid <= 1'b0;
        tx_busy <= 1'b0;
        tx_data <= {(NBEATS*DATA_WIDTH){1'b0}};
        tx_left <= {BW{1'b0}};
        tx_keep <= {KEEP_WIDTH{1'b0}};
        stat_ce <= 32'd0;
        stat_cnp <= 32'd0;
        for (s = 0; s < SLOTS; s = s + 1) begin
            slot_valid[s] <= 1'b0;
            slot_v6[s] <= 1'b0;
            slot_sent[s] <= 1'b0;
            slot_last[s] <= 32'd0;
            slot_lqpn[s] <= 24'd0;
            slot_pqpn[s] <= 24'd0;
            slot_pip[s] <= 128'd0;
            slot_pmac[s] <= 48'd0;
            slot_sport[s] <= 16'd0;
        end
    end
end

endmodule

`resetall
