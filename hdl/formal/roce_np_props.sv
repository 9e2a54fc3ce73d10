// rocelab: AXI4-Stream and rate-limit properties of roce_np (DATA_WIDTH 64, SLOTS 4: its
// defaults), proven with yosys-smtbmc by hdl/formal/prove.py. The record source obeys the
// valid/ready rules (assumed); cfg writes and m_axis_tready are free. Asserted: the CNP
// stream obeys AXI4-Stream, no CNP leaves without a CE-marked data record taken, and two
// CNPs decided for one flow (any flow: an anyconst QPN and peer IP) are at least the
// configured interval apart unless that flow's slot was rewritten in between. A decision
// is seen as stat_cnp ("CNPs queued") stepping in the cycle after the record is taken.
//
// PLANT (tests/hdl/test_formal.py): 0 = the DUT as is; otherwise a shim between the DUT's
// outputs and the checked ports plants one bug that a property must catch.
`default_nettype none

module roce_np_props #(
    parameter PLANT = 0  // 1 tvalid drop, 2 tdata change, 3 CNP out of nothing, 4 extra CNP decided
) (
    input wire         clk,
    input wire         rst,
    input wire         rec_valid,
    input wire [1:0]   rec_roce_version,
    input wire [3:0]   rec_ip_version,
    input wire [127:0] rec_ip_src,
    input wire [23:0]  rec_bth_dqpn,
    input wire         rec_is_roce,
    input wire         rec_is_cnp,
    input wire         rec_ecn_ce,
    input wire         rec_err_truncated,
    input wire         rec_err_ip_csum,
    input wire         rec_err_icrc,
    input wire         rec_err_unsupported,
    input wire         cfg_we,
    input wire [7:0]   cfg_addr,
    input wire [31:0]  cfg_wdata,
    input wire         m_axis_tready
);

localparam SLOTS = 4;
wire        rec_ready, dut_tvalid, dut_tlast;
wire [63:0] dut_tdata;
wire [7:0]  dut_tkeep;
wire [31:0] stat_ce, dut_stat_cnp;

roce_np dut (  // default parameters: DATA_WIDTH 64, SLOTS 4
    .clk(clk), .rst(rst),
    .rec_valid(rec_valid), .rec_ready(rec_ready), .rec_roce_version(rec_roce_version),
    .rec_ip_version(rec_ip_version), .rec_ip_src(rec_ip_src), .rec_bth_dqpn(rec_bth_dqpn),
    .rec_is_roce(rec_is_roce), .rec_is_cnp(rec_is_cnp), .rec_ecn_ce(rec_ecn_ce),
    .rec_err_truncated(rec_err_truncated), .rec_err_ip_csum(rec_err_ip_csum),
    .rec_err_icrc(rec_err_icrc), .rec_err_unsupported(rec_err_unsupported),
    .cfg_we(cfg_we), .cfg_addr(cfg_addr), .cfg_wdata(cfg_wdata),
    .m_axis_tdata(dut_tdata), .m_axis_tkeep(dut_tkeep), .m_axis_tvalid(dut_tvalid),
    .m_axis_tready(m_axis_tready), .m_axis_tlast(dut_tlast),
    .stat_ce(stat_ce), .stat_cnp(dut_stat_cnp)
);

// ---- the planted bugs (a shim on the output ports; PLANT 0 passes them through)
reg stalled_q = 1'b0, ghost_q = 1'b0;
wire        m_axis_tvalid = (PLANT == 1) ? dut_tvalid && !(stalled_q && !m_axis_tready)
                          : (PLANT == 3) ? dut_tvalid || ghost_q : dut_tvalid;
wire [63:0] m_axis_tdata  = (PLANT == 2) ? dut_tdata ^ {63'd0, stalled_q} : dut_tdata;
wire [7:0]  m_axis_tkeep  = dut_tkeep;
wire        m_axis_tlast  = dut_tlast || ((PLANT == 3) && ghost_q);
// PLANT 4: every CE record taken counts as a decided CNP (the rate limit ignored)
wire [31:0] stat_cnp = (PLANT == 4) ? stat_ce : dut_stat_cnp;
always @(posedge clk) begin
    stalled_q <= dut_tvalid && !m_axis_tready;
    ghost_q <= !dut_tvalid && !ghost_q;
end

// ---- assumptions: reset first; the record source holds a record until it is taken
reg init = 1'b1;
always @(posedge clk) init <= 1'b0;
reg past_ok = 1'b0;
always @(posedge clk) past_ok <= !rst;
always @* if (init) assume (rst);

always @(posedge clk) if (past_ok && !rst && $past(rec_valid && !rec_ready)) begin
    assume (rec_valid);
    assume (rec_roce_version == $past(rec_roce_version) && rec_ip_version == $past(rec_ip_version)
            && rec_ip_src == $past(rec_ip_src) && rec_bth_dqpn == $past(rec_bth_dqpn)
            && rec_is_roce == $past(rec_is_roce) && rec_is_cnp == $past(rec_is_cnp)
            && rec_ecn_ce == $past(rec_ecn_ce) && rec_err_truncated == $past(rec_err_truncated)
            && rec_err_ip_csum == $past(rec_err_ip_csum) && rec_err_icrc == $past(rec_err_icrc)
            && rec_err_unsupported == $past(rec_err_unsupported));
end

// ---- bookkeeping: CE data records taken (the NP's only reason to send), CNP frames out
wire take = rec_valid && rec_ready;
wire ce_data = rec_is_roce && !rec_is_cnp && rec_ecn_ce && rec_roce_version == 2'd2
               && !rec_err_truncated && !rec_err_ip_csum && !rec_err_icrc && !rec_err_unsupported;
wire out_beat = m_axis_tvalid && m_axis_tready;
reg [7:0] ce_in = 8'd0, cnp_out = 8'd0;
reg in_frame = 1'b0;  // a CNP frame has started on m_axis and not ended
always @(posedge clk) begin
    if (take && ce_data) ce_in <= ce_in + 8'd1;
    if (out_beat) in_frame <= !m_axis_tlast;
    if (out_beat && m_axis_tlast) cnp_out <= cnp_out + 8'd1;
    if (rst) begin
        ce_in <= 8'd0;
        cnp_out <= 8'd0;
        in_frame <= 1'b0;
    end
end

// The watched flow (any one): records to local QPN f_qpn from peer IPv4 f_ip.
(* anyconst *) reg [23:0] f_qpn;
(* anyconst *) reg [31:0] f_ip;
wire f_rec = take && ce_data && rec_bth_dqpn == f_qpn && rec_ip_src == {96'd0, f_ip};
// a write to a slot's local QPN (+0) or peer IP (+2) word may start a new flow there
wire slot_write = cfg_we && cfg_addr >= 8'h10 && cfg_addr < 8'h10 + 8 * SLOTS
                  && (cfg_addr[2:0] == 3'd0 || cfg_addr[2:0] == 3'd2);
reg [31:0] cyc = 32'd0, ival = 32'd0, f_last = 32'd0;
reg f_sent = 1'b0;
reg f_rec_q = 1'b0, slot_write_q = 1'b0;
reg [31:0] stat_cnp_q = 32'd0, ival_q = 32'd0;
// decided(t): a CNP was decided for the flow at t-1 (stat_cnp steps one cycle later)
wire decided = past_ok && f_rec_q && stat_cnp != stat_cnp_q;
always @(posedge clk) begin
    cyc <= cyc + 32'd1;
    if (cfg_we && cfg_addr == 8'h00) ival <= cfg_wdata;  // mirrors the NP's interval register
    f_rec_q <= f_rec;
    slot_write_q <= slot_write;
    stat_cnp_q <= stat_cnp;
    ival_q <= ival;
    if (decided) begin
        f_sent <= 1'b1;
        f_last <= cyc - 32'd1;
    end
    if (past_ok && slot_write_q) f_sent <= 1'b0;  // the write wins over a same-cycle CNP
    if (rst) begin
        cyc <= 32'd0;
        ival <= 32'd0;
        f_sent <= 1'b0;
        f_last <= 32'd0;
        f_rec_q <= 1'b0;
        slot_write_q <= 1'b0;
        stat_cnp_q <= 32'd0;
        ival_q <= 32'd0;
    end
end

// ---- assertions
always @(posedge clk) if (past_ok && !rst && $past(m_axis_tvalid && !m_axis_tready)) begin
    a_tvalid_held: assert (m_axis_tvalid);
    a_stable: assert (m_axis_tdata == $past(m_axis_tdata) && m_axis_tkeep == $past(m_axis_tkeep)
                      && m_axis_tlast == $past(m_axis_tlast));
end

always @* if (past_ok && !rst) begin
    // nothing out without a frame in: every CNP started follows its own CE record
    a_out_is_in: assert ({1'b0, cnp_out} + {8'd0, m_axis_tvalid || in_frame} <= {1'b0, ce_in});
    // the rate limit: a flow's CNPs at least the interval apart (the interval the NP used)
    if (decided && f_sent)
        a_rate_limit: assert (cyc - 32'd1 - f_last >= ival_q);
end

// ---- reachability
always @(posedge clk) if (past_ok && !rst) begin
    c_stall_out: cover ($past(m_axis_tvalid && !m_axis_tready) && m_axis_tvalid && m_axis_tready);
    c_cnp_out: cover (cnp_out == 8'd1);
    // a second CNP for the flow exactly at the limit (>= 2 cycles), and one held back
    c_rate_edge: cover (decided && f_sent && ival_q >= 32'd2 && cyc - 32'd1 - f_last == ival_q);
    c_rate_held: cover ($past(f_rec && f_sent && ival >= 32'd2) && stat_cnp == stat_cnp_q);
end

endmodule
