/*
 * rocelab: the receive path of a RoCE NIC: roce_parser -> roce_np.
 *
 * Frames from the wire (s_axis) pass through the parser unchanged to the host (m_axis);
 * the parser's result records feed the notification point, whose CNPs leave on cnp_axis.
 * res_valid/res_ready/res_data show the record handshake (a monitor's tap: the
 * co-simulation cross-checks every record). The NP is connected by the parser's named
 * res_<field> ports only, so fields added to the record leave this file alone (hence the
 * PINMISSING waiver on the parser instance). RECORD_BITS defaults to the parser's record
 * width; tests/hdl/test_record_width.py fails when the two (or controller/packets/fields.py)
 * drift, and the lint of this module alone at its defaults flags a mis-sized port.
 */

`resetall
`timescale 1ns / 1ps
`default_nettype none

module roce_rx #(
    parameter DATA_WIDTH = 64,
    parameter KEEP_WIDTH = DATA_WIDTH / 8,
    parameter RECORD_BITS = 1167,  // = roce_parser's RECORD_BITS (tests/hdl/test_record_width.py)
    parameter SLOTS = 4
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

    output wire                   res_valid,
    output wire                   res_ready,
    output wire [RECORD_BITS-1:0] res_data,

    input  wire                   cfg_we,
    input  wire [7:0]             cfg_addr,
    input  wire [31:0]            cfg_wdata,

    output wire [DATA_WIDTH-1:0]  cnp_axis_tdata,
    output wire [KEEP_WIDTH-1:0]  cnp_axis_tkeep,
    output wire                   cnp_axis_tvalid,
    input  wire                   cnp_axis_tready,
    output wire                   cnp_axis_tlast,

    output wire [31:0]            stat_ce,
    output wire [31:0]            stat_cnp
);

wire [1:0]   roce_version;
wire         vlan_valid;
wire [11:0]  vlan_vid;
wire [3:0]   ip_version;
wire [127:0] ip_src;
wire [23:0]  bth_dqpn;
wire         is_roce, is_cnp, ecn_ce;
wire         err_truncated, err_ip_csum, err_icrc, err_unsupported;

/* verilator lint_off PINMISSING */
roce_parser #(.DATA_WIDTH(DATA_WIDTH)) parser (
    .clk(clk), .rst(rst),
    .s_axis_tdata(s_axis_tdata), .s_axis_tkeep(s_axis_tkeep), .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready), .s_axis_tlast(s_axis_tlast),
    .m_axis_tdata(m_axis_tdata), .m_axis_tkeep(m_axis_tkeep), .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready), .m_axis_tlast(m_axis_tlast),
    .res_valid(res_valid), .res_ready(res_ready), .res_data(res_data),
    .res_roce_version(roce_version), .res_vlan_valid(vlan_valid), .res_vlan_vid(vlan_vid),
    .res_ip_version(ip_version), .res_ip_src(ip_src),
    .res_bth_dqpn(bth_dqpn), .res_is_roce(is_roce), .res_is_cnp(is_cnp), .res_ecn_ce(ecn_ce),
    .res_err_truncated(err_truncated), .res_err_ip_csum(err_ip_csum),
    .res_err_icrc(err_icrc), .res_err_unsupported(err_unsupported)
);
/* verilator lint_on PINMISSING */

roce_np #(.DATA_WIDTH(DATA_WIDTH), .SLOTS(SLOTS)) np (
    .clk(clk), .rst(rst),
    .rec_valid(res_valid), .rec_ready(res_ready),
    .rec_roce_version(roce_version), .rec_vlan_valid(vlan_valid), .rec_vlan_vid(vlan_vid),
    .rec_ip_version(ip_version), .rec_ip_src(ip_src),
    .rec_bth_dqpn(bth_dqpn), .rec_is_roce(is_roce), .rec_is_cnp(is_cnp), .rec_ecn_ce(ecn_ce),
    .rec_err_truncated(err_truncated), .rec_err_ip_csum(err_ip_csum),
    .rec_err_icrc(err_icrc), .rec_err_unsupported(err_unsupported),
    .cfg_we(cfg_we), .cfg_addr(cfg_addr), .cfg_wdata(cfg_wdata),
    .m_axis_tdata(cnp_axis_tdata), .m_axis_tkeep(cnp_axis_tkeep),
    .m_axis_tvalid(cnp_axis_tvalid), .m_axis_tready(cnp_axis_tready),
    .m_axis_tlast(cnp_axis_tlast),
    .stat_ce(stat_ce), .stat_cnp(stat_cnp)
);

endmodule

`resetall
