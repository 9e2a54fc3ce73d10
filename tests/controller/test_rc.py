"""RC QP state machines: segmentation, PSN sequencing, ACK coalescing, NAK, go-back-N,
retransmit timer, READ. Pure transport level (no frames, no switch)."""

from __future__ import annotations

from controller.hosts.rc import (
    ACCESS_REMOTE_READ,
    READ,
    SEND,
    WRITE,
    MemoryRegion,
    Pdu,
    RcRequester,
    RcResponder,
    psn_diff,
)
from controller.packets import constants as C


def drain(req: RcRequester, now: int = 0) -> list[Pdu]:
    out = []
    while (p := req.next_pdu(now)) is not None:
        out.append(p)
    return out


def test_psn_diff_wraps():
    assert psn_diff(0, 0xFFFFFF) == 1
    assert psn_diff(0xFFFFFF, 0) == -1
    assert psn_diff(5, 3) == 2


def test_write_segmentation_and_opcodes():
    req = RcRequester(qpn=0x11, dqpn=0x22, mtu=1024, start_psn=0xFFFFFE)
    req.post(WRITE, 3000, va=0x1000, rkey=7)
    pkts = drain(req)
    assert [p.opcode for p in pkts] == [C.RC_WRITE_FIRST, C.RC_WRITE_MIDDLE, C.RC_WRITE_LAST]
    assert [p.psn for p in pkts] == [0xFFFFFE, 0xFFFFFF, 0]  # 24-bit wrap
    assert [p.payload_len for p in pkts] == [1024, 1024, 952]
    assert pkts[0].reth == (0x1000, 7, 3000) and pkts[1].reth is None
    assert [p.ackreq for p in pkts] == [False, False, True]
    req2 = RcRequester(1, 2, mtu=1024)
    req2.post(SEND, 100)
    (only,) = drain(req2)
    assert only.opcode == C.RC_SEND_ONLY and only.payload_len == 100


def test_ack_coalescing_every_n_and_on_ackreq():
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, ack_every=4)
    req.post(WRITE, 1000)  # 10 packets, AckReq on the last
    acks = [a for p in drain(req) for a in resp.on_pdu(p, 0)]
    # one ACK after packets 4 and 8 (coalesced), one for the AckReq on packet 10
    assert [a.psn for a in acks] == [3, 7, 9]
    assert all(a.opcode == C.RC_ACK and a.aeth[0] == C.AETH_ACK_NO_CREDIT for a in acks)
    for a in acks:
        req.on_pdu(a, 10)
    assert req.idle and req.stats.acked_bytes == 1000
    assert resp.stats.bytes_received == 1000 and resp.msn == 1


def test_nak_on_gap_once_then_go_back_n():
    req = RcRequester(1, 2, mtu=100, window=64)
    resp = RcResponder(2, 1, mtu=100, ack_every=100)
    req.post(WRITE, 800)  # PSN 0..7
    pkts = drain(req)
    out = []
    for p in pkts:
        if p.psn == 2:
            continue  # lost
        out += resp.on_pdu(p, 0)
    # exactly one NAK (PSN sequence error) naming the expected PSN 2
    assert len(out) == 1
    nak = out[0]
    assert nak.aeth[0] == C.AETH_NAK_PSN_SEQ_ERROR and nak.psn == 2
    assert resp.stats.out_of_order == 5 and resp.epsn == 2
    req.on_pdu(nak, 5)
    assert req.una == 2 and req.stats.naks == 1
    again = drain(req)
    assert [p.psn for p in again] == [2, 3, 4, 5, 6, 7]  # go-back-N resends the whole tail
    assert req.stats.retransmitted_packets == 6
    acks = [a for p in again for a in resp.on_pdu(p, 6)]
    assert acks[-1].psn == 7 and acks[-1].aeth[0] == C.AETH_ACK_NO_CREDIT
    req.on_pdu(acks[-1], 7)
    assert req.idle and resp.stats.bytes_received == 800


def test_duplicate_is_reacked():
    resp = RcResponder(2, 1, mtu=100, ack_every=100, rq_depth=1, recv_size=64)
    resp.on_pdu(Pdu(C.RC_SEND_ONLY, 2, 0, True, 10), 0)
    (ack,) = resp.on_pdu(Pdu(C.RC_SEND_ONLY, 2, 0, True, 10), 1)
    assert ack.psn == 0 and resp.stats.duplicates == 1 and resp.stats.bytes_received == 10


def test_window_limits_outstanding():
    req = RcRequester(1, 2, mtu=100, window=4)
    req.post(WRITE, 1000)
    assert len(drain(req)) == 4
    req.on_pdu(Pdu(C.RC_ACK, 1, 1, aeth=(C.AETH_ACK_NO_CREDIT, 0)), 0)
    assert [p.psn for p in drain(req)] == [4, 5]


def test_retransmit_timer_goes_back_to_una():
    req = RcRequester(1, 2, mtu=100, timeout_ns=1000)
    req.post(WRITE, 300)
    drain(req, now=0)
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(C.AETH_ACK_NO_CREDIT, 0)), 100)  # PSN 0 acked
    assert not req.check_timeout(1099)
    assert req.check_timeout(1100)
    assert req.stats.timeouts == 1
    assert [p.psn for p in drain(req, 1100)] == [1, 2]


def test_read_responses_and_lost_response_reissues_rest():
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, mrs={3: MemoryRegion(0x5000, 450, 3, ACCESS_REMOTE_READ)})
    req.post(READ, 450, va=0x5000, rkey=3)
    (rr,) = drain(req)
    assert rr.opcode == C.RC_READ_REQUEST and rr.reth == (0x5000, 3, 450)
    assert req.next_psn == 5  # a READ consumes one PSN per response packet
    responses = resp.on_pdu(rr, 0)
    assert [r.opcode for r in responses] == [C.RC_READ_RESPONSE_FIRST] + [
        C.RC_READ_RESPONSE_MIDDLE
    ] * 3 + [C.RC_READ_RESPONSE_LAST]
    assert [r.aeth is not None for r in responses] == [True, False, False, False, True]
    assert [r.payload_len for r in responses] == [100, 100, 100, 100, 50]
    for r in responses:
        if r.psn != 2:  # response 2 lost
            req.on_pdu(r, 1)
    # the READ is re-issued for the remainder, from the first missing response
    (again,) = drain(req)
    assert again.opcode == C.RC_READ_REQUEST and again.psn == 2
    assert again.reth == (0x5000 + 200, 3, 250)
    for r in resp.on_pdu(again, 2):  # a duplicate READ is answered again
        req.on_pdu(r, 3)
    assert req.idle and req.done[0].completed_ns == 3
    assert req.stats.acked_bytes == 450


def test_stale_nak_is_ignored():
    req = RcRequester(1, 2, mtu=100)
    req.post(WRITE, 1000)
    drain(req)
    req.on_pdu(Pdu(C.RC_ACK, 1, 5, aeth=(C.AETH_ACK_NO_CREDIT, 0)), 1)  # 0..5 acked
    req.on_pdu(Pdu(C.RC_ACK, 1, 3, aeth=(C.AETH_NAK_PSN_SEQ_ERROR, 0)), 2)  # older NAK
    assert req.una == 6 and req.next_psn == 10 and req.stats.go_back_events == 0
    req.on_pdu(Pdu(C.RC_ACK, 1, 7, aeth=(C.AETH_NAK_PSN_SEQ_ERROR, 0)), 3)
    assert req.una == 7 and req.next_psn == 7 and req.stats.go_back_events == 1


def test_lost_read_response_reissues_once_per_gap():
    """The tail of the first response stream is still arriving after the re-issue went
    out: those out-of-order responses must not re-issue the READ again each time."""
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100)
    req.post(READ, 1000)  # 10 responses, PSN 0..9
    responses = resp.on_pdu(req.next_pdu(0), 0)
    sent = []
    for r in responses:
        if r.psn == 2:
            continue  # lost
        req.on_pdu(r, 1)
        while (p := req.next_pdu(1)) is not None:  # the NIC sends as soon as it may
            sent.append(p)
    assert [(p.psn, p.reth[2]) for p in sent] == [(2, 800)]  # one re-issue: 8 x 100 B left
    assert req.stats.go_back_events == 1
    for r in resp.on_pdu(sent[0], 2):
        if r.psn == 5:
            continue  # a second gap, in the re-issue's responses
        req.on_pdu(r, 3)
    (again,) = [p for p in iter(lambda: req.next_pdu(3), None)]
    assert again.psn == 5 and again.reth[2] == 500  # a new gap gets its own re-issue
    for r in resp.on_pdu(again, 4):
        req.on_pdu(r, 5)
    assert req.idle and req.stats.acked_bytes == 1000 and req.stats.go_back_events == 2
