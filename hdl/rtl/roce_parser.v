/*
 * rocelab: RoCEv2 / RoCEv1 header parser with an AXI4-Stream pass-through.
 *
 * Every frame on s_axis leaves on m_axis unchanged (same beats, same cycle: the data path
 * is combinational, so the parser adds no latency and no bubbles). Alongside, one
 * parse-result record per frame leaves on the res_valid/res_ready interface,
 * RECORD_LATENCY (3) cycles after the frame's last beat was accepted (res_ready high; a
 * stalled res_ready delays it). The record follows docs/parsed-record.md field for field;
 * its ports mirror controller/packets/fields.py FIELDS in order, and res_data is the same
 * record packed first-field-most-significant (Decoded.to_int() layout).
 *
 * How it works (staged for timing: issue 37; ~21.5 MHz at 64 bits when the record was one
 * combinational function of the buffered bytes and the position)
 * - The first HDR_BYTES bytes of a frame (the deepest header, tagged IPv6 + UDP + BTH +
 *   AtomicETH, ends at byte 106) are kept in hdr_q. With the last beat, P1 takes them
 *   (merged with that beat) with the VLAN tag stripped, so every later offset is a
 *   constant, and the frame length. P2 selects the UDP/BTH windows by the L3 kind and
 *   registers the lengths left after the BTH start and the IPv4 checksum's partial sums;
 *   P3 (rec_q) is the record. Each stage loads when empty or when the next one takes its
 *   content: P1 still loads while P2/P3 hold.
 * - The ICRC runs as a stream, DATA_WIDTH bits per cycle, from byte 0, two stages behind
 *   the input (C1, C2 below): bytes before the pseudo-LRH are forced to 0 (a zero CRC
 *   state stays zero over zero bytes), the 4 bytes before the IP header/GRH to 0xFF (the
 *   CRC32 initial value: with the 8 bytes 0xFF of the pseudo-LRH, 00 00 00 00 FF FF FF FF
 *   from a zero state equals FF x 8 from the 0xFFFFFFFF initial state), variant header
 *   bytes to 0xFF. It stops after the ICRC itself (the end the IP length gives); a CRC
 *   over data followed by its own CRC leaves the fixed residue 0xDEBB20E3, so no ICRC
 *   bytes are extracted. The last (partial) beat is moved to the top of the word so zeros
 *   lead it, and the CRC state is advanced separately by the number of valid bytes (CRC
 *   linearity). Each frame's verdict is queued and meets its record at the output.
 * - Backpressure: the data path stalls only on a last beat while P1 is full and cannot
 *   move on (res_ready low with the pipeline full). With res_ready high it never stalls.
 *
 * Assumptions: tkeep is all ones except on the last beat, where it is contiguous from
 * byte 0 (packed AXI4-Stream, as verilog-ethernet MACs emit). Frame lengths are counted
 * in POS_W bits and saturate far above any length an IP header can claim.
 */

`resetall
`timescale 1ns / 1ps
`default_nettype none

module roce_parser #(
    parameter DATA_WIDTH = 64,
    parameter KEEP_WIDTH = DATA_WIDTH / 8
) (
    input  wire                   clk,
    input  wire                   rst,

    input  wire [DATA_WIDTH-1:0]  s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]  s_axis_tkeep,
    input  wire                   s_axis_tvalid,
    output wire                   s_axis_tready,
    input  wire                   s_axis_tlast,

    output wire [DATA_WIDTH-1:0]  m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_tkeep,
    output wire                   m_axis_tvalid,
    input  wire                   m_axis_tready,
    output wire                   m_axis_tlast,

    output reg                    res_valid,
    input  wire                   res_ready,
    output wire [RECORD_BITS-1:0] res_data,
    output wire [47:0] res_eth_dst,
    output wire [47:0] res_eth_src,
    output wire res_vlan_valid,
    output wire [2:0] res_vlan_pcp,
    output wire [11:0] res_vlan_vid,
    output wire [15:0] res_ethertype,
    output wire [1:0] res_roce_version,
    output wire [3:0] res_ip_version,
    output wire [127:0] res_ip_src,
    output wire [127:0] res_ip_dst,
    output wire [5:0] res_dscp,
    output wire [1:0] res_ecn,
    output wire [7:0] res_ttl,
    output wire [15:0] res_udp_sport,
    output wire [15:0] res_udp_dport,
    output wire [7:0] res_bth_opcode,
    output wire res_bth_se,
    output wire res_bth_m,
    output wire [1:0] res_bth_pad,
    output wire [3:0] res_bth_tver,
    output wire [15:0] res_bth_pkey,
    output wire res_bth_fecn,
    output wire res_bth_becn,
    output wire [23:0] res_bth_dqpn,
    output wire res_bth_ackreq,
    output wire [23:0] res_bth_psn,
    output wire res_reth_valid,
    output wire [63:0] res_reth_va,
    output wire [31:0] res_reth_rkey,
    output wire [31:0] res_reth_dlen,
    output wire res_aeth_valid,
    output wire [7:0] res_aeth_syndrome,
    output wire [23:0] res_aeth_msn,
    output wire res_immdt_valid,
    output wire [31:0] res_immdt,
    output wire res_atomic_valid,
    output wire [63:0] res_atomic_va,
    output wire [31:0] res_atomic_rkey,
    output wire [63:0] res_atomic_swap,
    output wire [63:0] res_atomic_cmp,
    output wire res_atomicack_valid,
    output wire [63:0] res_atomicack_orig,
    output wire res_is_roce,
    output wire res_is_cnp,
    output wire res_ecn_ce,
    output wire res_is_pfc,
    output wire [7:0] res_pfc_cev,
    output wire [15:0] res_pfc_quanta0,
    output wire [15:0] res_pfc_quanta1,
    output wire [15:0] res_pfc_quanta2,
    output wire [15:0] res_pfc_quanta3,
    output wire [15:0] res_pfc_quanta4,
    output wire [15:0] res_pfc_quanta5,
    output wire [15:0] res_pfc_quanta6,
    output wire [15:0] res_pfc_quanta7,
    output wire res_is_pause,
    output wire [15:0] res_pause_time,
    output wire res_err_truncated,
    output wire res_err_ip_csum,
    output wire res_err_icrc,
    output wire res_err_unsupported
`ifdef FORMAL
    ,
    output wire [1:0] dbg_inflight,  // records in P1/P2 (hdl/formal/roce_parser_props.sv)
    output wire       dbg_last       // P2 (the stage before the output) holds a record
`endif
);

localparam RECORD_BITS = 1167;
// Cycles from a frame's last beat accepted to its record on res_valid (res_ready high).
// Documents the pipeline below; hdl/formal/roce_parser_props.sv proves it (a_latency).
/* verilator lint_off UNUSEDPARAM */
localparam RECORD_LATENCY = 3;
/* verilator lint_on UNUSEDPARAM */
localparam integer BYTES = DATA_WIDTH / 8;
localparam LOGB = $clog2(BYTES);
localparam HDR_BYTES = 106;
localparam NHB = (HDR_BYTES + BYTES - 1) / BYTES;  // header beats kept
localparam HB = NHB * BYTES;                       // header bytes kept
localparam POS_W = 24;
localparam [LOGB:0] BYTES_N = BYTES[LOGB:0];
localparam [POS_W-1:0] BYTES_P = BYTES[POS_W-1:0];
localparam [POS_W-1:0] POS_MAX = 24'hF00000;  // far above any IP end (< 64 KiB + 58)
localparam BEAT_W = $clog2(NHB + 1) + 1;
localparam [31:0] POLY = 32'hEDB88320;        // CRC-32, reflected
localparam [31:0] RESIDUE = 32'hDEBB20E3;     // CRC register after data + its own CRC

// ---------------------------------------------------------------------------------------
// CRC-32 as GF(2) matrices, computed at elaboration.

function [31:0] crc_zero_steps(input [31:0] s_in, input integer nbits);
    integer k;
    begin
        crc_zero_steps = s_in;
        for (k = 0; k < nbits; k = k + 1)
            crc_zero_steps = crc_zero_steps[0] ? ((crc_zero_steps >> 1) ^ POLY)
                                               : (crc_zero_steps >> 1);
    end
endfunction

// Row j (bits j*DATA_WIDTH +: DATA_WIDTH): the data bits that reach state bit j when a
// whole word is fed to a zero state. Data bit i is fed at step i (byte 0 first, LSB first).
function [32*DATA_WIDTH-1:0] crc_data_matrix(input integer unused);
    integer i, j;
    reg [31:0] v;
    begin
        crc_data_matrix = 0;
        v = POLY;
        for (i = DATA_WIDTH - 1; i >= 0; i = i - 1) begin
            for (j = 0; j < 32; j = j + 1)
                crc_data_matrix[j*DATA_WIDTH + i] = v[j] & (unused == 0);
            v = crc_zero_steps(v, 1);
        end
    end
endfunction

// Row j: the state bits that reach state bit j after nbytes zero bytes.
function [1023:0] crc_adv_matrix(input integer nbytes);
    integer i, j;
    reg [31:0] v;
    begin
        crc_adv_matrix = 1024'd0;
        for (i = 0; i < 32; i = i + 1) begin
            v = crc_zero_steps(32'd1 << i, 8 * nbytes);
            for (j = 0; j < 32; j = j + 1)
                crc_adv_matrix[j*32 + i] = v[j];
        end
    end
endfunction

// One advance matrix per bit of a byte count 1..BYTES: 1, 2, 4, ... BYTES bytes.
function [1024*(LOGB+1)-1:0] crc_adv_matrices(input integer unused);
    integer k;
    begin
        for (k = 0; k <= LOGB; k = k + 1)
            crc_adv_matrices[k*1024 +: 1024] = crc_adv_matrix((1 << k) + unused);
    end
endfunction

// One advance matrix per byte count 1..BYTES (used up to 16 bytes per beat).
function [1024*BYTES-1:0] crc_adv_counts(input integer unused);
    integer k;
    begin
        crc_adv_counts = 0;
        if (BYTES <= 16)
            for (k = 1; k <= BYTES; k = k + 1)
                crc_adv_counts[(k-1)*1024 +: 1024] = crc_adv_matrix(k + unused);
    end
endfunction

localparam [32*DATA_WIDTH-1:0] CRC_D = crc_data_matrix(0);
localparam [1024*(LOGB+1)-1:0] CRC_ADV = crc_adv_matrices(0);

function [31:0] mat_mul(input [1023:0] m, input [31:0] s);
    integer j;
    begin
        for (j = 0; j < 32; j = j + 1)
            mat_mul[j] = ^(s & m[j*32 +: 32]);
    end
endfunction

function [LOGB:0] popcount(input [KEEP_WIDTH-1:0] k);
    integer i;
    begin
        popcount = {(LOGB+1){1'b0}};
        for (i = 0; i < KEEP_WIDTH; i = i + 1)
            popcount = popcount + {{LOGB{1'b0}}, k[i]};
    end
endfunction


// ---------------------------------------------------------------------------------------
// Data path and beat bookkeeping.

reg  [HB*8-1:0]   hdr_q;
// Known from power-up (an FPGA's flop init): the ICRC's C1 reads beats of hdr_q the first
// frame has not written yet (their bytes cannot matter, but X would reach the CRC state).
initial hdr_q = {(HB*8){1'b0}};
reg  [POS_W-1:0]  pos_q;   // byte offset of the current beat
reg  [BEAT_W-1:0] beat_q;  // beat index, saturating at NHB
reg  [31:0]       crc_q;
reg  [RECORD_BITS-1:0] rec_q;

// The record pipeline's stage handshakes (P1 -> P2 -> P3 = rec_q/res_valid, below).
reg  v1, v2;  // P1, P2 hold a record in progress
wire p2_out;  // P2's record may move on (always, but in a test-only slow build)
wire rdy3 = !res_valid || res_ready;
wire rdy2 = !v2 || (rdy3 && p2_out);
wire rdy1 = !v1 || rdy2;

// A last beat waits until P1 can take its record.
wire stall = s_axis_tvalid && s_axis_tlast && !rdy1;
wire beat = s_axis_tvalid && s_axis_tready;

assign s_axis_tready = m_axis_tready && !stall;
assign m_axis_tdata  = s_axis_tdata;
assign m_axis_tkeep  = s_axis_tkeep;
assign m_axis_tvalid = s_axis_tvalid && !stall;
assign m_axis_tlast  = s_axis_tlast;

// The header bytes as seen during this beat: kept bytes plus the beat being accepted.
reg [HB*8-1:0] hdr;
integer hb_i;
always @* begin
    hdr = hdr_q;
    for (hb_i = 0; hb_i < NHB; hb_i = hb_i + 1)
        if (beat_q == hb_i[BEAT_W-1:0])
            hdr[hb_i*DATA_WIDTH +: DATA_WIDTH] = s_axis_tdata;
end

// Byte view of the header (the parser indexes bytes at offsets below 256).
wire [7:0] hb [0:255];
genvar hbi;
generate
    for (hbi = 0; hbi < 256; hbi = hbi + 1) begin : g_hb
        if (hbi < HB) begin : g_kept
            assign hb[hbi] = hdr[hbi*8 +: 8];
        end else begin : g_none
            assign hb[hbi] = 8'd0;
        end
    end
endgenerate

`define B(o) hb[(o)]
`define BE16(o) {hb[(o)], hb[(o) + 8'd1]}
`define BE32(o) {hb[(o)], hb[(o) + 8'd1], hb[(o) + 8'd2], hb[(o) + 8'd3]}

// ---------------------------------------------------------------------------------------
// ICRC stream: two stages behind the input (C1, C2), so no path runs from s_axis to the CRC.
// With each beat (C0) the frame's facts C1 needs are registered from hdr (the kept bytes
// plus this beat: what hdr_q holds once the beat is in, which C1 read before): the VLAN
// tag, the L3 kind, the IP end, whether the length field has arrived, and the beat index
// (all the substituted bytes lie in the kept header, so each byte's rule is a function of
// the index, the tag and the kind: a few LUT inputs, no position arithmetic in C1).
// C1 (d1_*: the beat accepted last cycle): its end against the IP end, the variant bytes
//    substituted and the ICRC's last bytes moved to the top of the word -> d2_*.
// C2 (d2_*): the CRC state advanced; on a frame's last beat the verdict (ICRC good) is
//    queued for the record (res_err_icrc), which meets it at the output.

localparam [1:0] K_OTHER = 2'd0, K_V4 = 2'd1, K_V6 = 2'd2, K_GRH = 2'd3;
localparam GW = 10;  // byte offsets within the kept header and one beat past it (< 1024)

wire             is_tagged = `BE16(8'd12) == 16'h8100;  // also P1's normalisation

// C0: from hdr, registered into d1_* with the beat.
wire [15:0]      c0_et = is_tagged ? `BE16(8'd16) : `BE16(8'd12);
wire [1:0]       c0_kind = c0_et == 16'h0800 ? K_V4 : c0_et == 16'h86DD ? K_V6
                         : c0_et == 16'h8915 ? K_GRH : K_OTHER;
wire [15:0]      c0_len16 = c0_kind == K_V4 ? (is_tagged ? `BE16(8'd20) : `BE16(8'd16))
                                            : (is_tagged ? `BE16(8'd22) : `BE16(8'd18));
wire [POS_W-1:0] c0_ip_end = (is_tagged ? 24'd18 : 24'd14) + (c0_kind == K_V4 ? 24'd0 : 24'd40)
                           + {8'd0, c0_len16};
// The IP end is final once the beat holding the length field (its last byte at IP start
// + 3 or + 5) has arrived: beat_q saturates at NHB, whose end is past any such byte.
wire [GW-1:0]    c0_len_pos = (is_tagged ? 10'd18 : 10'd14) + (c0_kind == K_V4 ? 10'd3 : 10'd5);
wire [GW-1:0]    c0_beat_end = ({{(GW-BEAT_W){1'b0}}, beat_q} + 10'd1) * BYTES[GW-1:0];
wire             c0_len_known = c0_kind != K_OTHER && c0_len_pos < c0_beat_end;

reg                  d1_v, d1_last;
reg [DATA_WIDTH-1:0] d1_data;
reg [LOGB:0]         d1_pos_lo;  // the beat's position, low bits (a multiple of BYTES)
reg [POS_W-1:0]      d1_pos_end; // the position just past the beat
reg [BEAT_W-1:0]     d1_beat;    // the beat index, saturating at NHB
reg                  d1_tagged, d1_len_known;
reg [1:0]            d1_kind;
reg [POS_W-1:0]      d1_ip_end;
reg                  done1_q;  // the ICRC ended in an earlier beat of this frame

wire             crc_last = !done1_q && d1_len_known && d1_ip_end <= d1_pos_end;
// Valid bytes in the ICRC's last beat (0 if a bogus length ends it in an earlier beat:
// such a packet never gets its ICRC checked).
// The beat's position is a multiple of BYTES, so the low bits give ip_end - pos (1..BYTES).
wire [LOGB:0]    crc_end_off = d1_ip_end[LOGB:0] - d1_pos_lo;
wire [LOGB:0]    crc_nbytes = crc_last ? crc_end_off : BYTES_N;

// The beat with the pseudo-LRH and the variant fields substituted.
reg [DATA_WIDTH-1:0] crc_word;
reg [GW-1:0]         g, r, ipst;
integer              cb;
always @* begin
    ipst = d1_tagged ? 10'd18 : 10'd14;
    for (cb = 0; cb < BYTES; cb = cb + 1) begin
        g = {{(GW-BEAT_W){1'b0}}, d1_beat} * BYTES[GW-1:0] + cb[GW-1:0];
        r = g - ipst;
        crc_word[cb*8 +: 8] = d1_data[cb*8 +: 8];
        if (g + 10'd4 < ipst)
            crc_word[cb*8 +: 8] = 8'h00;
        else if (g < ipst)
            crc_word[cb*8 +: 8] = 8'hFF;
        else if (d1_kind == K_V4) begin
            // TOS, TTL, header checksum, UDP checksum, BTH byte 4
            if (r == 1 || r == 8 || r == 10 || r == 11 || r == 26 || r == 27 || r == 32)
                crc_word[cb*8 +: 8] = 8'hFF;
        end else if (d1_kind == K_V6 || d1_kind == K_GRH) begin
            // traffic class + flow label, hop limit, (v6) UDP checksum, BTH byte 4
            if (r == 0)
                crc_word[cb*8 +: 8] = d1_data[cb*8 +: 8] | 8'h0F;
            else if (r == 1 || r == 2 || r == 3 || r == 7)
                crc_word[cb*8 +: 8] = 8'hFF;
            else if (d1_kind == K_V6 && (r == 46 || r == 47 || r == 52))
                crc_word[cb*8 +: 8] = 8'hFF;
            else if (d1_kind == K_GRH && r == 44)
                crc_word[cb*8 +: 8] = 8'hFF;
        end
    end
end

// Keep the first crc_nbytes bytes and move them to the top of the word (zeros lead).
wire [DATA_WIDTH-1:0] crc_keep = crc_nbytes >= BYTES_N ? {DATA_WIDTH{1'b1}}
                               : ~({DATA_WIDTH{1'b1}} << {crc_nbytes, 3'b000});
wire [DATA_WIDTH-1:0] crc_aligned = (crc_word & crc_keep) << {BYTES_N - crc_nbytes, 3'b000};

reg                  d2_v, d2_last, d2_clast;
reg [DATA_WIDTH-1:0] d2_aligned;
reg [LOGB:0]         d2_nb;     // bytes to feed (0: the ICRC already ended)
reg                  done2_q;   // the ICRC ended in an earlier beat of this frame

// C2: advance the state over d2_nb zero bytes. Up to 16 bytes per beat: one constant
// matrix per count, selected (one XOR level deep); wider: one matrix per bit of the count.
reg [31:0] crc_adv;
integer    ak;
generate
    if (BYTES <= 16) begin : g_adv_sel
        localparam [1024*BYTES-1:0] ADV_N = crc_adv_counts(0);
        always @* begin
            crc_adv = crc_q;
            for (ak = 1; ak <= BYTES; ak = ak + 1)
                if (d2_nb == ak[LOGB:0])
                    crc_adv = mat_mul(ADV_N[(ak-1)*1024 +: 1024], crc_q);
        end
    end else begin : g_adv_bits
        always @* begin
            crc_adv = crc_q;
            for (ak = 0; ak <= LOGB; ak = ak + 1)
                if (d2_nb[ak])
                    crc_adv = mat_mul(CRC_ADV[ak*1024 +: 1024], crc_adv);
        end
    end
endgenerate

// The word's own contribution (from a zero state): one parity per state bit. Continuous
// assigns, not a function loop: Icarus evaluates these as native vector operations.
wire [31:0] crc_of_word;
genvar cj;
generate
    for (cj = 0; cj < 32; cj = cj + 1) begin : g_crc
        localparam [DATA_WIDTH-1:0] ROW = CRC_D[cj*DATA_WIDTH +: DATA_WIDTH];
        assign crc_of_word[cj] = ^(d2_aligned & ROW);
    end
endgenerate

wire [31:0] crc_next = d2_nb == {(LOGB+1){1'b0}} ? crc_q : crc_adv ^ crc_of_word;
wire        icrc_good = (done2_q || d2_clast) && crc_next == RESIDUE;

// The verdicts of frames whose record is still in the pipeline, oldest first (one per
// frame, in frame order: at most one per record stage).
reg [3:0] vq_q;
reg [2:0] vq_n;
wire      vq_push = d2_v && d2_last;
wire      vq_pop = res_valid && res_ready;
wire [1:0] vq_at = vq_n[1:0] - {1'b0, vq_pop};
reg  [3:0] vq_next;
always @* begin
    vq_next = vq_pop ? vq_q >> 1 : vq_q;
    if (vq_push)
        vq_next[vq_at] = icrc_good;
end

// ---------------------------------------------------------------------------------------
// The record's fields (P3's input, below).

reg [47:0] p_eth_dst;
reg [47:0] p_eth_src;
reg p_vlan_valid;
reg [2:0] p_vlan_pcp;
reg [11:0] p_vlan_vid;
reg [15:0] p_ethertype;
reg [1:0] p_roce_version;
reg [3:0] p_ip_version;
reg [127:0] p_ip_src;
reg [127:0] p_ip_dst;
reg [5:0] p_dscp;
reg [1:0] p_ecn;
reg [7:0] p_ttl;
reg [15:0] p_udp_sport;
reg [15:0] p_udp_dport;
reg [7:0] p_bth_opcode;
reg p_bth_se;
reg p_bth_m;
reg [1:0] p_bth_pad;
reg [3:0] p_bth_tver;
reg [15:0] p_bth_pkey;
reg p_bth_fecn;
reg p_bth_becn;
reg [23:0] p_bth_dqpn;
reg p_bth_ackreq;
reg [23:0] p_bth_psn;
reg p_reth_valid;
reg [63:0] p_reth_va;
reg [31:0] p_reth_rkey;
reg [31:0] p_reth_dlen;
reg p_aeth_valid;
reg [7:0] p_aeth_syndrome;
reg [23:0] p_aeth_msn;
reg p_immdt_valid;
reg [31:0] p_immdt;
reg p_atomic_valid;
reg [63:0] p_atomic_va;
reg [31:0] p_atomic_rkey;
reg [63:0] p_atomic_swap;
reg [63:0] p_atomic_cmp;
reg p_atomicack_valid;
reg [63:0] p_atomicack_orig;
reg p_is_roce;
reg p_is_cnp;
reg p_ecn_ce;
reg p_is_pfc;
reg [7:0] p_pfc_cev;
reg [15:0] p_pfc_quanta0;
reg [15:0] p_pfc_quanta1;
reg [15:0] p_pfc_quanta2;
reg [15:0] p_pfc_quanta3;
reg [15:0] p_pfc_quanta4;
reg [15:0] p_pfc_quanta5;
reg [15:0] p_pfc_quanta6;
reg [15:0] p_pfc_quanta7;
reg p_is_pause;
reg [15:0] p_pause_time;
reg p_err_truncated;
reg p_err_ip_csum;
reg p_err_icrc;
reg p_err_unsupported;

wire [POS_W-1:0] n = pos_q + {{(POS_W-LOGB-1){1'b0}}, popcount(s_axis_tkeep)};

// ---------------------------------------------------------------------------------------
// The record pipeline: RECORD_LATENCY registered stages after the last beat.
// P1 (q1_*, loaded with the last beat): the header bytes with the VLAN tag stripped
//    (normalised: every later offset is a constant; the tag's TCI is kept aside), the
//    frame length and the ICRC verdict.
// P2 (q2_*): the L4 and BTH windows selected by the L3 kind, the lengths left after the
//    BTH start, the IPv4 checksum as two partial sums.
// P3 (rec_q, res_valid): the record. Each stage loads when it is empty or the next one
//    takes its content (stall logic per stage: P1 still loads while P2/P3 hold a record).

localparam NN = 104;  // normalised header bytes used (untagged deepest: 102)

reg  [NN*8-1:0]   q1_hdr;
reg  [POS_W-1:0]  q1_n;
reg               q1_tagged;
reg  [15:0]       q1_tci;

// P1 input: normalise the merged header (bytes from 12 on move up by 4 when tagged).
wire [NN*8-1:0] hdr_norm;
genvar nbi;
generate
    for (nbi = 0; nbi < NN; nbi = nbi + 1) begin : g_norm
        if (nbi < 12) begin : g_eth
            assign hdr_norm[nbi*8 +: 8] = hb[nbi];
        end else begin : g_shift
            assign hdr_norm[nbi*8 +: 8] = is_tagged ? hb[nbi + 4] : hb[nbi];
        end
    end
endgenerate

`define L(o) q1_hdr[(o)*8 +: 8]
`define LBE16(o) {`L(o), `L((o) + 1)}

// P2 input, from P1. Normalised offsets: L3 at 14; UDP at 34 (IPv4) or 54 (IPv6);
// BTH at 42 (IPv4), 62 (IPv6) or 54 (GRH).
wire [15:0] p1_et = `LBE16(12);
wire        p1_v4 = p1_et == 16'h0800;
wire        p1_v6 = p1_et == 16'h86DD;
wire        p1_grh = p1_et == 16'h8915;
wire        p1_mac = p1_et == 16'h8808;
wire [7:0]  p1_tag4 = q1_tagged ? 8'd4 : 8'd0;
wire [7:0]  p1_boff = p1_v4 ? 8'd42 : p1_v6 ? 8'd62 : 8'd54;
wire [15:0] p1_l3len = p1_v4 ? `LBE16(16) : `LBE16(18);  // IPv4 total / IPv6 payload length
// The IP end (normalised) is 14 + total length or 54 + payload length.
wire [POS_W:0] p1_end = {9'd0, p1_l3len} + (p1_v4 ? 25'd14 : 25'd54) + {17'd0, p1_tag4};
// The length checks as flags, so P3 decides on registered booleans:
// p1_lt[i]: min(frame, IP end) is short of 4*i bytes after the BTH start (i = 0..11);
// frame < c + tag for the fixed-offset checks.
wire [7:0]  p1_eoff = p1_v4 ? 8'd28 : p1_v6 ? 8'd8 : 8'd0;  // IP end - BTH start - l3len
wire [11:0] p1_lt;
genvar lti;
generate
    for (lti = 0; lti < 12; lti = lti + 1) begin : g_lt
        localparam [7:0] K = 4 * lti;
        assign p1_lt[lti] = q1_n < {16'd0, p1_boff + p1_tag4 + K}
                         || p1_l3len < {8'd0, p1_eoff + K};
    end
endgenerate
wire [5:0] p1_nlt = {q1_n < 24'd14, q1_n < 24'd18,
                     q1_n < 24'd16 + {16'd0, p1_tag4}, q1_n < 24'd18 + {16'd0, p1_tag4},
                     q1_n < 24'd34 + {16'd0, p1_tag4}, q1_n < 24'd54 + {16'd0, p1_tag4}};
// IPv4 checksum: two partial sums of five words each.
reg  [18:0] p1_csa, p1_csb;
integer     cw;
always @* begin
    p1_csa = 19'd0;
    p1_csb = 19'd0;
    for (cw = 0; cw < 5; cw = cw + 1) begin
        p1_csa = p1_csa + {3'd0, q1_hdr[(14 + 2*cw)*8 +: 8], q1_hdr[(15 + 2*cw)*8 +: 8]};
        p1_csb = p1_csb + {3'd0, q1_hdr[(24 + 2*cw)*8 +: 8], q1_hdr[(25 + 2*cw)*8 +: 8]};
    end
end

reg  [54*8-1:0]          q2_lo;   // normalised bytes 0..53: Ethernet and L3
reg  [4*8-1:0]           q2_udp;  // the UDP ports
// Reserved BTH bits and the TCI's DEI are not part of the record.
/* verilator lint_off UNUSEDSIGNAL */
reg  [40*8-1:0]          q2_bth;  // BTH and its extended headers
reg  [15:0]              q2_tci;
/* verilator lint_on UNUSEDSIGNAL */
reg                      q2_tagged;
reg                      q2_v4, q2_v6, q2_grh, q2_mac;
reg  [11:0]              q2_lt;   // p1_lt
reg  [5:0]               q2_nlt;  // p1_nlt: raw < 14, < 18; normalised < 16, 18, 34, 54
reg                      q2_e_gt_n;
reg  [18:0]              q2_csa, q2_csb;

`undef L
`undef LBE16
`define L(o) q2_lo[(o)*8 +: 8]
`define LBE16(o) {`L(o), `L((o) + 1)}
`define LBE32(o) {`L(o), `L((o) + 1), `L((o) + 2), `L((o) + 3)}
`define U(o) q2_udp[(o)*8 +: 8]
`define T(o) q2_bth[(o)*8 +: 8]
`define TBE32(o) {`T(o), `T((o) + 1), `T((o) + 2), `T((o) + 3)}

// P3 input, from P2: the record. Same decisions, in the same order, as the packet
// library's decoder (controller/packets): every offset is a constant here.
wire [19:0] csum = {1'b0, q2_csa} + {1'b0, q2_csb};
// The ones' complement sum is 0xFFFF iff the plain sum is a non-zero multiple of 0xFFFF
// (10 words: at most 10 times).
reg         csum_ok;
integer     ck;
always @* begin
    csum_ok = 1'b0;
    for (ck = 1; ck <= 10; ck = ck + 1)
        if (csum == ck[19:0] * 20'hFFFF)
            csum_ok = 1'b1;
end
// The frame (normalised) is shorter than c bytes.
`define NLT16 q2_nlt[3]
`define NLT18 q2_nlt[2]
`define NLT34 q2_nlt[1]
`define NLT54 q2_nlt[0]
// min(frame, IP end) is short of k bytes after the BTH start.
`define LT(k) q2_lt[(k) / 4]

reg              go;
reg              end_set;
reg [15:0]       etype;
reg [7:0]        tc;
reg [7:0]        opc;
reg [3:0]        icrc_w;    // the ICRC's offset after the BTH start, in 4-byte words
reg              icrc_check;

always @* begin
    p_eth_dst = 0;
    p_eth_src = 0;
    p_vlan_valid = 0;
    p_vlan_pcp = 0;
    p_vlan_vid = 0;
    p_ethertype = 0;
    p_roce_version = 0;
    p_ip_version = 0;
    p_ip_src = 0;
    p_ip_dst = 0;
    p_dscp = 0;
    p_ecn = 0;
    p_ttl = 0;
    p_udp_sport = 0;
    p_udp_dport = 0;
    p_bth_opcode = 0;
    p_bth_se = 0;
    p_bth_m = 0;
    p_bth_pad = 0;
    p_bth_tver = 0;
    p_bth_pkey = 0;
    p_bth_fecn = 0;
    p_bth_becn = 0;
    p_bth_dqpn = 0;
    p_bth_ackreq = 0;
    p_bth_psn = 0;
    p_reth_valid = 0;
    p_reth_va = 0;
    p_reth_rkey = 0;
    p_reth_dlen = 0;
    p_aeth_valid = 0;
    p_aeth_syndrome = 0;
    p_aeth_msn = 0;
    p_immdt_valid = 0;
    p_immdt = 0;
    p_atomic_valid = 0;
    p_atomic_va = 0;
    p_atomic_rkey = 0;
    p_atomic_swap = 0;
    p_atomic_cmp = 0;
    p_atomicack_valid = 0;
    p_atomicack_orig = 0;
    p_is_roce = 0;
    p_is_cnp = 0;
    p_ecn_ce = 0;
    p_is_pfc = 0;
    p_pfc_cev = 0;
    p_pfc_quanta0 = 0;
    p_pfc_quanta1 = 0;
    p_pfc_quanta2 = 0;
    p_pfc_quanta3 = 0;
    p_pfc_quanta4 = 0;
    p_pfc_quanta5 = 0;
    p_pfc_quanta6 = 0;
    p_pfc_quanta7 = 0;
    p_is_pause = 0;
    p_pause_time = 0;
    p_err_truncated = 0;
    p_err_ip_csum = 0;
    p_err_icrc = 0;
    p_err_unsupported = 0;
    go = 1'b1;
    end_set = 1'b0;
    etype = `LBE16(12);
    tc = 8'd0;
    opc = 8'd0;
    icrc_w = 4'd3;
    icrc_check = 1'b0;

    // Ethernet and one VLAN tag (stripped in P1: etype is the inner one)
    if (q2_nlt[5]) begin
        p_err_truncated = 1'b1;
        go = 1'b0;
    end else begin
        p_eth_dst = {`LBE16(0), `LBE32(2)};
        p_eth_src = {`LBE16(6), `LBE32(8)};
        if (q2_tagged) begin
            if (q2_nlt[4]) begin
                p_err_truncated = 1'b1;
                go = 1'b0;
            end else begin
                p_vlan_valid = 1'b1;
                p_vlan_pcp = q2_tci[15:13];
                p_vlan_vid = q2_tci[11:0];
            end
        end
    end
    if (go)
        p_ethertype = etype;

    // IPv4
    if (go && q2_v4) begin
        if (`NLT34) begin
            p_err_truncated = 1'b1;
            go = 1'b0;
        end else begin
            p_ip_version = q2_lo[14*8+4 +: 4];
            if (p_ip_version != 4'd4) begin
                p_err_unsupported = 1'b1;
                go = 1'b0;
            end
        end
        if (go) begin
            tc = `L(15);
            p_dscp = tc[7:2];
            p_ecn = tc[1:0];
            p_ttl = `L(22);
            p_ip_src = {96'd0, `LBE32(26)};
            p_ip_dst = {96'd0, `LBE32(30)};
            if (`L(14) != 8'h45) begin  // version 4 known: IHL != 5
                p_err_unsupported = 1'b1;
                go = 1'b0;
            end
        end
        if (go) begin
            if (!csum_ok)
                p_err_ip_csum = 1'b1;
            if (`LBE16(16) < 16'd20) begin
                p_err_truncated = 1'b1;
                go = 1'b0;
            end
            end_set = 1'b1;
            if (`L(23) != 8'd17)
                go = 1'b0;  // the end check below still runs
        end
    end

    // IPv6 and GRH share the first 40 bytes
    if (go && (q2_v6 || q2_grh)) begin
        if (`NLT54) begin
            p_err_truncated = 1'b1;
            go = 1'b0;
        end else begin
            p_ip_version = q2_lo[14*8+4 +: 4];
            if (q2_v6 && p_ip_version != 4'd6) begin
                p_err_unsupported = 1'b1;
                go = 1'b0;
            end
        end
        if (go) begin
            tc = {`L(14) << 4} | {`L(15) >> 4};
            p_dscp = tc[7:2];
            p_ecn = tc[1:0];
            p_ttl = `L(21);
            p_ip_src = {`LBE32(22), `LBE32(26), `LBE32(30), `LBE32(34)};
            p_ip_dst = {`LBE32(38), `LBE32(42), `LBE32(46), `LBE32(50)};
            end_set = 1'b1;
            if (q2_v6 && `L(20) == 8'd17) begin
            end else if (q2_grh && `L(20) == 8'h1B)
                p_roce_version = 2'd1;
            else
                go = 1'b0;
        end
    end
    p_ecn_ce = p_ecn == 2'd3;

    // UDP (ends where the BTH starts)
    if (go && (q2_v4 || q2_v6)) begin
        if (`LT(0)) begin
            p_err_truncated = 1'b1;
            go = 1'b0;
        end else begin
            p_udp_sport = {`U(0), `U(1)};
            p_udp_dport = {`U(2), `U(3)};
            if (p_udp_dport == 16'd4791)
                p_roce_version = 2'd2;
            else
                go = 1'b0;
        end
    end

    // BTH and extended headers, offsets from the BTH start
    if (go && p_roce_version != 2'd0) begin
        if (`LT(12)) begin
            p_err_truncated = 1'b1;
            go = 1'b0;
        end else begin
            opc = `T(0);
            p_bth_opcode = opc;
            {p_bth_se, p_bth_m, p_bth_pad, p_bth_tver} = `T(1);
            p_bth_pkey = {`T(2), `T(3)};
            {p_bth_fecn, p_bth_becn} = q2_bth[4*8+6 +: 2];
            p_bth_dqpn = {`T(5), `T(6), `T(7)};
            p_bth_ackreq = q2_bth[8*8+7];
            p_bth_psn = {`T(9), `T(10), `T(11)};
            p_is_roce = 1'b1;
            p_is_cnp = opc == 8'h81;
            if (p_bth_tver != 4'd0) begin
                p_err_unsupported = 1'b1;
                go = 1'b0;
            end
        end
        // RETH: WRITE FIRST, WRITE ONLY, WRITE ONLY with imm, READ REQUEST
        if (go && (opc == 8'h06 || opc == 8'h0A || opc == 8'h0B || opc == 8'h0C)) begin
            if (`LT(28)) begin
                p_err_truncated = 1'b1;
                go = 1'b0;
            end else begin
                p_reth_valid = 1'b1;
                p_reth_va = {`TBE32(12), `TBE32(16)};
                p_reth_rkey = `TBE32(20);
                p_reth_dlen = `TBE32(24);
                icrc_w = 4'd7;
            end
        end
        if (go && (opc == 8'h03 || opc == 8'h05 || opc == 8'h09 || opc == 8'h0B)) begin
            if (opc == 8'h0B ? `LT(32) : `LT(16)) begin
                p_err_truncated = 1'b1;
                go = 1'b0;
            end else begin
                p_immdt_valid = 1'b1;
                p_immdt = opc == 8'h0B ? `TBE32(28) : `TBE32(12);
                icrc_w = opc == 8'h0B ? 4'd8 : 4'd4;
            end
        end else if (go && (opc == 8'h0D || opc == 8'h0F || opc == 8'h10 || opc == 8'h11
                            || opc == 8'h12))
        begin
            if (`LT(16)) begin
                p_err_truncated = 1'b1;
                go = 1'b0;
            end else begin
                p_aeth_valid = 1'b1;
                {p_aeth_syndrome, p_aeth_msn} = `TBE32(12);
                icrc_w = 4'd4;
            end
            // AtomicAckETH after the AETH of an ATOMIC ACKNOWLEDGE
            if (go && opc == 8'h12) begin
                if (`LT(24)) begin
                    p_err_truncated = 1'b1;
                    go = 1'b0;
                end else begin
                    p_atomicack_valid = 1'b1;
                    p_atomicack_orig = {`TBE32(16), `TBE32(20)};
                    icrc_w = 4'd6;
                end
            end
        end else if (go && (opc == 8'h13 || opc == 8'h14)) begin  // CMP_SWAP, FETCH_ADD
            if (`LT(40)) begin
                p_err_truncated = 1'b1;
                go = 1'b0;
            end else begin
                p_atomic_valid = 1'b1;
                p_atomic_va = {`TBE32(12), `TBE32(16)};
                p_atomic_rkey = `TBE32(20);
                p_atomic_swap = {`TBE32(24), `TBE32(28)};
                p_atomic_cmp = {`TBE32(32), `TBE32(36)};
                icrc_w = 4'd10;
            end
        end else if (go && opc == 8'h81) begin
            if (`LT(28)) begin
                p_err_truncated = 1'b1;
                go = 1'b0;
            end else
                icrc_w = 4'd7;
        end
        // the ICRC
        if (go && q2_lt[icrc_w + 4'd1]) begin
            p_err_truncated = 1'b1;
            go = 1'b0;
        end
        icrc_check = go;
    end

    // A packet whose headers are done must reach the end its IP length gives.
    if (!p_err_truncated && end_set && q2_e_gt_n) begin
        p_err_truncated = 1'b1;
        icrc_check = 1'b0;
    end
    // the ICRC to check: its verdict joins the record at the output (vq_q)
    p_err_icrc = icrc_check;

    // MAC control: PFC and PAUSE
    if (go && q2_mac) begin
        if (`NLT16)
            p_err_truncated = 1'b1;
        else if (`LBE16(14) == 16'h0101) begin
            if (`NLT34)
                p_err_truncated = 1'b1;
            else begin
                p_is_pfc = 1'b1;
                p_pfc_cev = `L(17);
                p_pfc_quanta0 = `LBE16(18);
                p_pfc_quanta1 = `LBE16(20);
                p_pfc_quanta2 = `LBE16(22);
                p_pfc_quanta3 = `LBE16(24);
                p_pfc_quanta4 = `LBE16(26);
                p_pfc_quanta5 = `LBE16(28);
                p_pfc_quanta6 = `LBE16(30);
                p_pfc_quanta7 = `LBE16(32);
            end
        end else if (`LBE16(14) == 16'h0001) begin
            if (`NLT18)
                p_err_truncated = 1'b1;
            else begin
                p_is_pause = 1'b1;
                p_pause_time = `LBE16(16);
            end
        end
    end
end

`undef L
`undef LBE16
`undef LBE32
`undef U
`undef T
`undef TBE32
`undef NLT16
`undef NLT18
`undef NLT34
`undef NLT54
`undef LT
wire [RECORD_BITS-1:0] rec_next = {p_eth_dst, p_eth_src, p_vlan_valid, p_vlan_pcp, p_vlan_vid, p_ethertype, p_roce_version, p_ip_version, p_ip_src, p_ip_dst, p_dscp, p_ecn, p_ttl, p_udp_sport, p_udp_dport, p_bth_opcode, p_bth_se, p_bth_m, p_bth_pad, p_bth_tver, p_bth_pkey, p_bth_fecn, p_bth_becn, p_bth_dqpn, p_bth_ackreq, p_bth_psn, p_reth_valid, p_reth_va, p_reth_rkey, p_reth_dlen, p_aeth_valid, p_aeth_syndrome, p_aeth_msn, p_immdt_valid, p_immdt, p_atomic_valid, p_atomic_va, p_atomic_rkey, p_atomic_swap, p_atomic_cmp, p_atomicack_valid, p_atomicack_orig, p_is_roce, p_is_cnp, p_ecn_ce, p_is_pfc, p_pfc_cev, p_pfc_quanta0, p_pfc_quanta1, p_pfc_quanta2, p_pfc_quanta3, p_pfc_quanta4, p_pfc_quanta5, p_pfc_quanta6, p_pfc_quanta7, p_is_pause, p_pause_time, p_err_truncated, p_err_ip_csum, p_err_icrc, p_err_unsupported};

// ---------------------------------------------------------------------------------------
// Test-only builds for controller/fil's record pairing (tests/hdl/test_fil_loop.py), off
// unless defined: ROCE_PARSER_SLOW_RECORD holds each record 16 more cycles in P2 (a longer
// latency), ROCE_PARSER_FAULT_LOSE never offers every 8th record, ROCE_PARSER_FAULT_DOUBLE
// offers every 8th record once more after it was taken (if no record follows it at once).
`ifdef ROCE_PARSER_SLOW_RECORD
reg [4:0] age2_q;
always @(posedge clk)
    age2_q <= (rst || (rdy2 && v1)) ? 5'd0 : (v2 && age2_q != 5'd16) ? age2_q + 5'd1 : age2_q;
assign p2_out = age2_q == 5'd16;
`else
assign p2_out = 1'b1;
`endif
`ifdef ROCE_PARSER_FAULT_LOSE
`define ROCE_PARSER_COUNT
`endif
`ifdef ROCE_PARSER_FAULT_DOUBLE
`define ROCE_PARSER_COUNT
`endif
`ifdef ROCE_PARSER_COUNT
reg [2:0] nrec_q;  // records loaded into P3, modulo 8
reg       again_q;
always @(posedge clk) begin
    if (rdy3 && v2 && p2_out)
        nrec_q <= nrec_q + 3'd1;
    again_q <= fault_again || (again_q && !(res_valid && res_ready));
    if (rst) begin
        nrec_q <= 3'd0;
        again_q <= 1'b0;
    end
end
`undef ROCE_PARSER_COUNT
`endif
`ifdef ROCE_PARSER_FAULT_LOSE
wire fault_lose = nrec_q == 3'd7;
`else
wire fault_lose = 1'b0;
`endif
`ifdef ROCE_PARSER_FAULT_DOUBLE
wire fault_again = res_valid && res_ready && nrec_q == 3'd0 && !again_q && !(v2 && p2_out);
`else
wire fault_again = 1'b0;
`endif

// ---------------------------------------------------------------------------------------
// State.

integer hs;
always @(posedge clk) begin
    if (beat) begin
        for (hs = 0; hs < NHB; hs = hs + 1)
            if (beat_q == hs[BEAT_W-1:0])
                hdr_q[hs*DATA_WIDTH +: DATA_WIDTH] <= s_axis_tdata;
        if (s_axis_tlast) begin
            pos_q <= {POS_W{1'b0}};
            beat_q <= {BEAT_W{1'b0}};
        end else begin
            if (pos_q < POS_MAX)
                pos_q <= pos_q + BYTES_P;
            if (beat_q < NHB[BEAT_W-1:0])
                beat_q <= beat_q + 1'b1;
        end
    end

    // ICRC C1, C2 and the verdict queue
    d1_v <= beat;
    if (beat) begin
        d1_data <= s_axis_tdata;
        d1_pos_lo <= pos_q[LOGB:0];
        d1_pos_end <= pos_q + BYTES_P;
        d1_beat <= beat_q;
        d1_last <= s_axis_tlast;
        d1_tagged <= is_tagged;
        d1_kind <= c0_kind;
        d1_ip_end <= c0_ip_end;
        d1_len_known <= c0_len_known;
    end
    if (d1_v)
        done1_q <= !d1_last && (done1_q || crc_last);
    d2_v <= d1_v;
    if (d1_v) begin
        d2_aligned <= crc_aligned;
        d2_nb <= done1_q ? {(LOGB+1){1'b0}} : crc_nbytes;
        d2_clast <= crc_last;
        d2_last <= d1_last;
    end
    if (d2_v) begin
        crc_q <= d2_last ? 32'd0 : crc_next;
        done2_q <= !d2_last && (done2_q || d2_clast);
    end
    vq_q <= vq_next;
    vq_n <= vq_n + {2'd0, vq_push} - {2'd0, vq_pop};

    // P1: loaded with a last beat (accepted only when P1 is free: rdy1)
    if (beat && s_axis_tlast) begin
        q1_hdr <= hdr_norm;
        q1_n <= n;
        q1_tagged <= is_tagged;
        q1_tci <= `BE16(8'd14);
    end
    // P2
    if (rdy2 && v1) begin
        q2_lo <= q1_hdr[54*8-1:0];
        q2_udp <= p1_v4 ? q1_hdr[34*8 +: 32] : q1_hdr[54*8 +: 32];
        q2_bth <= p1_v4 ? q1_hdr[42*8 +: 320] : p1_v6 ? q1_hdr[62*8 +: 320] : q1_hdr[54*8 +: 320];
        q2_tagged <= q1_tagged;
        q2_tci <= q1_tci;
        q2_v4 <= p1_v4;
        q2_v6 <= p1_v6;
        q2_grh <= p1_grh;
        q2_mac <= p1_mac;
        q2_lt <= p1_lt;
        q2_nlt <= p1_nlt;
        q2_e_gt_n <= p1_end > {1'b0, q1_n};
        q2_csa <= p1_csa;
        q2_csb <= p1_csb;
    end
    // P3: the record
    if (rdy3 && v2 && p2_out)
        rec_q <= rec_next;

    if (beat && s_axis_tlast)
        v1 <= 1'b1;
    else if (rdy2)
        v1 <= 1'b0;
    if (rdy2)
        v2 <= v1;
    if (rdy3)
        res_valid <= v2 && p2_out && !fault_lose;
    if (fault_again)
        res_valid <= 1'b1;

    if (rst) begin
        pos_q <= {POS_W{1'b0}};
        beat_q <= {BEAT_W{1'b0}};
        crc_q <= 32'd0;
        d1_v <= 1'b0;
        d2_v <= 1'b0;
        done1_q <= 1'b0;
        done2_q <= 1'b0;
        vq_n <= 3'd0;
        v1 <= 1'b0;
        v2 <= 1'b0;
        res_valid <= 1'b0;
    end
end

// err_icrc: the record's "ICRC checked" bit and the frame's verdict (the queue's head)
wire err_icrc = rec_q[1] && !vq_q[0];
assign res_data = {rec_q[RECORD_BITS-1:2], err_icrc, rec_q[0]};
`ifdef FORMAL
assign dbg_inflight = {1'b0, v1} + {1'b0, v2};
assign dbg_last = v2;
`endif
assign res_eth_dst = rec_q[1166:1119];
assign res_eth_src = rec_q[1118:1071];
assign res_vlan_valid = rec_q[1070];
assign res_vlan_pcp = rec_q[1069:1067];
assign res_vlan_vid = rec_q[1066:1055];
assign res_ethertype = rec_q[1054:1039];
assign res_roce_version = rec_q[1038:1037];
assign res_ip_version = rec_q[1036:1033];
assign res_ip_src = rec_q[1032:905];
assign res_ip_dst = rec_q[904:777];
assign res_dscp = rec_q[776:771];
assign res_ecn = rec_q[770:769];
assign res_ttl = rec_q[768:761];
assign res_udp_sport = rec_q[760:745];
assign res_udp_dport = rec_q[744:729];
assign res_bth_opcode = rec_q[728:721];
assign res_bth_se = rec_q[720];
assign res_bth_m = rec_q[719];
assign res_bth_pad = rec_q[718:717];
assign res_bth_tver = rec_q[716:713];
assign res_bth_pkey = rec_q[712:697];
assign res_bth_fecn = rec_q[696];
assign res_bth_becn = rec_q[695];
assign res_bth_dqpn = rec_q[694:671];
assign res_bth_ackreq = rec_q[670];
assign res_bth_psn = rec_q[669:646];
assign res_reth_valid = rec_q[645];
assign res_reth_va = rec_q[644:581];
assign res_reth_rkey = rec_q[580:549];
assign res_reth_dlen = rec_q[548:517];
assign res_aeth_valid = rec_q[516];
assign res_aeth_syndrome = rec_q[515:508];
assign res_aeth_msn = rec_q[507:484];
assign res_immdt_valid = rec_q[483];
assign res_immdt = rec_q[482:451];
assign res_atomic_valid = rec_q[450];
assign res_atomic_va = rec_q[449:386];
assign res_atomic_rkey = rec_q[385:354];
assign res_atomic_swap = rec_q[353:290];
assign res_atomic_cmp = rec_q[289:226];
assign res_atomicack_valid = rec_q[225];
assign res_atomicack_orig = rec_q[224:161];
assign res_is_roce = rec_q[160];
assign res_is_cnp = rec_q[159];
assign res_ecn_ce = rec_q[158];
assign res_is_pfc = rec_q[157];
assign res_pfc_cev = rec_q[156:149];
assign res_pfc_quanta0 = rec_q[148:133];
assign res_pfc_quanta1 = rec_q[132:117];
assign res_pfc_quanta2 = rec_q[116:101];
assign res_pfc_quanta3 = rec_q[100:85];
assign res_pfc_quanta4 = rec_q[84:69];
assign res_pfc_quanta5 = rec_q[68:53];
assign res_pfc_quanta6 = rec_q[52:37];
assign res_pfc_quanta7 = rec_q[36:21];
assign res_is_pause = rec_q[20];
assign res_pause_time = rec_q[19:4];
assign res_err_truncated = rec_q[3];
assign res_err_ip_csum = rec_q[2];
assign res_err_icrc = err_icrc;
assign res_err_unsupported = rec_q[0];

`undef B
`undef BE16
`undef BE32

endmodule

`resetall
