"""Switch ports: in-process (a Python API) and Linux interfaces through AF_PACKET.

A `PortSet` sits between the outside world and whoever drives the switch (the P4Runtime
server, or a test): frames that arrive on a port go to `sink(port, frame)`; frames the
switch emits go to `PortSet.transmit(port, frame)`. Optional per-port pcap capture writes
`port<N>_in.pcap` and `port<N>_out.pcap` in a directory (like BMv2's `--pcap`).

Interfaces: one raw socket per interface (`AF_PACKET`, `SOCK_RAW`, `ETH_P_ALL`) in
promiscuous mode, and a reader thread per interface; copies of our own transmissions
(`PACKET_OUTGOING`) are ignored, as BMv2 does, or the switch would loop. The sockets and the
802.1Q tag restore (the kernel strips the tag of received frames; we put it back, as libpcap
does for BMv2) are `p4rtproto.afpacket`'s, shared with the controller's AF_PACKET ports.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import select
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from p4rtproto import afpacket

log = logging.getLogger("p4sim.ports")

Sink = Callable[[int, bytes], None]
SinkMany = Callable[[int, list[bytes]], None]  # frames that arrived together on one port
PACKET_IGNORE_OUTGOING = 23  # linux/if_packet.h


class _Capture:
    """Two pcap files per port (frames in, frames out), written as they happen."""

    def __init__(self, directory: str | os.PathLike[str], port: int) -> None:
        from scapy.utils import PcapWriter

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._in = PcapWriter(str(d / f"port{port}_in.pcap"), linktype=1, sync=True)
        self._out = PcapWriter(str(d / f"port{port}_out.pcap"), linktype=1, sync=True)

    def write(self, direction: str, frame: bytes) -> None:
        with self._lock:
            (self._in if direction == "in" else self._out).write(frame)

    def close(self) -> None:
        with self._lock:
            self._in.close()
            self._out.close()


class Port:
    """Base: a numbered switch port."""

    kind = "port"

    def __init__(self, number: int) -> None:
        self.number = number
        self.rx_frames = 0
        self.tx_frames = 0

    def start(self, deliver: Sink, deliver_many: SinkMany | None = None) -> None:
        """Begin feeding received frames to `deliver` (or batches to `deliver_many`)."""

    def transmit(self, frame: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class InProcessPort(Port):
    """A port driven from Python: `inject(frame)` sends into the switch; what the switch
    emits is kept in `output` (and handed to `on_output` if set)."""

    kind = "inprocess"

    def __init__(self, number: int, on_output: Callable[[bytes], None] | None = None) -> None:
        super().__init__(number)
        self.output: collections.deque[bytes] = collections.deque()
        self.on_output = on_output
        self._deliver: Sink | None = None
        self._cond = threading.Condition()

    def start(self, deliver: Sink, deliver_many: SinkMany | None = None) -> None:
        self._deliver = deliver

    def inject(self, frame: bytes) -> None:
        if self._deliver is None:
            raise RuntimeError(f"port {self.number} is not attached to a switch")
        self.rx_frames += 1
        self._deliver(self.number, bytes(frame))

    def transmit(self, frame: bytes) -> None:
        self.tx_frames += 1
        if self.on_output is not None:
            self.on_output(frame)
            return
        with self._cond:
            self.output.append(frame)
            self._cond.notify_all()

    def wait_output(self, timeout: float = 1.0) -> bytes | None:
        """The next frame the switch sent on this port, waiting up to `timeout` seconds."""
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self.output), timeout):
                return None
            return self.output.popleft()


class InterfacePort(Port):
    """A Linux network interface (veth, tap, NIC) through an AF_PACKET raw socket."""

    kind = "interface"
    READ_BATCH = 64  # frames read off the socket before they go to the switch together

    def __init__(self, number: int, ifname: str) -> None:
        super().__init__(number)
        self.ifname = ifname
        try:
            self.sock = afpacket.packet_socket(ifname, promiscuous=True, rcvbuf=4 << 20)
        except PermissionError as exc:
            raise PermissionError(f"port {number}@{ifname}: raw sockets need root (CAP_NET_RAW): {exc}") from None
        except OSError as exc:
            raise OSError(f"port {number}@{ifname}: cannot open the interface: {exc}") from None
        # the kernel keeps copies of our own transmissions off this socket (Linux >= 4.20): else
        # every frame sent wakes this port's reader only to be discarded (the check in
        # _reader stays for older kernels)
        with contextlib.suppress(OSError):
            self.sock.setsockopt(afpacket.SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        self.sock.setblocking(False)  # the reader polls; see _reader
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tx_lock = threading.Lock()

    def start(self, deliver: Sink, deliver_many: SinkMany | None = None) -> None:
        self._thread = threading.Thread(
            target=self._reader, args=(deliver, deliver_many), name=f"p4sim-port{self.number}-{self.ifname}",
            daemon=True,
        )
        self._thread.start()

    def _reader(self, deliver: Sink, deliver_many: SinkMany | None = None) -> None:
        """Frames already queued on the socket are read together (up to READ_BATCH, without
        blocking) and handed over as one batch: the switch then takes its lock and catches
        up its clock once per batch, not once per frame. The socket is non-blocking and the
        wait is a poll: a socket timeout would cost a poll(2) before every recvmsg."""
        sock, stop, batch_max = self.sock, self._stop, self.READ_BATCH
        recvmsg, restore, outgoing = sock.recvmsg, afpacket.restore_vlan, afpacket.PACKET_OUTGOING
        anc = socket.CMSG_SPACE(afpacket.AUXDATA.size)
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        while not stop.is_set():
            batch: list[bytes] = []
            try:
                while len(batch) < batch_max:
                    data, ancdata, _flags, addr = recvmsg(65535, anc)
                    if addr[2] != outgoing:
                        batch.append(restore(data, ancdata))
            except BlockingIOError:
                pass
            except OSError:
                if stop.is_set():
                    return
                log.exception("port %d@%s: receive failed", self.number, self.ifname)
                return
            if not batch:
                poller.poll(100)  # ms: lets the reader notice close()
                continue
            self.rx_frames += len(batch)
            if deliver_many is not None:
                try:
                    deliver_many(self.number, batch)
                except Exception:  # a failure must not stop the port
                    log.exception("port %d@%s: processing received frames failed", self.number, self.ifname)
                continue
            for frame in batch:
                try:
                    deliver(self.number, frame)
                except Exception:  # one bad frame must not stop the port
                    log.exception("port %d@%s: processing a received frame failed", self.number, self.ifname)

    def transmit(self, frame: bytes) -> None:
        with self._tx_lock:
            try:
                try:
                    self.sock.send(frame)
                except BlockingIOError:  # the send buffer is full: wait as a blocking socket would, briefly
                    if not select.select((), (self.sock,), (), 0.1)[1]:
                        raise
                    self.sock.send(frame)
                self.tx_frames += 1
            except OSError as exc:
                log.warning("port %d@%s: send of %d bytes failed: %s", self.number, self.ifname, len(frame), exc)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.sock.close()


class PortSet:
    """The switch's ports, their captures, and the path of frames in and out."""

    def __init__(self, pcap_dir: str | os.PathLike[str] | None = None) -> None:
        self.ports: dict[int, Port] = {}
        self.pcap_dir = pcap_dir
        self._captures: dict[int, _Capture] = {}
        self._sink: Sink | None = None
        self._sink_many: SinkMany | None = None
        self.unknown_port_drops = 0

    def add(self, port: Port) -> Port:
        if port.number in self.ports:
            raise ValueError(f"port {port.number} is already attached")
        self.ports[port.number] = port
        if self.pcap_dir is not None:
            self._captures[port.number] = _Capture(self.pcap_dir, port.number)
        if self._sink is not None:
            port.start(self._receive, self._receive_many)
        return port

    def add_interface(self, number: int, ifname: str) -> InterfacePort:
        port = InterfacePort(number, ifname)
        self.add(port)
        return port

    def add_inprocess(self, number: int, on_output: Callable[[bytes], None] | None = None) -> InProcessPort:
        port = InProcessPort(number, on_output)
        self.add(port)
        return port

    @property
    def has_interfaces(self) -> bool:
        return any(isinstance(p, InterfacePort) for p in self.ports.values())

    def start(self, sink: Sink, sink_many: SinkMany | None = None) -> None:
        """Begin feeding frames received on every port to `sink(port, frame)`; frames that
        arrived together go to `sink_many(port, frames)` when given (in order, as if each
        had gone to `sink`)."""
        self._sink, self._sink_many = sink, sink_many
        for port in self.ports.values():
            port.start(self._receive, self._receive_many)

    def _receive(self, number: int, frame: bytes) -> None:
        cap = self._captures.get(number)
        if cap is not None:
            cap.write("in", frame)
        if self._sink is not None:
            self._sink(number, frame)

    def _receive_many(self, number: int, frames: list[bytes]) -> None:
        cap = self._captures.get(number)
        if cap is not None:
            for frame in frames:
                cap.write("in", frame)
        if self._sink_many is not None:
            self._sink_many(number, frames)
        elif self._sink is not None:
            for frame in frames:
                self._sink(number, frame)

    def transmit(self, number: int, frame: bytes) -> None:
        port = self.ports.get(number)
        if port is None:
            self.unknown_port_drops += 1  # BMv2 also drops frames sent to ports it does not have
            return
        cap = self._captures.get(number)
        if cap is not None:
            cap.write("out", frame)
        port.transmit(frame)

    def close(self) -> None:
        for port in self.ports.values():
            port.close()
        for cap in self._captures.values():
            cap.close()
