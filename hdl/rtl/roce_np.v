/*
 * rocelab: RoCEv2 notification point (the DCQCN NP of a receiving NIC).
 *
 * Consumes roce_parser's result records (named fields, never bit offsets of res_data) and
 * turns CE-marked RoCEv2 data frames into CNPs (BTH opcode 0x81, BECN set, 16 reserved
 * bytes, ICRC) to the sender's QP, at most one per flow per interval.
 *
 * - Flow = one slot of a small QP context table written through cfg_* (as a driver
 *   would): the local QP number a data frame targets (its BTH DestQP) and the peer's IP
 *   (the frame's IP source); the slot holds what the CNP needs: the peer's QP (the CNP's
 *   DestQP), the next-hop MAC, the peer's IP, the UDP source port.
 * - Rate limit: per slot, a CNP when the slot never sent one or when at least
 *   cfg interval cycles passed since its last CNP (the last CNP's cycle is kept, as
 *   controller.hosts.dcqcn.NotificationPoint keeps its ns). A CE frame inside the
 *   interval is counted, not answered.
 * - Output: IPv4, untagged CNP frames of 74 bytes on m_axis (byte 0 in tdata[7:0]), IPv4
 *   header checksum and ICRC computed here. One CNP may wait while one is sent; with both
 *   taken, rec_ready falls (backpressure on the parser, never a lost CNP).
 * - Records of frames with errors, non-RoCE, RoCEv1, IPv6 or CNPs are taken and ignored.
 *
 * Register map (cfg_addr, 32-bit words): 0x00 interval (cycles), 0x01 local MAC[47:32],
 * 0x02 local MAC[31:0], 0x03 local IPv4, 0x04 CNP DSCP (6 bits);
 * slot s at 0x10 + 8*s: +0 {valid, 7'b0, local QPN}, +1 peer QPN, +2 peer IPv4,
 * +3 next-hop MAC[47:32], +4 next-hop MAC[31:0], +5 UDP source port.
 *
 * Test-only faults (defines, used only by tests/hdl to prove the checks can fail):
 * ROCE_NP_FAULT_INTERVAL halves the interval, ROCE_NP_FAULT_QP sends to the local QP,
 * ROCE_NP_FAULT_REUSE lets a rewritten slot keep the previous flow's rate-limit state.
 *
 * Slot reuse: writing a slot's word +0 starts a new flow there: its rate-limit state is
 * cleared, also when a record of the old flow is taken in the same cycle (the write wins),
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
localparam integer FRAME_BYTES = 74;  // 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 16 + 4 ICRC
localparam integer NBEATS = (FRAME_BYTES + BYTES - 1) / BYTES;
localparam integer LAST_BYTES = FRAME_BYTES - (NBEATS - 1) * BYTES;
localparam integer SW = (SLOTS > 1) ? $clog2(SLOTS) : 1;
localparam integer BW = (NBEATS > 1) ? $clog2(NBEATS) : 1;

// ---------------------------------------------------------------- configuration
reg [31:0] interval;
reg [47:0] local_mac;
reg [31:0] local_ip;
reg [5:0]  cnp_dscp;
reg        slot_valid [0:SLOTS-1];
reg [23:0] slot_lqpn  [0:SLOTS-1];
reg [23:0] slot_pqpn  [0:SLOTS-1];
reg [31:0] slot_pip   [0:SLOTS-1];
reg [47:0] slot_pmac  [0:SLOTS-1];
reg [15:0] slot_sport [0:SLOTS-1];
// rate limiter state per slot
reg        slot_sent  [0:SLOTS-1];
reg [31:0] slot_last  [0:SLOTS-1];

reg [31:0] now;  // free-running cycle count; differences are taken modulo 2^32

`ifdef ROCE_NP_FAULT_INTERVAL
wire [31:0] eff_interval = {1'b0, interval[31:1]};
`else
wire [31:0] eff_interval = interval;
`endif

// ---------------------------------------------------------------- record lookup
reg          hit;
reg [SW-1:0] hit_slot;
integer      i;
always @* begin
    hit = 1'b0;
    hit_slot = {SW{1'b0}};
    for (i = SLOTS - 1; i >= 0; i = i - 1) begin
        if (slot_valid[i] && slot_lqpn[i] == rec_bth_dqpn && slot_pip[i] == rec_ip_src[31:0]) begin
            hit = 1'b1;
            hit_slot = i[SW-1:0];
        end
    end
end

wire ce_data = rec_is_roce && !rec_is_cnp && rec_ecn_ce && rec_roce_version == 2'd2
               && rec_ip_version == 4'd4 && rec_ip_src[127:32] == 96'd0
               && !rec_err_truncated && !rec_err_ip_csum && !rec_err_icrc
               && !rec_err_unsupported;
wire [31:0] since = now - slot_last[hit_slot];
wire allow = !slot_sent[hit_slot] || since >= eff_interval;

reg          pend_valid;
reg [23:0]   pend_qpn;   // the decided CNP's context, copied from its slot
reg [31:0]   pend_ip;
reg [47:0]   pend_mac;
reg [15:0]   pend_sport;
reg          tx_busy;
assign rec_ready = !pend_valid;
wire take = rec_valid && rec_ready;

// ---------------------------------------------------------------- CNP being sent
reg [23:0] tx_qpn;
reg [31:0] tx_ip;
reg [47:0] tx_mac;
reg [15:0] tx_sport;
reg [47:0] tx_smac;  // the global fields too: a cfg write never changes a CNP in flight
reg [31:0] tx_sip;
reg [5:0]  tx_dscp;
reg [BW-1:0] beat;

// The CNP's header, bytes 0..69 (byte j at bits [8j+7:8j], the AXI lane order), from its
// variable fields; v = {local IPv4, peer IPv4, UDP source port, DestQP} (VB bits).
localparam integer HDR_BYTES = FRAME_BYTES - 4;
localparam integer VB = 32 + 32 + 16 + 24;

function [8*HDR_BYTES-1:0] cnp_hdr(input [47:0] dmac, input [47:0] smac, input [5:0] dscp,
                                   input [VB-1:0] v);
    integer k;
    reg [19:0] sum;
    begin
        cnp_hdr = {8*HDR_BYTES{1'b0}};
        for (k = 0; k < 6; k = k + 1) begin
            cnp_hdr[8*k +: 8] = dmac[47 - 8*k -: 8];
            cnp_hdr[8*(6 + k) +: 8] = smac[47 - 8*k -: 8];
        end
        cnp_hdr[8*12 +: 16] = 16'h0008;  // EtherType 0x0800
        // IPv4: version 4, IHL 5, DSCP, ECN 0, total 60, id 0, DF, TTL 64, UDP
        cnp_hdr[8*14 +: 8] = 8'h45; cnp_hdr[8*15 +: 8] = {dscp, 2'b00};
        cnp_hdr[8*17 +: 8] = 8'd60;
        cnp_hdr[8*20 +: 8] = 8'h40; cnp_hdr[8*22 +: 8] = 8'd64; cnp_hdr[8*23 +: 8] = 8'd17;
        for (k = 0; k < 4; k = k + 1) begin
            cnp_hdr[8*(26 + k) +: 8] = v[VB - 1 - 8*k -: 8];   // source: the local IP
            cnp_hdr[8*(30 + k) +: 8] = v[VB - 33 - 8*k -: 8];  // destination: the peer
        end
        sum = 20'd0;
        for (k = 14; k < 34; k = k + 2)
            sum = sum + {4'd0, cnp_hdr[8*k +: 8], cnp_hdr[8*(k + 1) +: 8]};
        sum = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
        sum = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
        cnp_hdr[8*24 +: 8] = ~sum[15:8]; cnp_hdr[8*25 +: 8] = ~sum[7:0];
        // UDP: source port, 4791, length 40, checksum 0
        cnp_hdr[8*34 +: 8] = v[39:32]; cnp_hdr[8*35 +: 8] = v[31:24];
        cnp_hdr[8*36 +: 8] = 8'h12; cnp_hdr[8*37 +: 8] = 8'hB7; cnp_hdr[8*39 +: 8] = 8'd40;
        // BTH: CNP, pkey 0xFFFF, BECN, DestQP; PSN 0; then 16 reserved bytes (zero)
        cnp_hdr[8*42 +: 8] = 8'h81; cnp_hdr[8*44 +: 16] = 16'hFFFF; cnp_hdr[8*46 +: 8] = 8'h40;
        cnp_hdr[8*47 +: 8] = v[23:16]; cnp_hdr[8*48 +: 8] = v[15:8]; cnp_hdr[8*49 +: 8] = v[7:0];
    end
endfunction

// ICRC (IBA A17): CRC-32 over 8 x 0xFF, the IP header with TOS, TTL and checksum as ones,
// UDP with its checksum as ones, BTH with byte 4 as ones, the reserved bytes.
function [31:0] icrc_of(input [8*HDR_BYTES-1:0] h);
    integer k, t;
    reg [31:0] c;
    reg [7:0] d;
    begin
        c = 32'hFFFFFFFF;
        for (k = 6; k < HDR_BYTES; k = k + 1) begin
            d = (k < 14 || k == 15 || k == 22 || k == 24 || k == 25 || k == 40 || k == 41
                 || k == 46) ? 8'hFF : h[8*k +: 8];
            for (t = 0; t < 8; t = t + 1)
                c = (c[0] ^ d[t]) ? ((c >> 1) ^ 32'hEDB88320) : (c >> 1);
        end
        icrc_of = ~c;
    end
endfunction

// The ICRC is affine in v (the masked bytes hide the DSCP, the MACs and the checksum):
// ICRC0 for v = 0, and per output bit j the v bits that flip it (row j at [j*VB +: VB]),
// so the hardware is 32 parity trees over VB bits, not a byte-serial CRC chain.
function [32*VB-1:0] icrc_rows(input integer unused);
    integer vi, bj;
    reg [31:0] col;
    begin
        icrc_rows = {32*VB{1'b0}};
        for (vi = 0; vi < VB; vi = vi + 1) begin
            col = icrc_of(cnp_hdr(48'd0, 48'd0, 6'd0, {{(VB-1){1'b0}}, 1'b1} << vi))
                  ^ icrc_of(cnp_hdr(48'd0, 48'd0, 6'd0, {VB{1'b0}}));
            for (bj = 0; bj < 32; bj = bj + 1)
                icrc_rows[bj*VB + vi] = col[bj] & (unused == 0);
        end
    end
endfunction

localparam [31:0] ICRC0 = icrc_of(cnp_hdr(48'd0, 48'd0, 6'd0, {VB{1'b0}}));
localparam [32*VB-1:0] ICRC_ROWS = icrc_rows(0);

wire [VB-1:0] tx_v = {tx_sip, tx_ip, tx_sport, tx_qpn};
wire [31:0]   icrc;
genvar gj;
generate
    for (gj = 0; gj < 32; gj = gj + 1) begin : g_icrc
        assign icrc[gj] = ICRC0[gj] ^ (^(tx_v & ICRC_ROWS[gj*VB +: VB]));
    end
endgenerate

// The frame, padded to whole beats; the ICRC on the wire least significant byte first.
wire [NBEATS*DATA_WIDTH-1:0] frame = {{(NBEATS*DATA_WIDTH - 8*FRAME_BYTES){1'b0}}, icrc,
                                      cnp_hdr(tx_mac, tx_smac, tx_dscp, tx_v)};

localparam integer LAST_BEAT = NBEATS - 1;
wire last_beat = ({{(32-BW){1'b0}}, beat} == LAST_BEAT);
assign m_axis_tdata  = frame[beat*DATA_WIDTH +: DATA_WIDTH];
assign m_axis_tkeep  = last_beat ? {{(KEEP_WIDTH-LAST_BYTES){1'b0}}, {LAST_BYTES{1'b1}}}
                                 : {KEEP_WIDTH{1'b1}};
assign m_axis_tvalid = tx_busy;
assign m_axis_tlast  = tx_busy && last_beat;

// ---------------------------------------------------------------- state
integer s;
always @(posedge clk) begin
    now <= now + 32'd1;
    if (take && ce_data && hit) begin
        stat_ce <= stat_ce + 32'd1;
        if (allow) begin
            slot_sent[hit_slot] <= 1'b1;
            slot_last[hit_slot] <= now;
            pend_valid <= 1'b1;
`ifdef ROCE_NP_FAULT_QP
            pend_qpn <= slot_lqpn[hit_slot];
`else
            pend_qpn <= slot_pqpn[hit_slot];
`endif
            pend_ip <= slot_pip[hit_slot];
            pend_mac <= slot_pmac[hit_slot];
            pend_sport <= slot_sport[hit_slot];
            stat_cnp <= stat_cnp + 32'd1;
        end
    end

    // after the record: a slot rewritten in this cycle starts clean
    if (cfg_we) begin
        case (cfg_addr)
            8'h00: interval <= cfg_wdata;
            8'h01: local_mac[47:32] <= cfg_wdata[15:0];
            8'h02: local_mac[31:0] <= cfg_wdata;
            8'h03: local_ip <= cfg_wdata;
            8'h04: cnp_dscp <= cfg_wdata[5:0];
            default: ;
        endcase
        for (s = 0; s < SLOTS; s = s + 1) begin
            if (cfg_addr[7:3] == 5'd2 + s[4:0]) begin
                case (cfg_addr[2:0])
                    3'd0: begin
                        slot_valid[s] <= cfg_wdata[31];
                        slot_lqpn[s] <= cfg_wdata[23:0];
`ifndef ROCE_NP_FAULT_REUSE
                        slot_sent[s] <= 1'b0;  // a new context starts a new flow
`endif
                    end
                    3'd1: slot_pqpn[s] <= cfg_wdata[23:0];
                    3'd2: slot_pip[s] <= cfg_wdata;
                    3'd3: slot_pmac[s][47:32] <= cfg_wdata[15:0];
                    3'd4: slot_pmac[s][31:0] <= cfg_wdata;
                    3'd5: slot_sport[s] <= cfg_wdata[15:0];
                    default: ;
                endcase
            end
        end
    end

    if (tx_busy) begin
        if (m_axis_tready) begin
            if (last_beat) begin
                tx_busy <= 1'b0;
                beat <= {BW{1'b0}};
            end else begin
                beat <= beat + 1'b1;
            end
        end
    end else if (pend_valid) begin
        tx_busy <= 1'b1;
        beat <= {BW{1'b0}};
        pend_valid <= 1'b0;
        tx_qpn <= pend_qpn;
        tx_ip <= pend_ip;
        tx_mac <= pend_mac;
        tx_sport <= pend_sport;
        tx_smac <= local_mac;
        tx_sip <= local_ip;
        tx_dscp <= cnp_dscp;
    end

    if (rst) begin
        now <= 32'd0;
        interval <= 32'd0;
        local_mac <= 48'd0;
        local_ip <= 32'd0;
        cnp_dscp <= 6'd0;
        pend_valid <= 1'b0;
        pend_qpn <= 24'd0;
        pend_ip <= 32'd0;
        pend_mac <= 48'd0;
        pend_sport <= 16'd0;
        tx_busy <= 1'b0;
        beat <= {BW{1'b0}};
        tx_qpn <= 24'd0;
        tx_ip <= 32'd0;
        tx_mac <= 48'd0;
        tx_sport <= 16'd0;
        tx_smac <= 48'd0;
        tx_sip <= 32'd0;
        tx_dscp <= 6'd0;
        stat_ce <= 32'd0;
        stat_cnp <= 32'd0;
        for (s = 0; s < SLOTS; s = s + 1) begin
            slot_valid[s] <= 1'b0;
            slot_sent[s] <= 1'b0;
            slot_last[s] <= 32'd0;
            slot_lqpn[s] <= 24'd0;
            slot_pqpn[s] <= 24'd0;
            slot_pip[s] <= 32'd0;
            slot_pmac[s] <= 48'd0;
            slot_sport[s] <= 16'd0;
        end
    end
end

endmodule

`resetall
