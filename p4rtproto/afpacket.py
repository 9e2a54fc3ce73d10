"""Linux interfaces as switch ports: AF_PACKET sockets that give back received frames as they
were on the wire (802.1Q tag included), optionally opened inside a network namespace.

One module for everyone who reads frames off an interface: p4sim-switch's interface ports,
the P4Runtime target's port map, the lab agent and the FPGA-in-the-loop wire. Two copies of
the VLAN restore had drifted (one ignored a tag reported by its TCI alone); this is the one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import struct
from collections.abc import Iterator

ETH_P_ALL = 0x0003
CLONE_NEWNET = 0x40000000
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_AUXDATA = 8
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)  # asm-generic/socket.h
PACKET_OUTGOING = 4  # sockaddr_ll.sll_pkttype of a copy of our own transmission
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
ETH_P_8021Q = 0x8100
AUXDATA = struct.Struct("IIIHHHH")  # struct tpacket_auxdata (linux/if_packet.h)

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


def packet_socket(
    iface: str, netns: str | None = None, *, promiscuous: bool = False, rcvbuf: int | None = None
) -> socket.socket:
    """An AF_PACKET raw socket bound to `iface` (in `netns`), seeing every EtherType, with
    PACKET_AUXDATA on so `recv_frame` can put back the VLAN tag the kernel strips.
    `promiscuous`: also frames not addressed to the interface (a switch port wants them)."""
    with entered(netns):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            # before bind: every frame the socket queues carries its tag in the auxdata
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            sock.bind((iface, ETH_P_ALL))
            if promiscuous:
                mreq = struct.pack("iHH8s", socket.if_nametoindex(iface), PACKET_MR_PROMISC, 0, b"")
                sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            if rcvbuf:
                # SO_RCVBUF is capped at net.core.rmem_max (208 KiB on a stock kernel);
                # SO_RCVBUFFORCE (CAP_NET_ADMIN: root, as a switch port is) is not
                try:
                    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
                except PermissionError:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        except OSError:
            sock.close()
            raise
    return sock


def restore_vlan(frame: bytes, ancdata: list) -> bytes:
    """Put back the 802.1Q/802.1ad tag the kernel moved out of a received frame (into the
    packet's metadata, whatever the offloads say), as libpcap does (pcap-linux.c,
    VLAN_VALID and VLAN_TPID): a tag is there when the status says so or its TCI is not 0
    (kernels before 3.0 set no flag); its TPID is the reported one when flagged or non-zero,
    else 0x8100."""
    for level, kind, data in ancdata:
        if level != SOL_PACKET or kind != PACKET_AUXDATA or len(data) < AUXDATA.size:
            continue
        status, _len, _snap, _mac, _net, tci, tpid = AUXDATA.unpack_from(data)
        if tci or status & TP_STATUS_VLAN_VALID:
            if not (tpid or status & TP_STATUS_VLAN_TPID_VALID):
                tpid = ETH_P_8021Q
            return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
    return frame


def recv_frame(sock: socket.socket, bufsize: int = 65535) -> tuple[bytes, tuple]:
    """One frame as it was on the wire, and its sockaddr_ll (addr[2] is the packet type:
    PACKET_OUTGOING for a copy of what we sent)."""
    data, ancdata, _flags, addr = sock.recvmsg(bufsize, socket.CMSG_SPACE(AUXDATA.size))
    return restore_vlan(data, ancdata), addr
