"""Build a lab topology with Mininet (Debian's `mininet` package), without Open vSwitch.

Mininet gives each host its own network namespace and wires veth pairs; the switch is one
our node class, which starts a P4Runtime switch on the switch's interfaces instead of an
OpenFlow switch: the target kind's own `start` (p4sim-switch, simple_switch_grpc, ...,
controller/targets/kinds/). No OpenFlow controller and no ovs-vswitchd are needed.

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

from controller.targets import registry
from controller.targets.config import TargetConfig
from controller.targets.netns import is_root
from controller.targets.switches import SwitchProcess

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


def node_class() -> type:
    """The Mininet switch node class: its data plane is the switch process of a target kind."""
    import_mininet()
    from mininet.node import Switch

    class P4RuntimeSwitch(Switch):
        """A Mininet switch node running `cfg`'s target kind on its interfaces."""

        def __init__(
            self, name: str, cfg: TargetConfig | None = None, log_dir: str | None = None, **params
        ):
            params.setdefault("dpid", "1")
            super().__init__(name, **params)
            if cfg is None:
                raise ValueError(f"{name}: P4RuntimeSwitch needs cfg=TargetConfig(kind=...)")
            self.cfg, self.log_dir = cfg, log_dir
            self.process: SwitchProcess | None = None

        def port_map(self) -> dict[int, str]:
            return {
                port: intf.name
                for intf, port in self.ports.items()
                if intf.name != "lo" and port > 0
            }

        def start(self, controllers: list) -> None:
            self.process = registry.get(self.cfg.kind).start(
                self.cfg, self.port_map(), log_dir=self.log_dir
            )

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 (Mininet's name)
            if self.process is not None:
                self.process.close()
            super().stop(deleteIntfs)

    return P4RuntimeSwitch


class MininetLab:
    backend = "mininet"

    def __init__(self, topology: Topology, log_dir: str | Path | None = None):
        self.topology = topology
        self.log_dir = str(log_dir) if log_dir else None
        self.net = None
        self.switch: SwitchProcess | None = None
        self.ports: dict[int, str] = {}
        self._pid = os.getpid()

    def _host_name(self, h: Host) -> str:
        return f"rl{self._pid}h{h.port}"

    def _host_iface(self, h: Host) -> str:
        return f"rl{self._pid}v{h.port}"

    def start_switch(self, cfg: TargetConfig) -> SwitchProcess:
        """Build the Mininet network with a switch node of kind `cfg.kind` and start it."""
        import_mininet()
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.topo import Topo

        setLogLevel("warning")
        # Mininet.init() would raise system-wide limits and sysctls (fixLimits); a lab of a
        # few hosts needs none of that, and we leave the machine's settings alone.
        Mininet.inited = True
        switch_cls = node_class()
        lab = self
        sname = f"rl{self._pid}s"

        class _Topo(Topo):
            def build(self) -> None:
                s = self.addSwitch(sname, cls=switch_cls, cfg=cfg, log_dir=lab.log_dir)
                for h in lab.topology.hosts:
                    # ip=None: no kernel address (the agent owns h.ip, as a RoCE NIC would),
                    # so the kernel never answers RoCE with ICMP port unreachable.
                    node = self.addHost(lab._host_name(h), ip=None, mac=h.mac)
                    self.addLink(
                        node,
                        s,
                        port2=h.port,
                        intfName1=lab._host_iface(h),
                        intfName2=f"{sname}-eth{h.port}",
                    )

        self.net = Mininet(
            topo=_Topo(), controller=None, autoSetMacs=False, autoStaticArp=False, build=False
        )
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
