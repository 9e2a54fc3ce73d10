"""RoCEv2 host models: RC QPs (rc), DCQCN NP/RP (dcqcn), the NIC that speaks frames (host)."""
