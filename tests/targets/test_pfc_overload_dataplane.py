"""PFC under overload on every target: XOFF while the egress queue is above XOFF, one XON
once it is below XON, nothing after it (issue 17).

The plugin slows one port down (`target_rate_limit`: 100 frames of 1250 bytes per second,
on the in-process p4sim, p4sim-switch and BMv2 alike). The test sends a burst of class-3
RoCEv2 WRITEs into it from another port, in batches of back-to-back frames, and ignores the pause frames (like
a Linux host on a veth), so the queue (64 packets, p4sim's and BMv2's default) fills and
tail-drops packets the program had admitted.

Nothing here depends on how fast the test itself runs (the wall clock on BMv2, a loaded
machine): the burst is queued within a few departures (each batch waits only for the
switch to count the last one in), and the test waits on events, never on time windows. It waits for the XON; then sends a marker frame, which the
FIFO queue hands out only after every data frame before it, so once the marker is out the
queue is known to be empty; then for as many PFC frames as the switch's own pfc_tx counter
says it sent. A deadline only bounds a wait for something that never comes.
"""

from __future__ import annotations

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
    # The XON: the queue that paused the sender fell below XON at a departure (the marker
    # below is sent only after it, so it cannot be the ingress path's late XON).
    w.until(lambda: 0 in w.pfc, "no XON after the burst")
    at_xon = len(w.data)
    # The marker leaves after every data frame queued before it: then the queue is empty.
    target.send(src, _frame(MARKER))
    w.until(lambda: MARKER in w.data, "the marker never left the slow port")
    # Every PFC frame the switch counted has arrived (they leave another port).
    w.until(lambda: len(w.pfc) >= _count(target, "pfc_tx", src), "PFC frames the switch counted")
    psns = w.data[:-1]

    assert w.data[-1] == MARKER and MARKER not in psns, "the marker left last"
    assert psns == sorted(psns), "one FIFO queue: frames leave in order"
    assert psns[: XOFF + 1] == list(range(XOFF + 1)), "nothing dropped before the queue filled"
    # the switch's own counters: every frame in counted, every frame out seen here, and the
    # traffic manager tail-dropped what the program had admitted
    assert _count(target, "roce_rx", src) == SENT + 1
    assert _count(target, "roce_tx", slow) == len(w.data), "a frame the switch sent was not seen"
    assert len(psns) <= SENT - 10, (
        f"{SENT - len(psns)} tail drops: the overload did not overflow the queue"
    )
    assert _count(target, "pfc_tx", src) == len(w.pfc), f"PFC frames seen {w.pfc}"

    # XOFF first; refreshes while paused (the drain of ~60 packets lasts about 0.6 s, the
    # refresh interval 50 ms); one XON, last.
    assert w.pfc and w.pfc[0] == QUANTA, (
        f"first PFC frame is not the XOFF: {w.pfc} (other {w.other[:5]})"
    )
    assert w.pfc.count(0) == 1 and w.pfc[-1] == 0, f"expected one XON, last: {w.pfc}"
    assert all(q == QUANTA for q in w.pfc[:-1])
    assert len(w.pfc) >= 3, f"no refresh while the queue drained: {w.pfc}"
    # The XON leaves at the departure that leaves fewer than XON packets queued: at most XON
    # data frames come out after it (XON - 1, or XON where the frame that left with it is
    # still being serialised at the slow rate when the XON is out of the fast port).
    behind = len(psns) - at_xon
    assert 0 <= behind <= XON, f"XON with {behind} data frames still to come (XON threshold {XON})"

    # After the XON, a trickle the port can serve, one frame in the queue at a time: no PFC
    # frame (a leaked occupancy would XOFF or refresh on one of them).
    n_pfc = _count(target, "pfc_tx", src)
    for i in range(8):
        target.send(src, _frame(MARKER + 1 + i))
        w.until(lambda i=i: MARKER + 1 + i in w.data, f"trickle frame {i}")
    assert _count(target, "pfc_tx", src) == n_pfc, (
        f"PFC frames after the queue drained: {w.pfc[len(w.pfc) - 1 :]}"
    )
    assert w.pfc.count(0) == 1 and len(w.pfc) == n_pfc
