"""The congested lab on Mininet (Debian's `mininet`), the same lab file as on namespaces.

Mininet builds the hosts (each its own network namespace, entered with `mnexec -a PID`)
and the veth links; the switches are Mininet nodes in the root namespace whose data plane
is one P4Runtime switch process each, started by `lab.congested` as on namespaces (so the
egress rates, the programming and the counters are the same code). Links get our tc
(`lab.shape`), not Mininet's TCLink: TCLink's netem and htb would rate-limit the switch
ends in the kernel, and the queue must build in the switch.
"""

from __future__ import annotations

import os
import subprocess

from .labfile import LabSpec
from .mininet_lab import import_mininet

IPV6_OFF = "/proc/sys/net/ipv6/conf/{}/disable_ipv6"


class MininetNetwork:
    """Hosts, switch nodes and links of a lab file, built by Mininet. `port_maps` and
    `prefix(host)` are what `lab.congested.CongestedLab` needs from a network."""

    backend = "mininet"

    def __init__(self, spec: LabSpec):
        import_mininet()
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import Switch
        from mininet.topo import Topo

        class _ProcessSwitch(Switch):
            """A switch node whose data plane is started outside Mininet (by the lab)."""

            def start(self, controllers: list) -> None:
                pass

        setLogLevel("warning")
        Mininet.inited = True  # leave the machine's limits and sysctls alone (see mininet_lab)
        pid = os.getpid()
        topo = spec.topology
        self.sw_name = {s: f"rl{pid}s{k}" for k, s in enumerate(topo.switches, start=1)}
        self.host_name = {h: f"rl{pid}h{i}" for i, h in enumerate(topo.hosts, start=1)}
        self.host_iface = {h: f"rl{pid}v{i}" for i, h in enumerate(topo.hosts, start=1)}
        self.port_maps: dict[str, dict[int, str]] = {s: {} for s in topo.switches}
        self.host_links: dict[str, tuple[str, str]] = {}  # host -> (its iface, the switch's)
        self.switch_links: list[tuple[str, str, int]] = []  # (iface, iface, delay)
        lab = self

        class _Topo(Topo):
            def build(self) -> None:
                for k, name in enumerate(lab.sw_name.values(), start=1):
                    self.addSwitch(name, cls=_ProcessSwitch, dpid=f"{k:x}", inNamespace=False)
                for i, h in enumerate(topo.hosts.values(), start=1):
                    node = self.addHost(lab.host_name[h.name], ip=None, mac=h.mac)
                    outer = f"rl{pid}p{i}"
                    self.addLink(
                        node,
                        lab.sw_name[h.switch],
                        port2=h.port,
                        intfName1=lab.host_iface[h.name],
                        intfName2=outer,
                    )
                    lab.port_maps[h.switch][h.port] = outer
                    lab.host_links[h.name] = (lab.host_iface[h.name], outer)
                inter = [lk for lk in topo.links if lk.a[0] in topo.switches]
                for j, lk in enumerate(inter):
                    ea, eb = f"rl{pid}x{j}", f"rl{pid}y{j}"
                    self.addLink(
                        lab.sw_name[lk.a[0]],
                        lab.sw_name[lk.b[0]],
                        port1=lk.a[1],
                        port2=lk.b[1],
                        intfName1=ea,
                        intfName2=eb,
                    )
                    lab.port_maps[lk.a[0]][lk.a[1]] = ea
                    lab.port_maps[lk.b[0]][lk.b[1]] = eb
                    lab.switch_links.append((ea, eb, lk.delay_ns))

        self.net = Mininet(
            topo=_Topo(), controller=None, autoSetMacs=False, autoStaticArp=False, build=False
        )
        try:
            self.net.build()
            for h in topo.hosts:  # the kernel stays off the lab links (no IPv6 chatter)
                self.net.get(self.host_name[h]).cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
            for ports in self.port_maps.values():
                for iface in ports.values():
                    path = IPV6_OFF.format(iface)
                    if os.path.exists(path):
                        with open(path, "w") as f:
                            f.write("1")
            self.net.start()
        except BaseException:
            self.close()
            raise

    def prefix(self, host: str) -> list[str]:
        """The command prefix that runs a command inside `host`."""
        return ["mnexec", "-a", str(self.net.get(self.host_name[host]).pid)]

    def popen(self, host: str, argv: list[str], **kw) -> subprocess.Popen:
        return self.net.get(self.host_name[host]).popen(list(argv), **kw)

    def close(self) -> None:
        net, self.net = getattr(self, "net", None), None
        if net is not None:
            net.stop()
