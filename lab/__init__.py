"""The rocelab lab: RoCEv2 hosts and a P4 switch on one machine.

`lab.topo` describes topologies once; `lab.netns_lab` builds them with plain network
namespaces and veth pairs, `lab.mininet_lab` with Mininet (Debian's package); both start the
switch (p4sim-switch or BMv2 simple_switch_grpc) on the switch ends, `lab.agent` runs in each
host, and `lab.run` ties it together (`make lab`).
"""
