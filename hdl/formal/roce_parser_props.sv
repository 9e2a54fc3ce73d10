// rocelab: AXI4-Stream and record-interface properties of roce_parser (DATA_WIDTH 64, its
// default), proven with yosys-smtbmc by hdl/formal/prove.py. The inputs obey AXI4-Stream
// (assumed); the outputs must too (asserted); each frame gives exactly one record.
// res_data is not observed, so the record's logic (and the ICRC) is pruned: these
// properties are about the handshakes, which do not depend on it. The record's contents
// are the cocotb testbench's job. The record leaves RECORD_LATENCY (3) cycles after its
// frame's last beat (a_latency); dbg_inflight (a debug port under `ifdef FORMAL) counts
// the records inside the pipeline's stages P1/P2.
//
// PLANT (tests/hdl/test_formal.py): 0 = the DUT as is; otherwise a shim between the DUT's
// outputs and the checked ports plants one protocol bug that a property must catch.
`default_nettype none

module roce_parser_props #(
    parameter PLANT = 0  // 1 tvalid drop, 2 tdata change, 3 second record, 4 beat out of nothing,
                         // 5 record a cycle late, 6 record a cycle early
) (
    input wire        clk,
    input wire        rst,
    input wire [63:0] s_axis_tdata,
    input wire [7:0]  s_axis_tkeep,
    input wire        s_axis_tvalid,
    input wire        s_axis_tlast,
    input wire        m_axis_tready,
    input wire        res_ready
);

localparam [7:0] HDR_BEATS = 8'd14;  // the deepest header, 106 bytes, in 8-byte beats
localparam LAT = 3;                  // roce_parser's RECORD_LATENCY

wire        s_axis_tready, dut_m_tvalid, dut_m_tlast, dut_res_valid;
wire [63:0] dut_m_tdata;
wire [7:0]  dut_m_tkeep;
wire [1:0]  dut_inflight, inflight;
wire        dut_last;  // P2, the stage before the output, holds a record

/* verilator lint_off PINMISSING */
roce_parser dut (  // default parameters: DATA_WIDTH 64
    .clk(clk), .rst(rst),
    .s_axis_tdata(s_axis_tdata), .s_axis_tkeep(s_axis_tkeep), .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready), .s_axis_tlast(s_axis_tlast),
    .m_axis_tdata(dut_m_tdata), .m_axis_tkeep(dut_m_tkeep), .m_axis_tvalid(dut_m_tvalid),
    .m_axis_tready(m_axis_tready), .m_axis_tlast(dut_m_tlast),
    .res_valid(dut_res_valid), .res_ready(res_ready), .dbg_inflight(dut_inflight),
    .dbg_last(dut_last)
);
/* verilator lint_on PINMISSING */

// ---- the planted bugs (a shim on the output ports; PLANT 0 passes them through)
reg stalled_q = 1'b0;  // the checked m_axis port was valid and not ready last cycle
reg again_q = 1'b0;    // PLANT 3: the record offered once more after it was taken
reg ghost_q = 1'b0;    // PLANT 4: a beat after an idle cycle, with no beat in
reg late_q = 1'b0;     // PLANT 5: the record was valid last cycle too (hidden in its first)
wire        m_axis_tvalid = (PLANT == 1) ? dut_m_tvalid && !(stalled_q && !m_axis_tready)
                          : (PLANT == 4) ? dut_m_tvalid || ghost_q : dut_m_tvalid;
wire [63:0] m_axis_tdata  = (PLANT == 2) ? dut_m_tdata ^ {63'd0, stalled_q} : dut_m_tdata;
wire [7:0]  m_axis_tkeep  = dut_m_tkeep;
wire        m_axis_tlast  = dut_m_tlast;
// PLANT 6: a pipeline one stage short: P2's record is offered (and counted as out) already
wire        res_valid     = (PLANT == 3) ? dut_res_valid || again_q
                          : (PLANT == 5) ? dut_res_valid && late_q
                          : (PLANT == 6) ? dut_res_valid || dut_last : dut_res_valid;
assign inflight = (PLANT == 6) ? dut_inflight - {1'b0, dut_last} : dut_inflight;
always @(posedge clk) begin
    stalled_q <= dut_m_tvalid && !m_axis_tready;
    again_q <= dut_res_valid && res_ready && !again_q;
    ghost_q <= !s_axis_tvalid && !ghost_q;
    late_q <= dut_res_valid && !(late_q && res_ready);
end

// ---- assumptions: reset first, then the upstream source obeys AXI4-Stream
reg init = 1'b1;
always @(posedge clk) init <= 1'b0;
reg past_ok = 1'b0;  // a previous cycle exists and it was not in reset
always @(posedge clk) past_ok <= !rst;
always @* if (init) assume (rst);

always @(posedge clk) if (past_ok && !rst && $past(s_axis_tvalid && !s_axis_tready)) begin
    assume (s_axis_tvalid);
    assume (s_axis_tdata == $past(s_axis_tdata) && s_axis_tkeep == $past(s_axis_tkeep)
            && s_axis_tlast == $past(s_axis_tlast));
end
// packed: all ones but on the last beat, which is contiguous from byte 0 and not empty
always @* if (s_axis_tvalid)
    assume (s_axis_tlast ? (s_axis_tkeep != 8'd0 && ((s_axis_tkeep + 8'd1) & s_axis_tkeep) == 8'd0)
                         : s_axis_tkeep == 8'hFF);

// ---- bookkeeping since reset: frames in, records taken, beats of the frame in progress
reg [7:0] frames = 8'd0, records = 8'd0, fbeats = 8'd0, last_len = 8'd0;
always @(posedge clk) begin
    if (s_axis_tvalid && s_axis_tready) begin
        fbeats <= s_axis_tlast ? 8'd0 : (fbeats == 8'hFF ? fbeats : fbeats + 8'd1);
        if (s_axis_tlast) last_len <= fbeats + 8'd1;
        if (s_axis_tlast) frames <= frames + 8'd1;
    end
    if (res_valid && res_ready) records <= records + 8'd1;
    if (rst) begin
        frames <= 8'd0;
        records <= 8'd0;
        fbeats <= 8'd0;
        last_len <= 8'd0;
    end
end

wire [7:0] pending = frames - records;  // modulo 256, as the counters wrap

// took[k]: a last beat was accepted k+1 cycles ago and res_ready was high in every cycle
// since (the pipeline never held): its record must be out exactly LAT cycles after it.
reg [LAT-1:0] took = {LAT{1'b0}};
always @(posedge clk)
    took <= rst ? {LAT{1'b0}}
                : {took[LAT-2:0] & {(LAT-1){res_ready}}, s_axis_tvalid && s_axis_tready && s_axis_tlast};

// ---- assertions
always @(posedge clk) if (past_ok && !rst) begin
    // m_axis: tvalid held until tready; tdata/tkeep/tlast stable while stalled
    if ($past(m_axis_tvalid && !m_axis_tready)) begin
        a_tvalid_held: assert (m_axis_tvalid);
        a_stable: assert (m_axis_tdata == $past(m_axis_tdata) && m_axis_tkeep == $past(m_axis_tkeep)
                          && m_axis_tlast == $past(m_axis_tlast));
    end
    // the record: res_valid held until res_ready
    if ($past(res_valid && !res_ready))
        a_record_held: assert (res_valid);
end

always @* if (past_ok && !rst) begin
    // nothing out without a frame in: a beat leaves only as the same beat enters
    a_out_is_in: assert ((m_axis_tvalid && m_axis_tready) == (s_axis_tvalid && s_axis_tready)
                         && (!m_axis_tvalid || (s_axis_tvalid && m_axis_tdata == s_axis_tdata
                                                && m_axis_tkeep == s_axis_tkeep
                                                && m_axis_tlast == s_axis_tlast)));
    // one record per frame: every finished frame's record is in the pipeline, waiting or
    // taken, never two
    a_one_record: assert (frames == records + {6'd0, inflight} + {7'd0, res_valid});
    // no record is overwritten: at most one per stage (P1, P2, the output)
    a_record_kept: assert (pending <= LAT[7:0]);
    // the latency: LAT cycles after the last beat (res_ready high since) its record is out,
    // and one cycle earlier it was still inside the pipeline
    a_latency: assert (!took[LAT-1] || res_valid);
    a_not_early: assert (!took[LAT-2] || inflight != 2'd0);
end

// ---- reachability: each assertion's premise happens
always @(posedge clk) if (past_ok && !rst) begin
    c_stall_out: cover ($past(m_axis_tvalid && !m_axis_tready) && m_axis_tvalid && m_axis_tready);
    c_stall_record: cover ($past(res_valid && !res_ready) && s_axis_tvalid && s_axis_tlast && !s_axis_tready);
    c_two_records: cover (records == 8'd2);
    c_long_frame: cover (res_valid && res_ready && last_len >= HDR_BEATS);  // >= 106 bytes
    c_latency: cover (took[LAT-1] && res_valid && frames == 8'd2);
    c_pipeline_full: cover (inflight == 2'd2 && res_valid && !res_ready);
end

endmodule
