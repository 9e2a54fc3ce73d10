"""The rocelab lab: RoCEv2 hosts and a P4 switch on one machine.

`lab.topo` describes topologies once; `lab.netns_lab` builds them with plain network
namespaces and veth pairs, `lab.mininet_lab` with Mininet (Debian's package); both start the
switch (p4sim-switch or BMv2 simple_switch_grpc) on the switch ends, `lab.agent` runs in each
host, and `lab.run` ties it together (`make lab-pair`).

Congested labs (`make lab`): `lab.labfile` reads a lab file (the fabric's topology, flows, a
switch policy, DCQCN knobs; `lab/topologies/`), `lab.congested` builds it on namespaces with
one switch process per switch and tc-shaped links (`lab.shape`), and runs `lab.dcqcn_agent`
(a DCQCN-paced sender, a CNP-answering receiver) in the hosts.
"""
