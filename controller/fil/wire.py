"""The loop's port on a real interface (bring-up): AF_PACKET on a NIC or veth cabled to a
board whose receive path is roce_rx, or, in CI, to a Python NP standing in for the board.

A board keeps its own clock, so this port is not exact in virtual time: each epoch's
frames leave in order, the port then waits until the wire is quiet, and what came back
(CNPs) enters the loop at the epoch's end (the latest instant causality allows). The loop
checks every CNP structurally (equal to the host's own CNP for the flow its DestQP names,
and answering a CE frame of that flow sent since its last CNP); the records are the
harness's decode() of what it sent, checked against p4sim's parser. Needs root.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable

from controller.hosts.dcqcn import NotificationPoint
from controller.packets import decode
from controller.packets.build import cnp_frame, ip_to_int
from controller.targets.afpacket import AfPacketPorts
from p4rtproto.afpacket import packet_socket, recv_frame

from .np_regs import NpConfig
from .rtl import Exchange


class WirePort:
    exact = False
    clock_ps = 1000  # the interval is handed over in ns

    def __init__(
        self,
        iface: str,
        netns: str | None = None,
        *,
        driver: Callable[[NpConfig], None],
        quiet_s: float = 0.02,
        timeout_s: float = 2.0,
    ):
        """`driver(cfg)` programs the board's NP (its register writes: cfg.writes())."""
        self.ports = AfPacketPorts({0: iface}, {0: netns})
        self.driver = driver
        self.quiet_s, self.timeout_s = quiet_s, timeout_s
        self.frames_in = 0
        self.other = 0  # frames back that are not CNPs (ignored)

    def setup(self, cfg: NpConfig, now_ns: int) -> None:
        self.cfg = cfg
        self.driver(cfg)

    def exchange(self, until_ns: int, inputs: list[tuple[int, bytes]]) -> Exchange:
        out = Exchange()
        for t, frame in inputs:
            self.ports.send(0, frame)
            self.frames_in += 1
            out.to_host.append((t, frame))
        if not inputs:
            return out
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            got = self.ports.poll(self.quiet_s)
            if not got:
                break
            for _port, frame in got:
                if decode(frame).is_cnp:
                    out.to_wire.append((until_ns, frame))
                else:
                    self.other += 1
        return out

    def close(self) -> None:
        self.ports.close()


class PythonNpBoard:
    """The stand-in for a board: on `iface` (in `netns`), CE-marked RoCEv2 data of a flow
    in `cfg` gets a CNP, at most one per flow per interval of its own (wall) clock, built
    from the same context the RTL would be given."""

    def __init__(self, iface: str, netns: str | None = None):
        self.sock = packet_socket(iface, netns)
        self.sock.setblocking(False)
        self.cfg: NpConfig | None = None
        self.flows: dict = {}
        self.cnps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def configure(self, cfg: NpConfig) -> None:
        """What the board's driver does: the NP's context table and interval."""
        self.np = NotificationPoint(cfg.interval_cycles)  # ns: WirePort.clock_ps = 1000
        self.flows = {(ip_to_int(q.peer_ip), q.local_qpn): q for q in cfg.qps}
        self.cfg = cfg

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.01)
            if not ready:
                continue
            while True:
                try:
                    data, addr = recv_frame(self.sock)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING or self.cfg is None:
                    continue
                rec = decode(data)
                q = self.flows.get((rec.ip_src, rec.bth_dqpn))
                if (
                    q is None
                    or not rec.ecn_ce
                    or rec.is_cnp
                    or rec.err_icrc
                    or not self.np.on_ce((rec.ip_src, rec.bth_dqpn), time.monotonic_ns())
                ):
                    continue
                c = self.cfg
                self.sock.send(
                    cnp_frame(
                        c.local_ip,
                        q.peer_ip,
                        q.peer_qpn,
                        eth_src=c.local_mac,
                        eth_dst=q.peer_mac,
                        dscp=c.cnp_dscp,
                        sport=q.sport,
                    )
                )
                self.cnps += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()
