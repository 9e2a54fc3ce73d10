"""Linux interfaces standing for switch ports: AF_PACKET sockets, optionally opened inside
a network namespace, that give back received frames as they were on the wire (802.1Q tag
included). Used by the P4Runtime target's port map, the pytest plugin and the lab agent."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import socket
import struct
from collections.abc import Iterator, Mapping

from .base import TargetError

ETH_P_ALL = 0x0003
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def entered(netns: str | None) -> Iterator[None]:
    """Run the block with this thread inside `netns` (setns(2)); sockets opened there stay
    bound to that namespace after the thread returns to its own."""
    if netns is None:
        yield
        return
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {netns}")
        try:
            yield
        finally:
            if _libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back to the original namespace")
    finally:
        os.close(own)
        os.close(target)


def packet_socket(iface: str, netns: str | None = None) -> socket.socket:
    """An AF_PACKET socket bound to `iface` (in `netns`), seeing every EtherType, with
    PACKET_AUXDATA on so `recv_frame` can put back the VLAN tag the kernel strips."""
    with entered(netns):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            sock.bind((iface, 0))
        except OSError:
            sock.close()
            raise
    return sock


SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_AUXDATA = struct.Struct("IIIHHHH")  # struct tpacket_auxdata


def recv_frame(sock: socket.socket, bufsize: int = 65535) -> tuple[bytes, tuple]:
    """One frame as it was on the wire. The kernel moves an 802.1Q tag out of received frames
    (into the packet's metadata) before packet sockets see them, whatever the offloads say;
    like libpcap, put it back from PACKET_AUXDATA."""
    data, ancdata, _flags, addr = sock.recvmsg(bufsize, socket.CMSG_SPACE(_AUXDATA.size))
    for level, kind, cdata in ancdata:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(cdata) >= _AUXDATA.size:
            status, _len, _snap, _mac, _net, tci, tpid = _AUXDATA.unpack_from(cdata)
            if status & TP_STATUS_VLAN_VALID:
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data, addr


class AfPacketPorts:
    """One packet socket per switch port: `ports` maps a port to an interface, `netns` (per
    port, optional) to the namespace it lives in. Needs root."""

    def __init__(self, ports: Mapping[int, str], netns: Mapping[int, str | None] | None = None):
        self.socks: dict[int, socket.socket] = {}
        self.by_fd: dict[int, int] = {}
        try:
            for port, iface in ports.items():
                sock = packet_socket(iface, (netns or {}).get(port))
                sock.setblocking(False)
                self.socks[port] = sock
                self.by_fd[sock.fileno()] = port
        except BaseException:
            self.close()
            raise

    def send(self, port: int, frame: bytes) -> None:
        sock = self.socks.get(port)
        if sock is None:
            raise TargetError(f"port {port} has no interface in the port map", "NOT_FOUND")
        sock.send(frame)

    def poll(self, timeout_s: float) -> list[tuple[int, bytes]]:
        """(port, frame) for everything received within `timeout_s` (0: what is there)."""
        out: list[tuple[int, bytes]] = []
        ready, _, _ = select.select(list(self.socks.values()), [], [], max(0.0, timeout_s))
        for sock in ready:
            port = self.by_fd[sock.fileno()]
            while True:
                try:
                    data, addr = recv_frame(sock)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING:
                    continue  # our own transmissions
                out.append((port, data))
        return out

    def close(self) -> None:
        for s in self.socks.values():
            with contextlib.suppress(OSError):
                s.close()
