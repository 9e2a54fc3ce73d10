// rocelab: AXI4-Stream and rate-limit properties of roce_np (DATA_WIDTH 64, SLOTS 2), proven
// with yosys-smtbmc by hdl/formal/prove.py against the NP as it is since session 12 (key
// lookup registered at the take, the decision a cycle later; slots 16 words apart with a
// 128-bit peer IP). The record source obeys the valid/ready rules (assumed); cfg writes and
// m_axis_tready are free. Asserted: the CNP stream obeys AXI4-Stream (tvalid held until
// tready; tdata/tkeep/tlast stable while stalled), no CNP leaves without a CE-marked data
// record taken, and two CNPs decided for one flow (any flow: an anyconst family, QPN and
// peer IP) are at least the configured interval apart unless a slot key was rewritten in
// between.
//
// Why the small model is sound (prove.py's Target.cutpoints and this instance's SLOTS):
// - prove.py cuts roce_np's `frame` wire (the CNP's bytes: header function, checksum,
//   ICRC) into a free value each cycle. That over-approximates the DUT (every behaviour of
//   the real NP is one of the cut model's), so a safety property proven on it holds for the
//   NP; none of these properties reads the bytes' values, only their stability, which is
//   the frame register's shift logic (kept). The bytes are the cocotb/FIL tests' job.
// - SLOTS 2: the lookup, the per-slot rate state and the slot-write decode are the same
//   generate-free loop for every SLOTS; two slots keep a "first match of several" and a
//   flow moving between slots reachable. DATA_WIDTH 64 is the width the issue asks for.
//
// Timing (roce_np.v's header): a record taken at T is looked up at T, decided at D = T+1
// (rate state read, slot_last <= D), and stat_cnp ("CNPs queued") steps at T+2, where the
// wrapper sees it. The NP's interval register takes a cfg write at c from c+2 on, so the
// decision at D used the writes up to D-2. A slot-key write at c (word +0, or the peer IP
// +2..+5) takes effect for records taken from c+1 on; a +0 write clears the slot's rate
// state at c+1 (winning over a decision there). So the wrapper works two cycles behind,
// on the take cycle's view: a key write at c forgets the flow's earlier CNPs for the
// records taken after c.
//
// PLANT (tests/hdl/test_formal.py): 0 = the DUT as is; 1-4 a shim between the DUT's outputs
// and the checked ports plants one bug that a property must catch; 5 the DUT's own test
// fault ROCE_NP_FAULT_INTERVAL (a halved interval), which a_rate_limit must catch.
`default_nettype none

module roce_np_props #(
    parameter PLANT = 0  // 1 tvalid drop, 2 tdata change, 3 CNP out of nothing, 4 extra CNP decided;
                         // 5 passed through: prove.py reads roce_np with ROCE_NP_FAULT_INTERVAL
) (
    input wire         clk,
    input wire         rst,
    input wire         rec_valid,
    input wire [1:0]   rec_roce_version,
    input wire         rec_vlan_valid,
    input wire [11:0]  rec_vlan_vid,
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

localparam SLOTS = 2;
wire        rec_ready, dut_tvalid, dut_tlast;
wire [63:0] dut_tdata;
wire [7:0]  dut_tkeep;
wire [31:0] stat_ce, dut_stat_cnp;

roce_np #(.DATA_WIDTH(64), .SLOTS(SLOTS)) dut (
    .clk(clk), .rst(rst),
    .rec_valid(rec_valid), .rec_ready(rec_ready), .rec_roce_version(rec_roce_version),
    .rec_vlan_valid(rec_vlan_valid), .rec_vlan_vid(rec_vlan_vid),
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
// PLANT 4: every CE record of a known flow counts as a decided CNP (the rate limit ignored)
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
            && rec_vlan_valid == $past(rec_vlan_valid) && rec_vlan_vid == $past(rec_vlan_vid)
            && rec_ip_src == $past(rec_ip_src) && rec_bth_dqpn == $past(rec_bth_dqpn)
            && rec_is_roce == $past(rec_is_roce) && rec_is_cnp == $past(rec_is_cnp)
            && rec_ecn_ce == $past(rec_ecn_ce) && rec_err_truncated == $past(rec_err_truncated)
            && rec_err_ip_csum == $past(rec_err_ip_csum) && rec_err_icrc == $past(rec_err_icrc)
            && rec_err_unsupported == $past(rec_err_unsupported));
end

// ---- bookkeeping: CE data records taken (the NP's only reason to send), CNP frames out
wire take = rec_valid && rec_ready;
wire rec_v6 = rec_ip_version == 4'd6;
wire ce_data = rec_is_roce && !rec_is_cnp && rec_ecn_ce && rec_roce_version == 2'd2
               && (rec_ip_version == 4'd4 || rec_v6)
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

// The watched flow (any one): records of family f_v6 to local QPN f_qpn from peer IP f_ip.
(* anyconst *) reg         f_v6;
(* anyconst *) reg [23:0]  f_qpn;
(* anyconst *) reg [127:0] f_ip;
wire f_rec = take && ce_data && rec_v6 == f_v6 && rec_bth_dqpn == f_qpn && rec_ip_src == f_ip;
// a write to a slot's key: +0 {valid, family, local QPN} or the peer IP +2..+5
wire [3:0] waddr = cfg_addr[3:0];
wire slot_write = cfg_we && cfg_addr >= 8'h10 && cfg_addr < 8'h10 + 16 * SLOTS
                  && (waddr == 4'd0 || (waddr >= 4'd2 && waddr <= 4'd5));
reg [31:0] cyc = 32'd0, ival = 32'd0, ival_q = 32'd0, ival_qq = 32'd0, f_last = 32'd0;
reg f_sent = 1'b0;
reg f_rec_q = 1'b0, f_rec_qq = 1'b0, sw_q = 1'b0, sw_qq = 1'b0;
reg [31:0] stat_cnp_q = 32'd0, stat_ce_q = 32'd0;
// decided: a CNP was decided at D = cyc - 1 for the flow's record taken at cyc - 2
wire decided = past_ok && f_rec_qq && stat_cnp != stat_cnp_q;
wire looked = past_ok && f_rec_qq && stat_ce != stat_ce_q;  // the record found its slot
always @(posedge clk) begin
    cyc <= cyc + 32'd1;
    if (cfg_we && cfg_addr == 8'h00) ival <= cfg_wdata;  // the writes up to cyc - 1
    ival_q <= ival;
    ival_qq <= ival_q;  // at D + 1: the writes up to D - 2, the interval the NP used at D
    f_rec_q <= f_rec;
    f_rec_qq <= f_rec_q;
    sw_q <= slot_write;
    sw_qq <= sw_q;
    stat_cnp_q <= stat_cnp;
    stat_ce_q <= stat_ce;
    if (decided) begin
        f_sent <= 1'b1;
        f_last <= cyc - 32'd1;
    end
    // a key write in the take cycle T: T's decision is checked against the old state (the
    // assertion below, this cycle) but the flow starts over after it (the write wins)
    if (past_ok && sw_qq) f_sent <= 1'b0;
    if (rst) begin
        cyc <= 32'd0;
        ival <= 32'd0;
        ival_q <= 32'd0;
        ival_qq <= 32'd0;
        f_sent <= 1'b0;
        f_last <= 32'd0;
        f_rec_q <= 1'b0;
        f_rec_qq <= 1'b0;
        sw_q <= 1'b0;
        sw_qq <= 1'b0;
        stat_cnp_q <= 32'd0;
        stat_ce_q <= 32'd0;
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
        a_rate_limit: assert (cyc - 32'd1 - f_last >= ival_qq);
end

// ---- reachability
always @(posedge clk) if (past_ok && !rst) begin
    c_stall_out: cover ($past(m_axis_tvalid && !m_axis_tready) && m_axis_tvalid && m_axis_tready);
    c_cnp_out: cover (cnp_out == 8'd1);
    // a second CNP for the flow exactly at the limit (>= 2 cycles), and one held back
    c_rate_edge: cover (decided && f_sent && ival_qq >= 32'd2 && cyc - 32'd1 - f_last == ival_qq);
    c_rate_held: cover (looked && !decided && f_sent && ival_qq >= 32'd2);
end

endmodule
