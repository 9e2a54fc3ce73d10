"""PFC under overload on every target: XOFF while the egress queue is above XOFF, one XON
once it is below XON, nothing after it (issue 17).

The plugin slows one port down (`target_rate_limit`: 100 frames of 1250 bytes per second,
on the in-process p4sim, p4sim-switch and BMv2 alike). The test sends a burst of class-3
RoCEv2 WRITEs into it from another port, in batches of back-to-back frames, and ignores the
pause frames (like a Linux host on a veth), so the queue (64 packets, p4sim's and BMv2's
default) fills and tail-drops packets the program had admitted.

Nothing here depends on how fast the test itself runs (the wall clock on BMv2, a loaded
machine); it waits on events, never on time windows. A batch goes once the switch's roce_rx
counter has the last one in (a veth and BMv2's capture lose part of a larger burst). After
the burst it waits for an XON, then sends a marker frame: the FIFO queue hands it out after
every data frame queued before it, so once it is out the queue is empty; then for as many
PFC frames as the switch's own pfc_tx counter says it sent. A deadline only bounds a wait
for something that never comes.

A switch whose ingress stalls between two batches for longer than the queue takes to drain
(~0.2 s; seen on BMv2 with two suites running) really does drain below XON and XON: then it
pauses again on the next batch. So the pause frames are checked as episodes, XOFF and
refreshes then one XON each, one more than there were such stalls; the last XON, the one
the marker measures, exactly; and a steady burst is one episode.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from controller.packets import decode
from controller.packets.build import roce_frame
from controller.targets import CloneSession, CounterQuery, DefaultAction, Exact, TableEntry
from controller.testing.dataplane import mac_int

SRC_MAC, DST_MAC = "02:00:00:00:05:01", "02:00:00:00:05:04"
PORT_MAC = "02:00:00:00:fe:01"
XOFF, XON = 12, 4  # packets
QUANTA = 0xFFFF
REFRESH_US = 50_000
PFC_SESSION_BASE = 256
TC = 3
SENT = 120  # frames in the burst; the queue holds 64
BATCH = 24  # frames sent back to back
MARKER = 10_000  # PSN of the frames sent after the burst
MARKERS = 4  # markers sent at most, one after each XON
FRAME_BYTES = 1230  # + 20 bytes of preamble, SFD and gap: 1250 on the wire
MS = 1_000_000
WAIT_NS = 60_000 * MS  # a bound on each wait (the drain itself takes about 0.7 s)


def _frame(psn: int) -> bytes:
    f = roce_frame(
        "10.0.5.1",
        "10.0.5.4",
        "WRITE_ONLY",
        0x55,
        psn,
        bytes(FRAME_BYTES - 74),
        eth_src=SRC_MAC,
        eth_dst=DST_MAC,
        dscp=26,
        va=0x4000,
        rkey=5,
    )
    assert len(f) == FRAME_BYTES
    return f


def _config(src: int, slow: int) -> list:
    return [
        TableEntry(
            "l2_fwd", {"hdr.ethernet.dst": Exact(mac_int(DST_MAC))}, "l2_forward", {"port": slow}
        ),
        TableEntry("dscp_to_tc", {"meta.dscp": Exact(26)}, "set_tc_from_dscp", {"tc": TC}),
        TableEntry(
            "pfc_thresholds",
            {"standard_metadata.ingress_port": Exact(src), "meta.tc": Exact(TC)},
            "set_pfc_thresholds",
            {"xoff": XOFF, "xon": XON, "quanta": QUANTA, "refresh_us": REFRESH_US},
        ),
        TableEntry(
            "port_mac",
            {"standard_metadata.egress_port": Exact(src)},
            "set_port_mac",
            {"mac": mac_int(PORT_MAC)},
        ),
        CloneSession(PFC_SESSION_BASE + src, (src,)),
        DefaultAction(
            "cnp_config",
            "set_cnp_config",
            {"cnp_tc": 6, "np_enable": 0, "interval_us": 50, "cnp_dscp": 48},
        ),
    ]


class Watch:
    """Everything the switch sends, in the order it arrives: data frames out of the slow
    port (PSNs), PFC frames out of the sender's port (class-3 pause times)."""

    def __init__(self, target, src: int, slow: int):
        self.target, self.src, self.slow = target, src, slow
        self.data: list[int] = []
        self.pfc: list[int] = []
        self.other: list[tuple[int, bytes]] = []

    def pump(self, dt_ns: int) -> None:
        self.target.advance(dt_ns)
        for p in self.target.receive():
            r = decode(p.data)
            if p.port == self.slow and r.is_roce and r.bth_dqpn == 0x55:
                self.data.append(r.bth_psn)
            elif p.port == self.src and r.is_pfc:
                assert r.pfc_cev == 1 << TC, f"class-enable vector {r.pfc_cev:#x}: class 3 only"
                assert p.data[6:12] == bytes.fromhex(PORT_MAC.replace(":", ""))
                self.pfc.append(r.pfc_quanta3)
            else:
                self.other.append((p.port, p.data[:32]))

    def until(self, done: Callable[[], bool], what: str) -> None:
        """Pump until `done()`; fail naming `what` if it has not happened within WAIT_NS."""
        deadline = self.target.now() + WAIT_NS
        while not done():
            if self.target.now() > deadline:
                raise AssertionError(
                    f"{what}: not within {WAIT_NS // MS} ms "
                    f"(data {len(self.data)}, PFC {self.pfc}, other {self.other[:3]})"
                )
            self.pump(5 * MS)


def _count(target, name: str, port: int) -> int:
    """Packets in the program's counter `name` at (port, class 3)."""
    cells = target.read(CounterQuery(name, (port << 3) | TC))
    return sum(c.packets for c in cells)


def test_overload_pauses_until_the_queue_drains(target, target_ports, target_rate_limit):
    slow, _pps = target_rate_limit
    src = next(p for p in target_ports if p != slow)
    target.write(_config(src, slow))
    w = Watch(target, src, slow)

    # The burst in batches the switch's input takes whole (a veth and BMv2's packet capture
    # drop part of 120 frames sent at once): the next batch goes once the switch's roce_rx
    # counter has every frame of the last one, so the queue fills whatever the load.
    sent = 0
    while sent < SENT:
        batch = range(sent, min(sent + BATCH, SENT))
        for i in batch:
            target.send(src, _frame(i))
        sent = batch.stop
        w.until(lambda n=sent: _count(target, "roce_rx", src) >= n, f"{sent} frames counted in")
    # Barrier: an XON last, then a marker behind it. A marker the full queue drops is
    # admitted above XOFF first, so it brings a new pause frame: then wait for the next XON.
    markers: list[int] = []
    for _ in range(MARKERS):
        w.until(lambda: bool(w.pfc) and w.pfc[-1] == 0, "no XON after the burst")
        at_xon, k = len(w.data), len(w.pfc)
        markers.append(MARKER + len(markers))
        target.send(src, _frame(markers[-1]))
        w.until(lambda k=k: markers[-1] in w.data or len(w.pfc) > k, "the marker never left")
        if markers[-1] in w.data:
            break
    else:  # a queue at rest takes a frame without a pause frame, unless its depth leaked
        raise AssertionError(
            f"{MARKERS} markers sent after an XON each brought PFC frames: {w.pfc}"
        )
    # Every PFC frame the switch counted has arrived (they leave another port).
    w.until(lambda: len(w.pfc) >= _count(target, "pfc_tx", src), "PFC frames the switch counted")
    psns = [p for p in w.data if p < MARKER]

    assert w.data[-1] == markers[-1], "the marker left last"
    assert psns == sorted(psns), "one FIFO queue: frames leave in order"
    assert psns[: XOFF + 1] == list(range(XOFF + 1)), "nothing dropped before the queue filled"
    # the switch's own counters: every frame in counted, every frame out seen here, and the
    # traffic manager tail-dropped what the program had admitted
    assert _count(target, "roce_rx", src) == SENT + len(markers)
    assert _count(target, "roce_tx", slow) == len(w.data), "a frame the switch sent was not seen"
    assert len(psns) <= SENT - 10, f"{SENT - len(psns)} tail drops: the overload did not overflow"
    assert _count(target, "pfc_tx", src) == len(w.pfc), f"PFC frames seen {w.pfc}"

    # Pause episodes: XOFF, refreshes (the last drain, of ~50 packets, lasts about 0.5 s,
    # the refresh interval is 50 ms), one XON; never an XON first or two in a row. Each one
    # after the first needs a drain below XON between batches: at most one per batch.
    shape = "".join("X" if q == QUANTA else "N" if q == 0 else "?" for q in w.pfc)
    assert re.fullmatch(r"(X+N)+", shape), (
        f"pause frames out of order: {w.pfc} (other {w.other[:5]})"
    )
    episodes = shape.split("N")[:-1]
    assert len(episodes) <= SENT // BATCH, (
        f"{len(episodes)} pause episodes: XON while deep? {w.pfc}"
    )
    assert len(episodes[-1]) >= 2, f"no refresh while the queue drained: {w.pfc}"
    # The last XON leaves at the departure that leaves fewer than XON packets queued: at most
    # XON data frames come out after it (XON - 1, or XON where the frame that left with it
    # is still being serialised at the slow rate when the XON is out of the fast port).
    behind = len([p for p in w.data[at_xon:] if p < MARKER])
    assert behind <= XON, f"XON with {behind} data frames still to come (XON threshold {XON})"

    # After the XON, a trickle the port can serve, one frame in the queue at a time: no PFC
    # frame (a leaked occupancy would XOFF or refresh on one of them).
    n_pfc = _count(target, "pfc_tx", src)
    for i in range(8):
        target.send(src, _frame(2 * MARKER + i))
        w.until(lambda i=i: 2 * MARKER + i in w.data, f"trickle frame {i}")
    assert _count(target, "pfc_tx", src) == n_pfc, f"PFC frames after the drain: {w.pfc[n_pfc:]}"
    assert len(w.pfc) == n_pfc
