"""PFC under overload on every target: XOFF while the egress queue is above XOFF, one XON
once it is below XON, nothing after the sender stops (issue 17).

The plugin slows one port down (`target_rate_limit`: 100 frames of 1250 bytes per second,
on the in-process p4sim, p4sim-switch and BMv2 alike). The test sends class-3 RoCEv2 WRITEs
into it from another port ten times faster than it drains and ignores the pause frames
(like a Linux host on a veth), so the queue (64 packets, p4sim's and BMv2's default) fills
and tail-drops packets the program had admitted. The queue is FIFO, so once the sender has
stopped, the packets still queued at an instant are exactly the data frames that come out
after it: that is how the test knows the depth on a switch it cannot look into.
"""

from __future__ import annotations

from controller.packets import decode
from controller.packets.build import roce_frame
from controller.targets import CloneSession, DefaultAction, Exact, TableEntry
from controller.testing.dataplane import mac_int

SRC_MAC, DST_MAC = "02:00:00:00:05:01", "02:00:00:00:05:04"
PORT_MAC = "02:00:00:00:fe:01"
XOFF, XON = 12, 4  # packets
QUANTA = 0xFFFF
REFRESH_US = 50_000
PFC_SESSION_BASE = 256
SENT = 120  # frames, one per millisecond
GAP_NS = 1_000_000
FRAME_BYTES = 1230  # + 20 bytes of preamble, SFD and gap: 1250 on the wire
MS = 1_000_000


def _frame(psn: int) -> bytes:
    f = roce_frame("10.0.5.1", "10.0.5.4", "WRITE_ONLY", 0x55, psn, bytes(FRAME_BYTES - 74),
                   eth_src=SRC_MAC, eth_dst=DST_MAC, dscp=26, va=0x4000, rkey=5)
    assert len(f) == FRAME_BYTES
    return f


def _config(src: int, slow: int) -> list:
    return [
        TableEntry("l2_fwd", {"hdr.ethernet.dst": Exact(mac_int(DST_MAC))}, "l2_forward",
                   {"port": slow}),
        TableEntry("dscp_to_tc", {"meta.dscp": Exact(26)}, "set_tc_from_dscp", {"tc": 3}),
        TableEntry("pfc_thresholds", {"standard_metadata.ingress_port": Exact(src),
                                      "meta.tc": Exact(3)}, "set_pfc_thresholds",
                   {"xoff": XOFF, "xon": XON, "quanta": QUANTA, "refresh_us": REFRESH_US}),
        TableEntry("port_mac", {"standard_metadata.egress_port": Exact(src)}, "set_port_mac",
                   {"mac": mac_int(PORT_MAC)}),
        CloneSession(PFC_SESSION_BASE + src, (src,)),
        DefaultAction("cnp_config", "set_cnp_config",
                      {"cnp_tc": 6, "np_enable": 0, "interval_us": 50, "cnp_dscp": 48}),
    ]


class Watch:
    """Everything the switch sends, with the target's time: data frames out of the slow
    port (by PSN), PFC frames out of the sender's port (by class-3 pause time)."""

    def __init__(self, target, src: int, slow: int):
        self.target, self.src, self.slow = target, src, slow
        self.data: list[tuple[int, int]] = []
        self.pfc: list[tuple[int, int]] = []
        self.other: list[tuple[int, bytes]] = []

    def pump(self, dt_ns: int) -> None:
        self.target.advance(dt_ns)
        for p in self.target.receive():
            r = decode(p.data)
            if p.port == self.slow and r.is_roce and r.bth_dqpn == 0x55:
                self.data.append((p.time_ns, r.bth_psn))
            elif p.port == self.src and r.is_pfc:
                assert r.pfc_cev == 1 << 3, f"class-enable vector {r.pfc_cev:#x}: class 3 only"
                assert p.data[6:12] == bytes.fromhex(PORT_MAC.replace(":", ""))
                self.pfc.append((p.time_ns, r.pfc_quanta3))
            else:
                self.other.append((p.port, p.data[:32]))

    def after(self, t: int) -> int:
        """Data frames that came out after time t."""
        return sum(1 for td, _ in self.data if td > t)


def test_overload_pauses_until_the_queue_drains(target, target_ports, target_rate_limit):
    slow, pps = target_rate_limit
    src = next(p for p in target_ports if p != slow)
    service = 1_000_000_000 // pps
    target.write(_config(src, slow))
    w = Watch(target, src, slow)

    sent_at = []
    for i in range(SENT):
        sent_at.append(target.now())
        target.send(src, _frame(i))
        w.pump(GAP_NS)
    stopped = target.now()
    deadline = stopped + 20_000 * MS
    while target.now() < deadline:
        w.pump(10 * MS)
        last = w.data[-1][0] if w.data else stopped
        if target.now() - last > 5 * service and target.now() - stopped > 3 * REFRESH_US * 1000:
            break
    else:
        raise AssertionError(f"the slow port was still sending {20_000} ms after the sender stopped")

    psns = [p for _, p in w.data]
    assert psns == sorted(psns), "one FIFO queue: frames leave in order"
    assert psns[:XOFF + 1] == list(range(XOFF + 1)), "nothing dropped before the queue filled"
    assert len(psns) <= SENT - 10, f"{SENT - len(psns)} tail drops: the overload did not overflow the queue"
    assert w.pfc, f"no PFC frame at all (other frames: {w.other[:5]})"

    # XOFF once the queue holds XOFF packets: not before XOFF + 1 had been sent (one leaves
    # at once), and while the queue was still filling
    t_xoff, q = w.pfc[0]
    assert q == QUANTA, f"first PFC frame has pause time {q:#x}, not the XOFF's {QUANTA:#x}"
    assert sent_at[XOFF] <= t_xoff < sent_at[2 * XOFF], "XOFF too early or too late"

    # one XON, last; every frame before it an XOFF (refreshes)
    xons = [t for t, q in w.pfc if q == 0]
    assert len(xons) == 1 and w.pfc[-1][1] == 0, f"expected one XON, last: {w.pfc}"
    assert all(q == QUANTA for _, q in w.pfc[:-1])
    t_xon = xons[0]
    # the XON comes when fewer than XON packets are queued: XON - 1 data frames follow it
    # (XON when the frame that left with them races it out of another interface)
    behind = w.after(t_xon)
    assert t_xon > stopped and behind in (XON - 1, XON), (
        f"XON with {behind} data frames still to come (XON threshold {XON})")
    # ... within one refresh interval of the queue falling below XON: when the frame
    # XON places from the end left
    t_below = w.data[-XON][0]
    assert abs(t_xon - t_below) <= REFRESH_US * 1000, (t_xon - t_below) / MS
    # refreshes while paused: only while at least XON are queued, never a gap the pause
    # could expire in (refresh interval + a departure or two)
    for t, _ in w.pfc[1:-1]:
        if t > stopped + service:
            assert w.after(t) >= XON - 1, f"refresh at {(t - stopped) / MS:.1f} ms after the stop, queue below XON"
    gaps = [b[0] - a[0] for a, b in zip(w.pfc, w.pfc[1:], strict=False)]
    assert max(gaps) <= REFRESH_US * 1000 + 2 * service, [g / MS for g in gaps]

    # after the XON: silence, and a trickle the port can serve sends no PFC frame (a leaked
    # occupancy would refresh the pause on every packet)
    n_pfc, n_data = len(w.pfc), len(w.data)
    for i in range(8):
        target.send(src, _frame(1000 + i))
        w.pump(5 * service // 2)
    w.pump(2 * REFRESH_US * 1000)
    assert len(w.data) - n_data == 8, "the trickle was not delivered"
    assert w.pfc[n_pfc:] == [], f"PFC frames after the queue drained: {w.pfc[n_pfc:]}"
