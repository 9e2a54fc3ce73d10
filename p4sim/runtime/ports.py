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
import fcntl
import logging
import mmap
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

from p4rtproto import afpacket

log = logging.getLogger("p4sim.ports")

Sink = Callable[[int, bytes], None]
SinkMany = Callable[[int, list[bytes]], None]  # frames that arrived together on one port
# linux/if_packet.h
PACKET_RX_RING, PACKET_COPY_THRESH, PACKET_VERSION, PACKET_IGNORE_OUTGOING = 5, 7, 10, 23
TPACKET_V2 = 1
TP_STATUS_USER, TP_STATUS_COPY = 1, 2
SIOCGIFMTU = 0x8921  # linux/sockios.h
# struct tpacket2_hdr (status, len, snaplen, mac; net, sec, nsec skipped; vlan_tci, vlan_tpid;
# 4 pad) and the sockaddr_ll after it (TPACKET_ALIGN(32) = 32) up to sll_pkttype (+10)
_RING_HDR = struct.Struct("IIIH10xHH4x10xB")
HOLE_S = 0.2  # a slot left empty this long while the next one is ready is a hole (RxRing._hole)


class RxRing:
    """A TPACKET_V2 receive ring mapped from an AF_PACKET socket (packet_mmap.rst).

    The kernel copies each frame into the next free slot as it arrives (in softirq, not
    in our thread) and flips the slot's status to TP_STATUS_USER; the reader takes frames
    in slot order with no syscall per frame and hands the slot back. V2, not V3: V3 wakes
    the reader only when a whole block is retired (a timeout of milliseconds), V2 per frame.

    A frame larger than a slot is not truncated: with PACKET_COPY_THRESH the kernel also
    queues the whole frame on the socket (TP_STATUS_COPY in its slot) and `take` reads it
    with recvmsg, in order. A frame truncated anyway (that queue full) is counted in
    `truncated`, never delivered. A ring that cannot be set up raises OSError (the port
    then reads with recvmsg)."""

    def __init__(
        self, sock: socket.socket, frame_size: int, frames: int, block_size: int = 1 << 16
    ) -> None:
        if frame_size & (frame_size - 1) or frame_size < 2048:
            raise ValueError(f"ring slots are a power of 2 of at least 2 KiB, not {frame_size}")
        block_size = max(
            block_size, frame_size
        )  # powers of 2: slots tile the blocks, none straddles
        per_block = block_size // frame_size
        blocks = max(1, frames // per_block)
        sock.setsockopt(afpacket.SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(afpacket.SOL_PACKET, PACKET_COPY_THRESH, 1)
        sock.setsockopt(
            afpacket.SOL_PACKET,
            PACKET_RX_RING,
            struct.pack("IIII", block_size, blocks, frame_size, blocks * per_block),
        )
        self.frame_size, self.per_block, self.block_size = frame_size, per_block, block_size
        self.frames = blocks * per_block
        try:
            self.mm = mmap.mmap(
                sock.fileno(),
                block_size * blocks,
                mmap.MAP_SHARED,
                mmap.PROT_READ | mmap.PROT_WRITE,
            )
        except OSError:
            # frames would go to a ring nobody reads: take it down (no blocks), then recvmsg
            sock.setsockopt(afpacket.SOL_PACKET, PACKET_RX_RING, bytes(16))
            raise
        # tp_status words, one per slot. A slot goes back to the kernel by ONE aligned 4-byte
        # store: `mm[off:off + 4] = bytes(4)` is a memcpy, which glibc does as two stores to
        # the same word, and a kernel that refills the slot between them (the ring full, our
        # thread interrupted there) has its TP_STATUS_USER wiped: that frame is lost and the
        # slot left empty behind the kernel's head, so the reader waited at it while the
        # kernel filled the slots after it (the bench's "0 of 8 frames came out on port 2")
        self._status = memoryview(self.mm).cast("I")
        self._words = frame_size // 4
        self.sock = sock
        self.next = 0  # the slot the kernel fills after the last one we took
        self.truncated = 0  # frames the ring cut short (counted, dropped)
        self.copy_lost = 0  # TP_STATUS_COPY slots whose whole frame was not on the socket
        self.holes = 0  # empty slots stepped over (see _hole)
        self.suspect: tuple[int, float] | None = None  # (slot, since when) that may be a hole

    def take(self, limit: int, skip_outgoing: bool) -> list[bytes]:
        """Up to `limit` frames that are ready, oldest first (VLAN tags restored); empty
        when none is."""
        mm, unpack, out, words = self.mm, _RING_HDR.unpack_from, [], self._status
        slot, nframes, fsize, wps = self.next, self.frames, self.frame_size, self._words
        odd, outgoing = TP_STATUS_COPY | afpacket.TP_STATUS_VLAN_VALID, afpacket.PACKET_OUTGOING
        off = slot * fsize
        while len(out) < limit:
            status, length, snap, mac, tci, tpid, pkttype = unpack(mm, off)
            if not status & TP_STATUS_USER:
                if out or not self._hole(slot):
                    break
                frame = None  # step over the hole
            elif status & odd or tci or snap < length:
                frame = self._odd(off, status, length, snap, mac, tci, tpid)
            else:
                frame = mm[off + mac : off + mac + snap]
            words[slot * wps] = 0  # TP_STATUS_KERNEL, one store (see __init__)
            slot += 1
            off += fsize
            if slot == nframes:
                slot = off = 0
            if frame is not None and not (skip_outgoing and pkttype == outgoing):
                out.append(frame)
        self.next = slot
        return out

    def _hole(self, slot: int) -> bool:
        """`slot` is empty: whether to step over it. The kernel fills slots strictly in
        order, so an empty slot before a full one is either being filled right now (for
        microseconds, on another CPU) or will never be (a hole: the kernel's head went past
        it). One that stays so for HOLE_S is taken for a hole, counted in `holes`, so that
        the port does not wait a whole lap of the ring for it. The reader sleeps 1 ms at a
        time meanwhile (`suspect` set): poll(2) reports the full slot and would not wait."""
        nxt = slot + 1 if slot + 1 < self.frames else 0
        if not self._status[nxt * self._words] & TP_STATUS_USER:
            self.suspect = None
            return False
        now = time.monotonic()
        if self.suspect is None or self.suspect[0] != slot:
            self.suspect = (slot, now)
            return False
        if now - self.suspect[1] < HOLE_S:
            return False
        self.suspect = None
        self.holes += 1
        log.warning(
            "receive ring: slot %d stayed empty after the kernel filled the next one; stepped over",
            slot,
        )
        return True

    def _odd(
        self, off: int, status: int, length: int, snap: int, mac: int, tci: int, tpid: int
    ) -> bytes | None:
        """A slot that is not a plain whole frame: one the kernel also queued whole on the
        socket (larger than a slot), one it truncated, or one whose tag it stripped."""
        if status & TP_STATUS_COPY:
            # the whole frame waits on the socket's queue (nothing else is queued there)
            try:
                data, ancdata, flags, _addr = self.sock.recvmsg(
                    65535, socket.CMSG_SPACE(afpacket.AUXDATA.size)
                )
            except OSError:  # not queued (BlockingIOError), or the interface failed: lost, counted
                # raising here would drop the frames `take` already released and leave
                # `next` behind the kernel's slot (frames late, out of order)
                self.copy_lost += 1
                return None
            if flags & socket.MSG_TRUNC:  # above 64 KiB (a GSO frame): not given cut short either
                self.truncated += 1
                return None
            return afpacket.restore_vlan(data, ancdata)
        if snap < length:
            self.truncated += 1
            return None
        frame = self.mm[off + mac : off + mac + snap]
        return _tagged(frame, status, tci, tpid)

    def close(self) -> None:
        self._status.release()  # else mmap.close() refuses (exported pointers)
        self.mm.close()


def _tagged(frame: bytes, status: int, tci: int, tpid: int) -> bytes:
    """The frame with the 802.1Q/802.1ad tag the kernel stripped put back, by the same rule
    as afpacket.restore_vlan (libpcap's): a tag is there when flagged or its TCI is not 0;
    its TPID as reported when flagged or non-zero, else 0x8100."""
    if not (tci or status & afpacket.TP_STATUS_VLAN_VALID):
        return frame
    if not (tpid or status & afpacket.TP_STATUS_VLAN_TPID_VALID):
        tpid = afpacket.ETH_P_8021Q
    return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]


def _slot_size(sock: socket.socket, ifname: str) -> int:
    """A ring slot that holds a frame of the interface's MTU, up to 4 KiB (RoCE's largest
    path MTU), with the Ethernet header, a tag and the ring's own header; a larger frame
    (a 9,000 B jumbo) still arrives whole, by the copy path."""
    try:
        req = struct.pack("16si20x", ifname.encode(), 0)  # struct ifreq: name, then ifr_mtu
        mtu = struct.unpack_from("i", fcntl.ioctl(sock.fileno(), SIOCGIFMTU, req), 16)[0]
    except OSError:
        mtu = 1500
    size = 2048
    while size < min(mtu, 4096) + 18 + 128:
        size *= 2
    return size


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

    def transmit_many(self, frames: list[bytes]) -> None:
        """Frames in order, as `transmit` of each."""
        for frame in frames:
            self.transmit(frame)

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
    RING_BYTES = (
        4 << 20
    )  # the receive ring (the socket buffer it replaces): 2,048 slots of 2 KiB, 512 of 8 KiB

    def __init__(self, number: int, ifname: str, ring: bool = True) -> None:
        super().__init__(number)
        self.ifname = ifname
        try:
            self.sock = afpacket.packet_socket(ifname, promiscuous=True, rcvbuf=4 << 20)
        except PermissionError as exc:
            raise PermissionError(
                f"port {number}@{ifname}: raw sockets need root (CAP_NET_RAW): {exc}"
            ) from None
        except OSError as exc:
            raise OSError(f"port {number}@{ifname}: cannot open the interface: {exc}") from None
        # the kernel keeps copies of our own transmissions off this socket (Linux >= 4.20): else
        # every frame sent wakes this port's reader only to be discarded (the check in
        # _reader stays for older kernels)
        self._skip_outgoing = True
        with contextlib.suppress(OSError):
            self.sock.setsockopt(afpacket.SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            self._skip_outgoing = False
        self.sock.setblocking(False)  # the reader polls; see _reader
        self.ring: RxRing | None = None
        if ring:  # False: frame by frame (recvmsg), the tests' reference
            try:
                slot = _slot_size(self.sock, ifname)
                self.ring = RxRing(self.sock, slot, self.RING_BYTES // slot)
            except OSError as exc:  # an old kernel, or locked memory refused: recvmsg then
                log.warning(
                    "port %d@%s: no receive ring (%s); reading frame by frame", number, ifname, exc
                )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tx_lock = threading.Lock()
        self.rx_errors = 0  # receive failures the reader logged and went on after
        self.rx_truncated = 0  # frames recvmsg (no ring) could not give whole: counted, dropped

    @property
    def rx_dropped(self) -> int:
        """Frames the port could not give whole (counted, never delivered cut short), and
        ring slots stepped over as holes."""
        ring = self.ring
        return self.rx_truncated + (
            0 if ring is None else ring.truncated + ring.copy_lost + ring.holes
        )

    def start(self, deliver: Sink, deliver_many: SinkMany | None = None) -> None:
        self._thread = threading.Thread(
            target=self._reader,
            args=(deliver, deliver_many),
            name=f"p4sim-port{self.number}-{self.ifname}",
            daemon=True,
        )
        self._thread.start()

    def _reader(self, deliver: Sink, deliver_many: SinkMany | None = None) -> None:
        """Frames already queued on the socket are read together (up to READ_BATCH, without
        blocking) and handed over as one batch: the switch then takes its lock and catches
        up its clock once per batch, not once per frame. The socket is non-blocking and the
        wait is a poll: a socket timeout would cost a poll(2) before every recvmsg."""
        sock, stop, batch_max, ring = self.sock, self._stop, self.READ_BATCH, self.ring
        recvmsg, restore, outgoing = sock.recvmsg, afpacket.restore_vlan, afpacket.PACKET_OUTGOING
        trunc = socket.MSG_TRUNC
        anc = socket.CMSG_SPACE(afpacket.AUXDATA.size)
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        while not stop.is_set():
            batch: list[bytes] = []
            try:
                if ring is not None:
                    batch = ring.take(batch_max, self._skip_outgoing)
                else:
                    while len(batch) < batch_max:
                        data, ancdata, flags, addr = recvmsg(65535, anc)
                        if (
                            flags & trunc
                        ):  # above 64 KiB (a GSO frame): counted, never given cut short
                            self.rx_truncated += 1
                        elif addr[2] != outgoing:
                            batch.append(restore(data, ancdata))
            except BlockingIOError:
                pass
            except Exception:  # ValueError after close(): the ring was unmapped
                if stop.is_set():
                    return
                # the port must not go deaf for good (an interface down for a while, a bug):
                # say so and go on after a pause (no spinning, at most 10 lines a second)
                self.rx_errors += 1
                log.exception("port %d@%s: receive failed", self.number, self.ifname)
                stop.wait(0.1)
                continue
            if not batch:
                if ring is not None and ring.suspect is not None:
                    # a slot being filled on another CPU (microseconds) or a hole: poll(2)
                    # would return at once (it sees the full slot after it), so sleep 1 ms
                    stop.wait(0.001)
                else:
                    poller.poll(100)  # ms: lets the reader notice close()
                continue
            self.rx_frames += len(batch)
            if deliver_many is not None:
                try:
                    deliver_many(self.number, batch)
                except Exception:  # a failure must not stop the port
                    log.exception(
                        "port %d@%s: processing received frames failed", self.number, self.ifname
                    )
                continue
            for frame in batch:
                try:
                    deliver(self.number, frame)
                except Exception:  # one bad frame must not stop the port
                    log.exception(
                        "port %d@%s: processing a received frame failed", self.number, self.ifname
                    )

    def transmit(self, frame: bytes) -> None:
        self.transmit_many((frame,))

    def transmit_many(self, frames: list[bytes] | tuple[bytes, ...]) -> None:
        """One send(2) per frame (copied into the kernel's skb: a zero-copy TX ring would let
        a receiver in another namespace still hold ring pages we reuse), under one lock."""
        send = self.sock.send
        with self._tx_lock:
            for frame in frames:
                try:
                    try:
                        send(frame)
                    except (
                        BlockingIOError
                    ):  # the send buffer is full: wait as a blocking socket would, briefly
                        if not select.select((), (self.sock,), (), 0.1)[1]:
                            raise
                        send(frame)
                    self.tx_frames += 1
                except OSError as exc:
                    log.warning(
                        "port %d@%s: send of %d bytes failed: %s",
                        self.number,
                        self.ifname,
                        len(frame),
                        exc,
                    )

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.ring is not None:
            self.ring.close()
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

    def add_inprocess(
        self, number: int, on_output: Callable[[bytes], None] | None = None
    ) -> InProcessPort:
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

    def transmit_many(self, outs: list, skip_port: int | None = None) -> None:
        """What the switch emitted (objects with .port and .data), in order, as `transmit`
        of each, except those for `skip_port` (the CPU port: PacketIn goes elsewhere).
        Consecutive frames for one port go out together (one lock, no lookups per frame)."""
        run: list[bytes] = []
        run_port = None
        for out in outs:
            number = out.port
            if number == skip_port:
                continue
            if number != run_port:
                if run:
                    self._send_run(run_port, run)
                run, run_port = [], number
            run.append(out.data)
        if run:
            self._send_run(run_port, run)

    def _send_run(self, number: int, frames: list[bytes]) -> None:
        port = self.ports.get(number)
        if port is None:
            self.unknown_port_drops += len(frames)
            return
        cap = self._captures.get(number)
        if cap is not None:
            for frame in frames:
                cap.write("out", frame)
        port.transmit_many(frames)

    def close(self) -> None:
        for port in self.ports.values():
            port.close()
        for cap in self._captures.values():
            cap.close()
