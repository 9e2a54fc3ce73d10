"""Switch ports of a P4Runtime target as Linux interfaces: one AF_PACKET socket per port
(`p4rtproto.afpacket`: frames back as they were on the wire, 802.1Q tag included),
optionally opened inside a network namespace. Used by the P4Runtime target's port map, the
pytest plugin and the lab agent."""

from __future__ import annotations

import contextlib
import select
import socket
from collections.abc import Mapping

from p4rtproto.afpacket import PACKET_OUTGOING, packet_socket, recv_frame

from .base import TargetError


class AfPacketPorts:
    """One packet socket per switch port: `ports` maps a port to an interface, `netns` (per
    port, optional) to the namespace it lives in. Needs root."""

    # Linux refuses to send a frame shorter than the link's header on a SOCK_RAW packet socket
    # (net/packet/af_packet.c `packet_snd` -> `dev_validate_header`: EINVAL), 14 on Ethernet.
    MIN_FRAME = 14

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
                if addr[2] == PACKET_OUTGOING:
                    continue  # our own transmissions
                out.append((port, data))
        return out

    def close(self) -> None:
        for s in self.socks.values():
            with contextlib.suppress(OSError):
                s.close()
