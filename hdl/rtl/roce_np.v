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
 * ROCE_NP_FAULT_INTERVAL halves the interval, ROCE_NP_FAULT_QP sends to the local QP.
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
reg [SW-1:0] pend_slot;
reg          tx_busy;
assign rec_ready = !pend_valid;
wire take = rec_valid && rec_ready;

// ---------------------------------------------------------------- CNP being sent
reg [23:0] tx_qpn;
reg [31:0] tx_ip;
reg [47:0] tx_mac;
reg [15:0] tx_sport;
reg [BW-1:0] beat;

// Frame bytes, byte j at bits [8j+7:8j] (the AXI lane order); padded to whole beats.
reg [NBEATS*DATA_WIDTH-1:0] frame;
reg [7:0]  hdr [0:FRAME_BYTES-1];
reg [31:0] crc;
reg [19:0] sum;
reg [15:0] csum;
integer    j, b;

function [31:0] crc_byte(input [31:0] c_in, input [7:0] d);
    integer k;
    reg [31:0] c;
    begin
        c = c_in;
        for (k = 0; k < 8; k = k + 1)
            c = (c[0] ^ d[k]) ? ((c >> 1) ^ 32'hEDB88320) : (c >> 1);
        crc_byte = c;
    end
endfunction

always @* begin
    for (j = 0; j < FRAME_BYTES; j = j + 1)
        hdr[j] = 8'h00;
    // Ethernet
    for (j = 0; j < 6; j = j + 1) begin
        hdr[j]     = tx_mac[47 - 8*j -: 8];
        hdr[6 + j] = local_mac[47 - 8*j -: 8];
    end
    hdr[12] = 8'h08; hdr[13] = 8'h00;
    // IPv4: version 4, IHL 5, DSCP, ECN 0, total 60, id 0, DF, TTL 64, UDP
    hdr[14] = 8'h45; hdr[15] = {cnp_dscp, 2'b00};
    hdr[16] = 8'h00; hdr[17] = 8'd60;
    hdr[20] = 8'h40; hdr[22] = 8'd64; hdr[23] = 8'd17;
    for (j = 0; j < 4; j = j + 1) begin
        hdr[26 + j] = local_ip[31 - 8*j -: 8];
        hdr[30 + j] = tx_ip[31 - 8*j -: 8];
    end
    sum = 20'd0;
    for (j = 14; j < 34; j = j + 2)
        sum = sum + {4'd0, hdr[j], hdr[j + 1]};
    sum = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
    sum = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
    csum = ~sum[15:0];
    hdr[24] = csum[15:8]; hdr[25] = csum[7:0];
    // UDP: source port, 4791, length 40, checksum 0
    hdr[34] = tx_sport[15:8]; hdr[35] = tx_sport[7:0];
    hdr[36] = 8'h12; hdr[37] = 8'hB7;
    hdr[39] = 8'd40;
    // BTH: CNP, pkey 0xFFFF, BECN, DestQP; PSN 0; then 16 reserved bytes (zero)
    hdr[42] = 8'h81; hdr[44] = 8'hFF; hdr[45] = 8'hFF; hdr[46] = 8'h40;
    hdr[47] = tx_qpn[23:16]; hdr[48] = tx_qpn[15:8]; hdr[49] = tx_qpn[7:0];
    // ICRC (IBA A17): CRC-32 over 8 x 0xFF, the IP header with TOS, TTL and checksum as
    // ones, UDP with its checksum as ones, BTH with byte 4 as ones, the reserved bytes
    crc = 32'hFFFFFFFF;
    for (j = 0; j < 8; j = j + 1)
        crc = crc_byte(crc, 8'hFF);
    for (j = 14; j < 70; j = j + 1)
        crc = crc_byte(crc, (j == 15 || j == 22 || j == 24 || j == 25 || j == 40 || j == 41
                             || j == 46) ? 8'hFF : hdr[j]);
    crc = ~crc;
    // on the wire least significant byte first
    hdr[70] = crc[7:0]; hdr[71] = crc[15:8]; hdr[72] = crc[23:16]; hdr[73] = crc[31:24];
    frame = {NBEATS*DATA_WIDTH{1'b0}};
    for (b = 0; b < FRAME_BYTES; b = b + 1)
        frame[8*b +: 8] = hdr[b];
end

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
                        slot_sent[s] <= 1'b0;  // a new context starts a new flow
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

    if (take && ce_data && hit) begin
        stat_ce <= stat_ce + 32'd1;
        if (allow) begin
            slot_sent[hit_slot] <= 1'b1;
            slot_last[hit_slot] <= now;
            pend_valid <= 1'b1;
            pend_slot <= hit_slot;
            stat_cnp <= stat_cnp + 32'd1;
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
`ifdef ROCE_NP_FAULT_QP
        tx_qpn <= slot_lqpn[pend_slot];
`else
        tx_qpn <= slot_pqpn[pend_slot];
`endif
        tx_ip <= slot_pip[pend_slot];
        tx_mac <= slot_pmac[pend_slot];
        tx_sport <= slot_sport[pend_slot];
    end

    if (rst) begin
        now <= 32'd0;
        interval <= 32'd0;
        local_mac <= 48'd0;
        local_ip <= 32'd0;
        cnp_dscp <= 6'd0;
        pend_valid <= 1'b0;
        pend_slot <= {SW{1'b0}};
        tx_busy <= 1'b0;
        beat <= {BW{1'b0}};
        tx_qpn <= 24'd0;
        tx_ip <= 32'd0;
        tx_mac <= 48'd0;
        tx_sport <= 16'd0;
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
