"""Build a lab topology with Mininet (Debian's `mininet` package), without Open vSwitch.

Mininet gives each host its own network namespace and wires veth pairs; the switch is one
of our node classes, which start a P4Runtime switch on the switch's interfaces instead of
an OpenFlow switch: `P4simSwitch` (p4sim-switch) and `Bmv2Switch` (simple_switch_grpc,
used when it is on PATH). No OpenFlow controller and no ovs-vswitchd are needed.

Debian installs Mininet for the system Python 3; `import_mininet()` loads that package into
our interpreter (it is pure Python; its helper `mnexec` is a separate binary).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from controller.testing.netns import is_root
from controller.testing.switches import SwitchProcess, start_bmv2, start_p4sim_switch

from .topo import Host, Topology

SYSTEM_DIST_PACKAGES = ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages")


def import_mininet() -> ModuleType:
    """`import mininet`, falling back to the system Python's dist-packages for that one
    package only (the rest of the system site stays out of our interpreter)."""
    try:
        return importlib.import_module("mininet")
    except ImportError:
        pass
    for d in SYSTEM_DIST_PACKAGES:
        spec = importlib.machinery.PathFinder.find_spec("mininet", [d])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules["mininet"] = module
            spec.loader.exec_module(module)
            return module
    raise ImportError("Mininet is not installed (Debian: apt-get install mininet)")


def mininet_unavailable() -> str | None:
    """Why Mininet cannot run here, or None when it can."""
    if not is_root():
        return "Mininet needs root"
    if shutil.which("mnexec") is None:
        return "mnexec (Debian package `mininet`) is not on PATH"
    try:
        import_mininet()
    except ImportError as e:
        return str(e)
    return None


def _node_classes() -> tuple[type, type]:
    import_mininet()
    from mininet.node import Switch

    class _P4RuntimeSwitch(Switch):
        """A Mininet switch node whose data plane is a P4Runtime switch process."""

        kind = ""

        def __init__(self, name: str, program: str | None = None, device_id: int = 1,
                     log_dir: str | None = None, **params):
            params.setdefault("dpid", "1")
            super().__init__(name, **params)
            self.program, self.device_id, self.log_dir = program, device_id, log_dir
            self.process: SwitchProcess | None = None

        def port_map(self) -> dict[int, str]:
            return {port: intf.name for intf, port in self.ports.items()
                    if intf.name != "lo" and port > 0}

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 (Mininet's name)
            if self.process is not None:
                self.process.close()
            super().stop(deleteIntfs)

    class P4simSwitch(_P4RuntimeSwitch):
        kind = "p4sim"

        def start(self, controllers: list) -> None:
            if self.program is None:
                raise ValueError(f"{self.name}: P4simSwitch needs program=PATH.p4")
            self.process = start_p4sim_switch(self.program, self.port_map(),
                                              device_id=self.device_id, log_dir=self.log_dir)

    class Bmv2Switch(_P4RuntimeSwitch):
        kind = "bmv2"

        def start(self, controllers: list) -> None:
            self.process = start_bmv2(self.port_map(), device_id=self.device_id,
                                      log_dir=self.log_dir)

    return P4simSwitch, Bmv2Switch


def node_class(kind: str) -> type:
    p4sim, bmv2 = _node_classes()
    return {"p4sim": p4sim, "bmv2": bmv2}[kind]


class MininetLab:
    backend = "mininet"

    def __init__(self, topology: Topology, log_dir: str | Path | None = None):
        self.topology = topology
        self.log_dir = str(log_dir) if log_dir else None
        self.net = None
        self.switch: SwitchProcess | None = None
        self.ports: dict[int, str] = {}
        self._pid = os.getpid()
        self._kind: str | None = None
        self._program: str | None = None

    def _host_name(self, h: Host) -> str:
        return f"rl{self._pid}h{h.port}"

    def _host_iface(self, h: Host) -> str:
        return f"rl{self._pid}v{h.port}"

    def start_switch(self, kind: str, program: str | Path | None = None,
                     device_id: int = 1) -> SwitchProcess:
        """Build the Mininet network with the switch node class for `kind` and start it."""
        import_mininet()
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.topo import Topo

        setLogLevel("warning")
        # Mininet.init() would raise system-wide limits and sysctls (fixLimits); a lab of a
        # few hosts needs none of that, and we leave the machine's settings alone.
        Mininet.inited = True
        switch_cls = node_class(kind)
        lab = self
        sname = f"rl{self._pid}s"

        class _Topo(Topo):
            def build(self) -> None:
                s = self.addSwitch(sname, cls=switch_cls,
                                   program=str(program) if program else None,
                                   device_id=device_id, log_dir=lab.log_dir)
                for h in lab.topology.hosts:
                    # ip=None: no kernel address (the agent owns h.ip, as a RoCE NIC would),
                    # so the kernel never answers RoCE with ICMP port unreachable.
                    node = self.addHost(lab._host_name(h), ip=None, mac=h.mac)
                    self.addLink(node, s, port2=h.port, intfName1=lab._host_iface(h),
                                 intfName2=f"{sname}-eth{h.port}")

        self.net = Mininet(topo=_Topo(), controller=None, autoSetMacs=False,
                           autoStaticArp=False, build=False)
        try:
            self.net.build()
            for h in self.topology.hosts:  # keep the kernel quiet on the lab links
                node = self.net.get(self._host_name(h))
                node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
            sw = self.net.get(sname)
            self.ports = sw.port_map()
            for iface in self.ports.values():
                path = f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6"
                if os.path.exists(path):
                    with open(path, "w") as f:
                        f.write("1")
            self.net.start()
        except BaseException:
            self.close()
            raise
        self.switch = sw.process
        return sw.process

    def host_iface(self, host: Host) -> str:
        return self._host_iface(host)

    def popen_host(self, host: Host, argv: Sequence[str], **kw) -> subprocess.Popen:
        assert self.net is not None, "start_switch() builds the network first"
        return self.net.get(self._host_name(host)).popen(list(argv), **kw)

    def close(self) -> None:
        if self.net is not None:
            net, self.net = self.net, None
            net.stop()

    def __enter__(self) -> MininetLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
