"""Network namespaces and veth pairs for labs and tests, always cleaned up.

Every object this module creates carries the creating process id in its name
(`rl<pid>...`), so parallel runs (pytest-xdist, two labs) never collide, and objects left by
a process that died are recognisable and swept (`sweep_stale`). Nothing here touches an
interface or address it did not create: interfaces in the root namespace get no address and
IPv6 is disabled on them so the kernel stays quiet on the switch ports.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

# Entering a namespace and packet sockets live in p4rtproto.afpacket (the one AF_PACKET
# module); re-exported here for labs and tests.
from p4rtproto.afpacket import entered, packet_socket, recv_frame  # noqa: F401

IFNAMSIZ = 15  # Linux interface names: at most 15 characters
_PREFIX = "rl"
_NAME_RE = re.compile(rf"^{_PREFIX}(\d+)[a-z]")


class NetnsError(RuntimeError):
    """An `ip` command failed; the message carries its stderr."""


def is_root() -> bool:
    return os.geteuid() == 0


def name(kind: str, index: int | str = "", pid: int | None = None) -> str:
    """`rl<pid><kind><index>`, checked against the kernel's 15-character limit."""
    text = f"{_PREFIX}{os.getpid() if pid is None else pid}{kind}{index}"
    if len(text) > IFNAMSIZ:
        raise ValueError(f"name {text!r} is longer than {IFNAMSIZ} characters")
    return text


def ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    """Run `ip ARGS` (inside `netns` if given) and return its stdout."""
    argv = ["ip", *args] if netns is None else ["ip", "netns", "exec", netns, "ip", *args]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise NetnsError(f"{' '.join(argv)}: {proc.stderr.strip()}")
    return proc.stdout


def _set_sysctl_path(path: str, value: str, netns: str | None = None) -> None:
    if netns is None:
        with contextlib.suppress(FileNotFoundError), open(path, "w") as f:
            f.write(value)
    else:
        subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                netns,
                "sh",
                "-c",
                f"[ -e {path} ] && echo {value} > {path} || true",
            ],
            check=True,
        )


def disable_ipv6(iface: str, netns: str | None = None) -> None:
    """Keep the kernel from sending router/neighbour solicitations through the switch."""
    _set_sysctl_path(f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6", "1", netns)


def link_peer(iface: str, netns: str | None = None) -> str | None:
    """The name of a veth's peer when both ends are in the same namespace."""
    links = json.loads(ip("-j", "link", "show", netns=netns) or "[]")
    by_index = {link["ifindex"]: link["ifname"] for link in links}
    for link in links:
        if link["ifname"] == iface:
            if "link_netnsid" in link:
                return None  # the peer lives in another namespace
            peer = link.get("link_index")
            if peer is None and "link" in link:
                return link["link"]
            return by_index.get(peer) if peer is not None else None
    raise NetnsError(f"no interface {iface!r}" + (f" in netns {netns}" if netns else ""))


def peer_in_root(iface: str, netns: str | None = None) -> str | None:
    """The root-namespace name of the veth peer of `iface` (which may live in `netns`)."""
    if netns is None:
        return link_peer(iface)
    links = json.loads(ip("-j", "link", "show", "dev", iface, netns=netns) or "[]")
    if not links or "link_index" not in links[0] or "link_netnsid" not in links[0]:
        return None
    index = links[0]["link_index"]
    for link in json.loads(ip("-j", "link", "show") or "[]"):
        if link.get("ifindex") == index and "link_netnsid" in link:
            return link["ifname"]
    return None


# ---------------------------------------------------------------- a set of namespaces


@dataclass
class Veth:
    outer: str  # the end left in the root namespace (a switch port)
    inner: str  # the other end
    netns: str | None  # where `inner` lives (None: root namespace too)


@dataclass
class NetnsSet:
    """Namespaces, veth pairs and processes created together and removed together.

    Use as a context manager; removal also runs at interpreter exit and on SIGTERM, and is
    idempotent, so a failed test or a killed lab leaves nothing behind.
    """

    namespaces: list[str] = field(default_factory=list)
    veths: list[Veth] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)
    _closed: bool = False

    def __post_init__(self) -> None:
        if not is_root():
            raise PermissionError("network namespaces and veth pairs need root")
        atexit.register(self.close)
        _LIVE.add(self)
        _install_sigterm_cleanup()

    def __enter__(self) -> NetnsSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_netns(self, ns: str) -> str:
        ip("netns", "add", ns)
        self.namespaces.append(ns)
        # IPv6 off by default for every interface that will appear in it.
        for conf in ("all", "default"):
            _set_sysctl_path(f"/proc/sys/net/ipv6/conf/{conf}/disable_ipv6", "1", ns)
        ip("link", "set", "lo", "up", netns=ns)
        return ns

    def add_veth(
        self,
        outer: str,
        inner: str,
        netns: str | None = None,
        *,
        mac: str | None = None,
        addr: str | None = None,
        mtu: int = 9000,
    ) -> Veth:
        """A veth pair: `outer` stays in the root namespace (no address), `inner` goes to
        `netns` and gets `mac`/`addr` there. `addr` is only allowed inside a namespace.
        Jumbo MTU by default: RoCE runs 4096-byte MTUs and the vectors include such frames."""
        if addr is not None and netns is None:
            raise ValueError("addresses are only assigned inside namespaces we create")
        if netns is None:
            ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        else:
            ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", netns)
        veth = Veth(outer, inner, netns)
        self.veths.append(veth)
        disable_ipv6(outer)
        disable_ipv6(inner, netns)
        if mac:
            ip("link", "set", inner, "address", mac, netns=netns)
        for dev, ns in ((outer, None), (inner, netns)):
            ip("link", "set", dev, "mtu", str(mtu), "up", netns=ns)
        if addr:
            ip("addr", "add", addr, "dev", inner, netns=netns)
        return veth

    def popen(self, argv: Sequence[str], netns: str | None = None, **kw) -> subprocess.Popen:
        """Start a process (inside `netns`); it is stopped on close."""
        full = list(argv) if netns is None else ["ip", "netns", "exec", netns, *argv]
        proc = subprocess.Popen(full, start_new_session=True, **kw)
        self.procs.append(proc)
        return proc

    def run(
        self, argv: Sequence[str], netns: str | None = None, timeout: float = 60, **kw
    ) -> subprocess.CompletedProcess:
        full = list(argv) if netns is None else ["ip", "netns", "exec", netns, *argv]
        return subprocess.run(full, timeout=timeout, **kw)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for proc in reversed(self.procs):
            stop_process(proc)
        for veth in self.veths:  # deleting one end removes its peer
            ip("link", "del", veth.outer, check=False)
        for ns in reversed(self.namespaces):
            ip("netns", "del", ns, check=False)
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        _LIVE.discard(self)

    def __hash__(self) -> int:
        return id(self)


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """SIGTERM the process group started for `proc`, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


_LIVE: set[NetnsSet] = set()
_SIGTERM_INSTALLED = False


def _install_sigterm_cleanup() -> None:
    """SIGTERM (e.g. a CI time-out) runs cleanup before the default exit."""
    global _SIGTERM_INSTALLED
    if _SIGTERM_INSTALLED:
        return
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except ValueError:
        return
    if previous not in (signal.SIG_DFL, None):
        return  # someone else owns SIGTERM; atexit still covers normal exits

    def handler(signum: int, frame: object) -> None:
        for item in list(_LIVE):
            item.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    with contextlib.suppress(ValueError):  # only the main thread may install handlers
        signal.signal(signal.SIGTERM, handler)
        _SIGTERM_INSTALLED = True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Remove `rl<pid>...` namespaces and links whose creating process is gone.

    Only names of our own pattern whose pid no longer runs are touched. Returns what was
    removed.
    """
    removed: list[str] = []
    for line in ip("netns", "list", check=False).splitlines():
        ns = line.split()[0] if line.strip() else ""
        m = _NAME_RE.match(ns)
        if m and not _pid_alive(int(m.group(1))):
            ip("netns", "del", ns, check=False)
            removed.append(ns)
    for link in json.loads(ip("-j", "link", "show", check=False) or "[]"):
        dev = link.get("ifname", "")
        m = _NAME_RE.match(dev)
        if m and not _pid_alive(int(m.group(1))):
            ip("link", "del", dev, check=False)
            removed.append(dev)
    return removed
