"""FPGA-in-the-loop: a scenario's receiving NIC in RTL (roce_parser -> roce_np) or on a real
port, in p4sim's virtual time, with every frame's parsed record cross-checked."""
