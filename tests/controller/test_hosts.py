"""Host models back to back on a cable (no switch): real frames from the packet library
both ways; the cable can drop, CE-mark or inject PFC frames."""

from __future__ import annotations

import heapq
import itertools
import struct

import pytest

from controller.hosts.host import Host, HostSpec, payload_len, tx_ns
from controller.hosts.rc import READ, WRITE
from controller.packets import constants as C
from controller.packets import decode, roce_frame
from controller.packets.build import pfc_frame

US = 1000


class Cable:
    """Two hosts, one full-duplex link with a propagation delay, a tiny event loop."""

    def __init__(self, prop_ns: int = 1000, speed: float = 10e9, **spec_kw):
        self._t = 0
        self._heap: list = []
        self._seq = itertools.count()
        self.a = Host(
            HostSpec("a", "02:00:00:00:00:01", "10.0.0.1", 1, speed, prop_ns, **spec_kw), self
        )
        self.b = Host(
            HostSpec("b", "02:00:00:00:00:02", "10.0.0.2", 2, speed, prop_ns, **spec_kw), self
        )
        self.a.add_qp(0x11, 0x22, "10.0.0.2", "02:00:00:00:00:02")
        self.b.add_qp(0x22, 0x11, "10.0.0.1", "02:00:00:00:00:01")
        self.frames: list[tuple[str, bytes]] = []
        self.tamper = None  # fn(direction, frame) -> frame | None (None drops it)
        for src, dst in ((self.a, self.b), (self.b, self.a)):
            src.transmit = self._sender(src, dst, prop_ns)

    def _sender(self, src, dst, prop):
        def transmit(frame: bytes, t_end: int) -> None:
            self.frames.append((src.spec.name, frame))
            if self.tamper is not None:
                frame = self.tamper(src.spec.name, frame)
                if frame is None:
                    return
            self.at(t_end + prop, lambda: dst.receive(frame))

        return transmit

    def now(self) -> int:
        return self._t

    def at(self, t: int, fn) -> None:
        heapq.heappush(self._heap, (max(t, self._t), next(self._seq), fn))

    def run(self, until: int) -> None:
        while self._heap and self._heap[0][0] <= until:
            self._t, _, fn = heapq.heappop(self._heap)
            fn()
        self._t = until


def set_ce(frame: bytes) -> bytes:
    """Mark IPv4 ECN CE and fix the header checksum (the ICRC does not cover TOS)."""
    b = bytearray(frame)
    b[15] |= 0x03
    b[24:26] = b"\x00\x00"
    s = sum(struct.unpack("!10H", bytes(b[14:34])))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    b[24:26] = struct.pack("!H", ~s & 0xFFFF)
    return bytes(b)


def test_write_completes_at_line_rate_with_coalesced_acks():
    c = Cable(mtu=1024, ack_every=16, rp_enabled=False)
    c.a.post(0x11, WRITE, 1_000_000)
    c.run(2_000 * US)
    req = c.a.qps[0x11].requester
    resp = c.b.qps[0x22].responder
    assert req.idle and resp.stats.bytes_received == 1_000_000
    done = req.done[0].completed_ns
    pkts = -(-1_000_000 // 1024)
    # serialization of every data frame back to back, plus one round trip for the last ACK
    wire = sum(tx_ns(len(f), 10e9) for who, f in c.frames if who == "a")
    assert done == pytest.approx(wire + 2 * 1000, rel=0.02)
    acks = [decode(f) for who, f in c.frames if who == "b"]
    assert all(r.bth_opcode == 0x11 and r.aeth_valid for r in acks)
    assert len(acks) == pkts // 16 + 1  # every 16th packet and the AckReq on the last
    # every data frame is a valid RoCEv2 frame with ECT(0), DSCP 26, right QP and PSNs in order
    data = [decode(f) for who, f in c.frames if who == "a"]
    assert [r.bth_psn for r in data] == list(range(pkts))
    assert all(
        r.verdict == "ok" and r.ecn == 2 and r.dscp == 26 and r.bth_dqpn == 0x22 for r in data
    )


def test_drop_causes_nak_and_go_back_n_recovery():
    c = Cable(mtu=1024, ack_every=16, rp_enabled=False)
    dropped = []

    def tamper(who, frame):
        r = decode(frame)
        if who == "a" and r.bth_psn == 10 and not dropped:
            dropped.append(frame)
            return None
        return frame

    c.tamper = tamper
    c.a.post(0x11, WRITE, 64 * 1024)
    c.run(1_000 * US)
    req = c.a.qps[0x11].requester
    assert req.idle and c.b.qps[0x22].responder.stats.bytes_received == 64 * 1024
    naks = [decode(f) for who, f in c.frames if who == "b" and decode(f).aeth_syndrome == 0x60]
    assert len(naks) == 1 and naks[0].bth_psn == 10
    assert req.stats.naks == 1 and req.stats.retransmitted_packets > 0
    psns = [decode(f).bth_psn for who, f in c.frames if who == "a"]
    i = psns.index(10, 11)  # PSN 10 again after the NAK: everything from it is resent
    assert psns[i : i + 3] == [10, 11, 12]


def test_tail_drop_recovers_by_timeout():
    c = Cable(mtu=1024, rp_enabled=False, timeout_ns=100 * US)
    c.tamper = lambda who, f: (
        None if who == "a" and decode(f).bth_psn == 3 and not c.frames[4:] else f
    )
    c.a.post(0x11, WRITE, 4 * 1024)  # PSN 0..3; PSN 3 (the last) lost once: no NAK possible
    c.run(1_000 * US)
    req = c.a.qps[0x11].requester
    assert req.idle and req.stats.timeouts == 1
    assert req.done[0].completed_ns > 100 * US


def test_ce_marks_make_np_send_cnps_and_rp_cut_rate():
    c = Cable(mtu=1024, ack_every=16)
    c.tamper = lambda who, f: set_ce(f) if who == "a" and decode(f).bth_opcode <= 0x10 else f
    c.a.post(0x11, WRITE, 2_000_000)
    c.run(300 * US)
    cnps = [decode(f) for who, f in c.frames if who == "b" and decode(f).is_cnp]
    assert len(cnps) >= 5
    assert all(r.bth_dqpn == 0x11 and r.bth_becn == 1 and r.dscp == 48 for r in cnps)
    rp = c.a.rps[0x11]
    assert rp.cnps == len([1 for _ in cnps]) or rp.cnps == len(cnps) - 1  # last may be in flight
    assert rp.rc < 10e9 * 0.6
    # NP: at most one CNP per 50 us (one flow here); on a fixed-delay cable the RP sees the
    # NP's spacing unchanged
    assert len(cnps) <= 300 // 50 + 1
    gaps = [b - a for a, b in zip(rp.cnp_times, rp.cnp_times[1:], strict=False)]
    assert gaps and min(gaps) >= 50 * US, gaps


def test_pfc_pause_stops_data_for_the_quanta():
    c = Cable(mtu=1024, rp_enabled=False)
    c.a.post(0x11, WRITE, 1_000_000)
    c.run(10 * US)
    # 0xFFFF quanta x 512 bit times at 10 Gb/s = 3355.4 us of pause on class 3
    c.at(c.now(), lambda: c.a.receive(pfc_frame("02:00:00:00:00:02", {3: 0xFFFF})))
    c.run(11 * US)
    sent = len([1 for who, _ in c.frames if who == "a"])
    c.run(1_000 * US)
    assert len([1 for who, _ in c.frames if who == "a"]) <= sent + 1  # the frame on the wire
    assert c.a.is_paused(3)
    c.at(c.now(), lambda: c.a.receive(pfc_frame("02:00:00:00:00:02", {3: 0})))  # XON
    c.run(1_100 * US)
    assert not c.a.is_paused(3)
    assert len([1 for who, _ in c.frames if who == "a"]) > sent + 50


# ---------------------------------------------------------------- RoCEv1 and payload lengths


@pytest.mark.parametrize(
    "version,src,dst",
    [
        (1, "10.0.1.1", "10.0.2.1"),
        (2, "10.0.1.1", "10.0.2.1"),
        (1, "2001:db8::1", "2001:db8::2"),
        (2, "2001:db8::1", "2001:db8::2"),
    ],
    ids=["v1-ipv4gid", "v2-ipv4", "v1-ipv6gid", "v2-ipv6"],
)
@pytest.mark.parametrize("vlan", [None, 7], ids=["untagged", "vlan"])
def testpayload_len_is_the_payload_the_frame_was_built_with(version, src, dst, vlan):
    # Every extended-header combination (RETH, ImmDt, AETH, none), lengths that need
    # pad bytes, and frames short enough to get Ethernet padding.
    for opcode in (
        C.RC_WRITE_FIRST,
        C.RC_WRITE_MIDDLE,
        C.RC_WRITE_ONLY_IMM,
        C.RC_SEND_LAST_IMM,
        C.RC_READ_RESPONSE_ONLY,
        C.RC_ACK,
    ):
        for n in (0, 1, 3, 255, 256):
            payload = b"" if opcode == C.RC_ACK else bytes(n)
            f = roce_frame(src, dst, opcode, 0xB2, 1, payload, version=version, vlan=vlan)
            rec = decode(f)
            assert rec.roce_version == version and rec.verdict == "ok"
            assert payload_len(f, rec) == len(payload), (opcode, n)


def testpayload_len_of_the_rocev1_frame_in_the_report():
    # the case that was 8 bytes short: a UDP header subtracted from a GRH frame
    f = roce_frame("10.0.1.1", "10.0.2.1", 0x07, 0xB2, 1, bytes(256), version=1)
    assert payload_len(f, decode(f)) == 256


def test_roce_version_is_checked():
    with pytest.raises(ValueError, match="roce_version 3"):
        HostSpec("a", "02:00:00:00:00:01", "10.0.0.1", 1, roce_version=3)


def test_rocev1_hosts_write_and_read_with_go_back_n():
    """Two RoCEv1 hosts on one segment: every frame is EtherType 0x8915 + GRH (no IP/UDP),
    a lost packet is NAKed and resent, and the bytes delivered are exact (the responder
    counts payload from the GRH length)."""
    c = Cable(mtu=1024, ack_every=16, rp_enabled=False, roce_version=1)
    lost = []

    def tamper(who, frame):
        if who == "a" and decode(frame).bth_psn == 5 and not lost:
            lost.append(frame)
            return None
        return frame

    c.tamper = tamper
    c.a.post(0x11, WRITE, 20 * 1024 + 3)
    c.a.post(0x11, READ, 3000)
    c.run(1_000 * US)
    req = c.a.qps[0x11].requester
    resp = c.b.qps[0x22].responder
    assert req.idle and len(req.done) == 2 and all(w.completed_ns for w in req.done)
    assert resp.stats.bytes_received == 20 * 1024 + 3
    assert req.stats.naks == 1 and req.stats.retransmitted_packets > 0
    assert c.a.stats.rx_bad == 0 and c.b.stats.rx_bad == 0
    recs = [decode(f) for _, f in c.frames]
    assert recs and all(
        r.roce_version == 1 and r.ethertype == C.ETH_P_ROCEV1 and r.verdict == "ok" for r in recs
    )
    # READ responses carry the 3000 bytes back: 1024 + 1024 + 952
    reads = [
        payload_len(f, r)
        for (who, f), r in zip(c.frames, recs, strict=True)
        if who == "b" and C.RC_READ_RESPONSE_FIRST <= r.bth_opcode <= C.RC_READ_RESPONSE_ONLY
    ]
    assert reads == [1024, 1024, 952]


def test_rocev1_ce_in_the_grh_makes_rocev1_cnps():
    c = Cable(mtu=1024, roce_version=1)

    def mark(who, f):
        if who == "a" and decode(f).bth_opcode <= C.RC_WRITE_ONLY_IMM:
            b = bytearray(f)
            b[15] |= 0x30  # GRH traffic class ECN bits = CE (not covered by the ICRC)
            return bytes(b)
        return f

    c.tamper = mark
    c.a.post(0x11, WRITE, 500_000)
    c.run(200 * US)
    cnps = [decode(f) for who, f in c.frames if who == "b" and decode(f).is_cnp]
    assert len(cnps) >= 3
    assert all(r.roce_version == 1 and r.bth_dqpn == 0x11 and r.verdict == "ok" for r in cnps)
    assert c.a.rps[0x11].cnps >= 2 and c.a.rps[0x11].rc < 10e9 * 0.8


# -- verbs semantics over real frames ----------------------------------------------------


def test_rnr_nak_on_the_wire_then_the_requester_waits_the_timer_and_completes():
    c = Cable(mtu=1024, rp_enabled=False, rq_depth=1, min_rnr_timer=4)  # 40 us
    times: list[tuple[int, str, object]] = []
    inner = c.tamper

    def watch(who, frame):
        times.append((c.now(), who, decode(frame)))
        return frame if inner is None else inner(who, frame)

    c.tamper = watch
    c.a.post(0x11, "SEND", 3000)
    c.a.post(0x11, "SEND", 100)  # finds no receive posted: RNR NAK
    c.at(30 * US, lambda: c.b.post_recv(0x22, 4096))  # the app posts one later
    c.run(1_000 * US)
    req, resp = c.a.qps[0x11].requester, c.b.qps[0x22].responder
    assert req.idle and [w.status for w in req.done] == ["IBV_WC_SUCCESS"] * 2
    rnrs = [(t, r) for t, who, r in times if who == "b" and r.aeth_syndrome & 0xE0 == 0x20]
    assert len(rnrs) == 1 and rnrs[0][1].aeth_syndrome == 0x24 and rnrs[0][1].bth_psn == 3
    t_nak = rnrs[0][0]
    resend = [t for t, who, r in times if who == "a" and r.bth_psn == 3]
    assert len(resend) == 2
    # the NAK left b at t_nak, reached a one propagation later; a waited 40 us from then
    assert resend[1] - t_nak >= 40 * US + 1000
    assert resend[1] - t_nak < 40 * US + 1000 + 5 * US
    assert [w.byte_len for w in resp.recv_completions] == [3000, 100]
    cnt = c.b.counters(0x22)
    assert cnt["out_of_buffer"] == 1 and cnt["recv_completions"] == 2
    assert c.a.counters(0x11)["rnr_nak_retry_err"] == 1


def test_atomics_over_the_wire():
    c = Cable(mtu=1024, rp_enabled=False)
    c.a.qps[0x11].requester.max_atomic = 1
    mr = c.b.register_mr(0x10000, 4096, 0xAB, 8)
    mr.words[0x10008] = 5
    wr1 = c.a.post(0x11, "FETCH_ADD", 8, va=0x10008, rkey=0xAB, swap_add=10)
    wr2 = c.a.post(0x11, "CMP_SWAP", 8, va=0x10008, rkey=0xAB, compare=15, swap_add=99)
    c.run(200 * US)
    assert (wr1.result, wr2.result, mr.words[0x10008]) == (5, 15, 99)
    reqs = [decode(f) for who, f in c.frames if who == "a"]
    acks = [decode(f) for who, f in c.frames if who == "b"]
    assert [r.bth_opcode for r in reqs] == [C.RC_FETCH_ADD, C.RC_CMP_SWAP]
    assert (reqs[0].atomic_va, reqs[0].atomic_rkey, reqs[0].atomic_swap) == (0x10008, 0xAB, 10)
    assert (reqs[1].atomic_swap, reqs[1].atomic_cmp) == (99, 15)
    assert [(r.bth_opcode, r.atomicack_orig) for r in acks] == [
        (C.RC_ATOMIC_ACK, 5),
        (C.RC_ATOMIC_ACK, 15),
    ]
    assert all(r.verdict == "ok" for r in reqs + acks)
    # one atomic outstanding: the second left only after the first's ACK came back
    assert [who for who, _ in c.frames] == ["a", "b", "a", "b"]


def test_bad_rkey_over_the_wire_errors_both_qps():
    c = Cable(mtu=1024, rp_enabled=False)
    c.a.post(0x11, WRITE, 2048, va=0x1000, rkey=0x99)  # nothing registered with 0x99
    c.a.post(0x11, WRITE, 10)
    c.run(500 * US)
    naks = [decode(f) for who, f in c.frames if who == "b"]
    assert [(r.bth_opcode, r.aeth_syndrome, r.bth_psn) for r in naks] == [(0x11, 0x62, 0)]
    req = c.a.qps[0x11].requester
    assert [w.status for w in req.done] == ["IBV_WC_REM_ACCESS_ERR", "IBV_WC_WR_FLUSH_ERR"]
    assert c.a.qps[0x11].state == "ERR" and c.b.qps[0x22].state == "ERR"
    assert c.b.counters(0x22)["resp_remote_access_errors"] == 1
    assert c.b.qps[0x22].responder.stats.bytes_received == 0


@pytest.mark.parametrize("retry_cnt", [0, 2, 7])
def test_retry_exhaustion_sends_exactly_one_plus_retry_cnt_times(retry_cnt):
    c = Cable(mtu=1024, rp_enabled=False, timeout_ns=50 * US, retry_cnt=retry_cnt)
    c.tamper = lambda who, f: None if who == "a" else f  # the peer is gone
    c.a.post(0x11, WRITE, 1000)
    c.run(2_000 * US)
    req = c.a.qps[0x11].requester
    assert [w.status for w in req.done] == ["IBV_WC_RETRY_EXC_ERR"]
    assert sum(who == "a" for who, _ in c.frames) == 1 + retry_cnt
    assert req.done[0].completed_ns == pytest.approx((retry_cnt + 1) * 50 * US, abs=5 * US)
    cnt = c.a.counters(0x11)
    assert cnt["local_ack_timeout_err"] == retry_cnt and cnt["req_transport_retries_exceeded"] == 1
    assert c.a.idle


def test_selective_repeat_resends_only_the_lost_packet_over_the_wire():
    for transport, resent in (("gbn", None), ("sr", 1)):
        c = Cable(mtu=1024, ack_every=16, rp_enabled=False, transport=transport)
        lost = []

        def tamper(who, frame, lost=lost):
            if who == "a" and decode(frame).bth_psn == 10 and not lost:
                lost.append(frame)
                return None
            return frame

        c.tamper = tamper
        c.a.post(0x11, WRITE, 64 * 1024)
        c.run(1_000 * US)
        req = c.a.qps[0x11].requester
        assert req.idle and c.b.qps[0x22].responder.stats.bytes_received == 64 * 1024
        if resent is None:
            # everything sent behind PSN 10 before the NAK came back (one RTT of packets)
            assert req.stats.retransmitted_packets >= 4
        else:
            assert req.stats.retransmitted_packets == resent


def test_host_capture_sees_the_kernel_path_only_unless_the_nic_mirrors():
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    for mirror in (False, True):
        c = Cable(mtu=1024, rp_enabled=False, nic_mirror=mirror)
        ping = bytes(
            Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
            / IP(src="10.0.0.1", dst="10.0.0.2")
            / UDP(sport=1234, dport=53)
        )
        c.a.send_kernel(ping)
        c.a.post(0x11, WRITE, 4096)  # 4 data packets, one ACK back
        c.run(200 * US)
        assert c.a.qps[0x11].requester.idle
        assert (c.b.tcpdump.other, c.b.stats.kernel_rx, c.b.stats.rx_bad) == (1, 1, 0)
        assert c.b.tcpdump.roce == (5 if mirror else 0)  # 4 in, the ACK out
        assert c.a.tcpdump.roce == (5 if mirror else 0) and c.a.tcpdump.other == 1
        assert c.b.qps[0x22].responder.stats.packets_received == 4  # the NIC saw them all


def test_register_mr_refuses_bad_regions():
    c = Cable()
    c.b.register_mr(0x1000, 64, 7, 2)
    for bad in (
        (0x1000, 64, 7, 2),
        (0, -1, 8, 2),
        (0, 1, 1 << 32, 2),
        (1 << 64, 1, 9, 2),
        (0, 1, 10, 0x10),
    ):
        with pytest.raises(ValueError):
            c.b.register_mr(*bad)


def test_rnr_retry_exhausted_over_the_wire():
    c = Cable(mtu=1024, rp_enabled=False, rq_depth=0, min_rnr_timer=1, rnr_retry=3)
    c.a.post(0x11, "SEND", 100)
    c.run(1_000 * US)
    req = c.a.qps[0x11].requester
    assert [w.status for w in req.done] == ["IBV_WC_RNR_RETRY_EXC_ERR"]
    rnrs = [decode(f) for who, f in c.frames if who == "b"]
    assert [r.aeth_syndrome for r in rnrs] == [0x21] * 4  # the first try and 3 retries
    assert sum(who == "a" for who, _ in c.frames) == 4
    cnt = c.a.counters(0x11)
    assert cnt["rnr_nak_retry_err"] == 3 and cnt["req_rnr_retries_exceeded"] == 1
    assert c.b.counters(0x22)["out_of_buffer"] == 4
