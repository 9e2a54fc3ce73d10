"""Interface ports read through a TPACKET_V2 receive ring (ports.RxRing) and give exactly
the frames the plain recvmsg path gives: same bytes, same order, tags restored, frames
larger than a slot whole (the copy path), nothing truncated ever delivered. Real veths
(root). Negative controls plant plausible ring bugs (the copy path forgotten, a copied
frame handed over late) and check that the same comparison fails; an idle port must not
burn CPU (no busy polling)."""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from p4sim.runtime import ports as ports_mod
from p4sim.runtime.ports import InterfacePort, RxRing

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root for a veth pair and AF_PACKET"
)

MACS = bytes.fromhex("020000000001020000000002")
PACKET_STATISTICS = 6  # linux/if_packet.h: struct tpacket_stats {tp_packets, tp_drops}


def _wait_queued(port: InterfacePort, count: int, timeout: float = 30) -> None:
    """Until the kernel has put `count` more frames into `port`'s ring (PACKET_STATISTICS'
    tp_packets, which a read resets; af_packet.c tpacket_rcv counts each frame as it fills
    its slot): the frames are there, not merely sent, however loaded the machine."""
    seen, deadline = 0, time.monotonic() + timeout
    while seen < count:
        raw = port.sock.getsockopt(ports_mod.afpacket.SOL_PACKET, PACKET_STATISTICS, 8)
        seen += struct.unpack("II", raw)[0]
        assert time.monotonic() < deadline, f"{seen} of {count} frames reached the ring"
        time.sleep(0.001)


def _frame(i: int, size: int, tag: bytes = b"") -> bytes:
    body = bytes((i * 31 + k) & 0xFF for k in range(max(0, size - 16)))
    return MACS + tag + b"\x88\xb5" + i.to_bytes(2, "big") + body


def _mix() -> list[bytes]:
    """Sizes from a bare header to a 9,000-byte jumbo (the veths' MTU; above an 8 KiB slot:
    the copy path), untagged, 802.1Q, priority-tagged (TCI 0) and 802.1ad."""
    sizes = (14, 17, 60, 64, 100, 1024, 1514, 2100, 4000, 8100, 9014, 64, 1024)
    tags = (b"", bytes.fromhex("81006005"), bytes.fromhex("81000000"), bytes.fromhex("88a80064"))
    out = []
    for i in range(80):
        size, tag = sizes[i % len(sizes)], tags[(i // 3) % len(tags)]
        if size < 18:
            tag = b""
        if size == 14:
            out.append(MACS + b"\x88\xb5")
            continue
        out.append(_frame(i, size - len(tag), tag))
    return out


@pytest.fixture
def veth() -> Iterator[tuple[str, str]]:
    from controller.targets import netns

    a, b = netns.name("ra"), netns.name("rb")
    with netns.NetnsSet() as nets:
        nets.add_veth(a, b)  # MTU 9000
        yield a, b


def _through(
    veth: tuple[str, str],
    frames: list[bytes],
    ring: bool,
    ring_cls: type[RxRing] | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
    lost: int = 0,
    batched: bool = False,
) -> tuple[list[bytes], InterfacePort]:
    """Send `frames` into port 1 over the veth; what the port delivered, in order (waiting
    for all but `lost` of them: a wait for a frame that is meant to be lost lasts 30 s).
    `batched` (ring only): every frame is in the ring before the reader starts, so its
    first batch is the first READ_BATCH frames, on every run (a planted batch)."""
    from p4rtproto.afpacket import packet_socket

    if ring_cls is not None and monkeypatch is not None:
        monkeypatch.setattr(ports_mod, "RxRing", ring_cls)
    a, b = veth
    port = InterfacePort(1, a, ring=ring)
    assert (port.ring is not None) == ring
    got: list[bytes] = []

    tx = packet_socket(b)
    if batched:
        for f in frames:
            tx.send(f)
        _wait_queued(port, len(frames))
    port.start(lambda _n, f: got.append(f), lambda _n, batch: got.extend(batch))
    try:
        for f in frames if not batched else ():
            tx.send(f)
        deadline = time.monotonic() + 30  # ends as soon as every frame is in
        while len(got) < len(frames) - lost and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
    finally:
        tx.close()
        port.close()
    return got, port


def test_ring_gives_what_recvmsg_gives(veth):
    sent = _mix()
    by_ring, port = _through(veth, sent, ring=True)
    assert (
        port.ring is not None and port.ring.frame_size == 8192
    )  # MTU 9000: 4 KiB frames fit a slot
    by_recv, _ = _through(veth, sent, ring=False)
    assert by_recv == sent
    assert by_ring == sent
    assert port.rx_frames == len(sent) and port.rx_dropped == 0


class _NoCopyPath(RxRing):
    """Planted: a slot flagged TP_STATUS_COPY handed over as the ring holds it (cut short)."""

    def _odd(self, off, status, length, snap, mac, tci, tpid):
        if status & ports_mod.TP_STATUS_COPY:
            return self.mm[off + mac : off + mac + snap]
        return super()._odd(off, status, length, snap, mac, tci, tpid)


class _LateCopy(RxRing):
    """Planted: copied frames handed over at the end of the batch (out of order)."""

    def take(self, limit, skip_outgoing):
        self._late: list[bytes] = []
        out = super().take(limit, skip_outgoing)
        return out + self._late

    def _odd(self, off, status, length, snap, mac, tci, tpid):
        frame = super()._odd(off, status, length, snap, mac, tci, tpid)
        if status & ports_mod.TP_STATUS_COPY and frame is not None:
            self._late.append(frame)
            return None
        return frame


@pytest.mark.parametrize("planted", [_NoCopyPath, _LateCopy])
def test_negative_control_planted_ring_bugs_are_seen(veth, monkeypatch, planted):
    """The frames are planted in one batch (all in the ring before the reader starts): the
    copied frames and the later ones are taken together, so a late copy shows on every run
    (frames taken one by one, as a loaded machine may hand them over, would hide it)."""
    sent = _mix()
    assert any(len(f) > 8192 for f in sent[: InterfacePort.READ_BATCH - 1])  # copies, frames after
    got, _ = _through(
        veth, sent, ring=True, ring_cls=planted, monkeypatch=monkeypatch, batched=True
    )
    assert got != sent
    assert sorted(got) != sorted(sent) if planted is _NoCopyPath else sorted(got) == sorted(sent)


def test_a_frame_the_ring_cuts_short_is_counted_not_delivered(veth):
    """Two jumbos arrive while the reader is busy: the first waits whole on the socket,
    the second finds that queue over its (minimum) buffer, so the ring holds it truncated:
    counted, dropped, and the port goes on."""
    from p4rtproto.afpacket import packet_socket

    a, b = veth
    port = InterfacePort(1, a, ring=True)
    port.sock.setsockopt(
        ports_mod.socket.SOL_SOCKET, ports_mod.socket.SO_RCVBUF, 1
    )  # the kernel's minimum
    got: list[bytes] = []
    hold = threading.Event()

    def many(_n: int, batch: list[bytes]) -> None:
        got.extend(batch)
        hold.wait(30)

    port.start(lambda _n, f: got.append(f), many)
    tx = packet_socket(b)
    small, jumbo1, jumbo2, after = _frame(1, 64), _frame(2, 9014), _frame(3, 9014), _frame(4, 64)
    try:
        tx.send(small)
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:  # the reader now holds its first batch
            time.sleep(0.01)
        _wait_queued(port, 1)  # `small` (reading the count resets it)
        for f in (jumbo1, jumbo2, after):
            tx.send(f)
        _wait_queued(port, 3)  # all in the ring (jumbo2 cut short) before the reader goes on
        hold.set()
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
    finally:
        hold.set()
        tx.close()
        port.close()
    assert got == [small, jumbo1, after]
    assert port.ring is not None and port.ring.truncated == 1 and port.rx_dropped == 1


def test_an_idle_port_does_not_spin(veth):
    a, _b = veth
    port = InterfacePort(1, a, ring=True)
    port.start(lambda _n, _f: None, lambda _n, _b: None)
    try:
        time.sleep(0.2)
        assert port._thread is not None
        tid = port._thread.native_id

        def ticks() -> int:
            with open(f"/proc/self/task/{tid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            return int(parts[11]) + int(parts[12])

        t0 = ticks()
        time.sleep(1.0)
        used = (ticks() - t0) / os.sysconf("SC_CLK_TCK")
    finally:
        port.close()
    assert used < 0.05  # s of CPU in 1 s idle: a spinning reader would use ~1


def test_the_ring_wraps_around_many_times(veth, monkeypatch):
    """A small ring (32 slots in 4 blocks) taking 7x its size, in chunks it can hold: every
    slot is handed back and reused, in order (a reader that never releases a slot loses
    everything after the first lap)."""
    from p4rtproto.afpacket import packet_socket

    monkeypatch.setattr(InterfacePort, "RING_BYTES", 32 * 8192)
    a, b = veth
    port = InterfacePort(1, a, ring=True)
    assert port.ring is not None and port.ring.frames == 32 and port.ring.per_block == 8
    got: list[bytes] = []
    port.start(lambda _n, f: got.append(f), lambda _n, batch: got.extend(batch))
    tx = packet_socket(b)
    sent = [_frame(i, (64, 1024, 9014, 300)[i % 4]) for i in range(224)]
    try:
        deadline = time.monotonic() + 30  # for the whole run: a broken ring fails fast
        for k in range(0, len(sent), 8):
            for f in sent[k : k + 8]:
                tx.send(f)
            while len(got) < k + 8 and time.monotonic() < deadline:
                time.sleep(0.002)
    finally:
        tx.close()
        port.close()
    assert got == sent and port.rx_dropped == 0


class _FailsOnce(RxRing):
    """Planted: the first read raises an error nobody expected."""

    failed = False

    def take(self, limit, skip_outgoing):
        if not _FailsOnce.failed:
            _FailsOnce.failed = True
            raise RuntimeError("planted")
        return super().take(limit, skip_outgoing)


def test_a_failing_read_does_not_make_the_port_deaf(veth, monkeypatch):
    sent = [_frame(i, 64) for i in range(20)]
    got, port = _through(veth, sent, ring=True, ring_cls=_FailsOnce, monkeypatch=monkeypatch)
    assert _FailsOnce.failed and port.rx_errors == 1
    assert got == sent


class _CopyReadFailsOnce(RxRing):
    """The copy path's recvmsg fails once (as when the interface goes down mid-batch)."""

    def __init__(self, sock, *args, **kwargs) -> None:
        super().__init__(sock, *args, **kwargs)
        real, state = sock, {"failed": False}

        class Sock:
            def recvmsg(self, *a):
                if not state["failed"]:
                    state["failed"] = True
                    raise OSError(100, "Network is down")
                return real.recvmsg(*a)

        self.sock = Sock()  # type: ignore[assignment]


def test_a_failed_copy_read_loses_that_frame_only(veth, monkeypatch):
    """A jumbo frame (the copy path) in the middle of a batch whose whole-frame read fails:
    that frame is counted lost; the frames before and after it arrive, in order, and the
    reader does not fail (a reader that raised lost the batch's earlier frames and left
    its slot index behind the kernel's)."""
    sent = (
        [_frame(i, 64) for i in range(5)]
        + [_frame(5, 9000)]
        + [_frame(i, 64) for i in range(6, 12)]
    )
    got, port = _through(
        veth,
        sent,
        ring=True,
        ring_cls=_CopyReadFailsOnce,
        monkeypatch=monkeypatch,
        lost=1,
        batched=True,
    )  # one batch, the jumbo in its middle
    assert port.ring is not None and port.ring.copy_lost == 1
    assert port.rx_errors == 0
    assert got == sent[:5] + sent[6:]


@pytest.mark.parametrize("ring", [False, True], ids=["recvmsg", "ring"])
def test_a_frame_over_64k_is_counted_not_delivered_cut_short(ring):
    """A 65,549-byte frame (a veth at its largest MTU, 65,535) does not fit recvmsg's 64 KiB
    buffer: both receive paths count it (MSG_TRUNC) and never deliver its first 65,535 bytes
    as a frame; the frames around it arrive."""
    from controller.targets import netns
    from p4rtproto.afpacket import packet_socket

    a, b = netns.name("ga"), netns.name("gb")
    with netns.NetnsSet() as nets:
        nets.add_veth(a, b, mtu=65535)
        port = InterfacePort(1, a, ring=ring)
        got: list[bytes] = []
        port.start(lambda _n, f: got.append(f), lambda _n, batch: got.extend(batch))
        tx = packet_socket(b)
        tx.setsockopt(ports_mod.socket.SOL_SOCKET, ports_mod.socket.SO_SNDBUF, 1 << 20)
        before, huge, after = _frame(1, 64), _frame(2, 65549), _frame(3, 1024)
        try:
            for f in (before, huge, after):
                tx.send(f)
            deadline = time.monotonic() + 30
            while len(got) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)
        finally:
            tx.close()
            port.close()
    assert got == [before, after]
    assert port.rx_dropped == 1
    assert (port.rx_truncated, port.ring is None) == ((0, False) if ring else (1, True))


def _hold_then(
    veth, monkeypatch, wipe: bool, no_net: bool = False
) -> tuple[list[bytes], InterfacePort, float]:
    """Frame A is delivered and the reader held; B and C arrive (the kernel fills the next
    two slots); with `wipe`, B's slot then has its status word cleared as a torn release
    (two stores of 0, the kernel's refill between them) leaves it: B is gone and the slot
    lies empty behind the kernel's head. `no_net`: planted, no hole detection. Returns what
    was delivered within 3 s, the port, and when C came (s after the hold ended, or inf)."""
    from p4rtproto.afpacket import packet_socket

    if no_net:
        monkeypatch.setattr(RxRing, "_hole", lambda self, slot: False)
    a, b = veth
    port = InterfacePort(1, a, ring=True)
    got: list[bytes] = []
    hold, held = threading.Event(), threading.Event()
    arrived: list[float] = []

    def many(_n: int, batch: list[bytes]) -> None:
        got.extend(batch)
        arrived.append(time.monotonic())
        if len(got) == 1:
            held.set()
            hold.wait(30)

    port.start(lambda _n, f: got.append(f), many)
    tx = packet_socket(b)
    fa, fb, fc = _frame(1, 64), _frame(2, 1024), _frame(3, 64)
    try:
        tx.send(fa)
        assert held.wait(30)
        ring = port.ring
        assert ring is not None and ring.next == 1  # A's slot is back with the kernel
        tx.send(fb)
        tx.send(fc)
        deadline = time.monotonic() + 10
        while (
            not ring._status[2 * ring._words] & ports_mod.TP_STATUS_USER
            and time.monotonic() < deadline
        ):
            time.sleep(0.001)
        if wipe:
            ring._status[1 * ring._words] = 0
        t0 = time.monotonic()
        hold.set()
        while len(got) < (2 if wipe else 3) and time.monotonic() - t0 < 3:
            time.sleep(0.005)
        time.sleep(0.05)
    finally:
        hold.set()
        tx.close()
        port.close()
    came = arrived[-1] - t0 if len(got) > 1 else float("inf")
    return got, port, came


def test_a_hole_in_the_ring_is_stepped_over(veth, monkeypatch):
    """A slot left empty behind the kernel's head (what the torn release did, once in a few
    overloaded bench runs) costs that frame, counted, not the port: it waits HOLE_S for
    the slot (sleeping: poll(2) would return at once) and goes on."""
    got, port, came = _hold_then(veth, monkeypatch, wipe=True)
    assert got == [_frame(1, 64), _frame(3, 64)]
    assert port.ring is not None and port.ring.holes == 1 and port.rx_dropped == 1
    assert ports_mod.HOLE_S * 0.9 <= came < 2.0


def test_negative_control_without_stepping_over_a_hole_the_port_is_deaf(veth, monkeypatch):
    got, _port, came = _hold_then(veth, monkeypatch, wipe=True, no_net=True)
    assert got == [_frame(1, 64)] and came == float("inf")


def test_a_slot_being_filled_is_not_a_hole(veth, monkeypatch):
    """Nothing wiped: B and C both arrive, in order, with no wait for a hole and no hole.
    HOLE_S is made 30 s: a reader that waited for a hole would miss the 3 s _hold_then
    gives (a wall-clock bound of HOLE_S itself, 0.2 s, a loaded machine can outlast)."""
    monkeypatch.setattr(ports_mod, "HOLE_S", 30.0)
    got, port, came = _hold_then(veth, monkeypatch, wipe=False)
    assert got == [_frame(1, 64), _frame(2, 1024), _frame(3, 64)]
    assert port.ring is not None and port.ring.holes == 0 and came < 3


def test_a_slot_goes_back_to_the_kernel_by_one_word_store(veth):
    """The release writes tp_status through a uint32 view (one aligned store), nothing else
    of the slot's header: a slice assignment is a memcpy, two stores to the word."""
    import inspect

    a, _b = veth
    port = InterfacePort(1, a, ring=True)
    try:
        ring = port.ring
        assert ring is not None and ring._status.format == "I" and ring._status.itemsize == 4
        assert ring._words * 4 == ring.frame_size
        src = inspect.getsource(RxRing.take)
        assert "words[slot * wps] = 0" in src and "mm[off:off + 4]" not in src
    finally:
        port.close()
