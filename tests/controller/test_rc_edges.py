"""RC transport edge cases a mutation review found untested (transport level, Pdus).
Expected values come from the InfiniBand Architecture Specification vol. 1 (ch. 9) and
IRN (Mittal et al., SIGCOMM 2018) as the rc module docstring cites them, written out by
hand here on purpose as an independent oracle."""

from __future__ import annotations

from rc_helpers import drain, exchange

from controller.hosts import rc
from controller.hosts.rc import (
    ACCESS_REMOTE_ATOMIC,
    FETCH_ADD,
    SEND,
    WRITE,
    MemoryRegion,
    Pdu,
    RcRequester,
    RcResponder,
    psn_diff,
)
from controller.packets import constants as C


def test_psn_half_space_is_the_duplicate_region():
    """IBA 9.7.5.1: the 2^23 PSNs before ePSN are duplicates, so ePSN + 2^23 (== ePSN - 2^23
    mod 2^24) is a duplicate, ePSN + 2^23 - 1 the farthest out-of-sequence PSN."""
    assert psn_diff(0x800000, 0) == -0x800000
    assert psn_diff(0x7FFFFF, 0) == 0x7FFFFF
    assert psn_diff(0, 0x800001) == 0x7FFFFF
    resp = RcResponder(2, 1, mtu=100, rq_depth=None)
    resp.on_pdu(Pdu(C.RC_SEND_ONLY, 2, 0x800000, True, 10), 0)
    assert resp.stats.duplicates == 1 and resp.stats.out_of_order == 0
    assert resp.stats.naks_sent == 0  # a duplicate is re-ACKed, never NAKed
    resp.on_pdu(Pdu(C.RC_SEND_ONLY, 2, 0x7FFFFF, True, 10), 0)
    assert resp.stats.out_of_order == 1 and resp.stats.naks_sent == 1


def test_ack_req_every_n_packets():
    """With ack_req_every=4 the AckReq bit is set on every 4th PSN and on the last packet."""
    req = RcRequester(1, 2, mtu=100, ack_req_every=4)
    req.post(WRITE, 1000)  # PSN 0..9
    assert [p.psn for p in drain(req) if p.ackreq] == [3, 7, 9]


def test_window_full_means_no_work():
    req = RcRequester(1, 2, mtu=100, window=4)
    req.post(WRITE, 1000)
    assert len(drain(req)) == 4
    assert not req.has_work()  # the host must not poll a QP whose window is full
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(C.AETH_ACK_NO_CREDIT, 0)), 0)
    assert req.has_work()


def test_fetch_add_wraps_modulo_2_64():
    """IBA 9.4.5: Fetch and Add is an unsigned 64-bit add, modulo 2^64."""
    mr = MemoryRegion(0x2000, 64, 5, ACCESS_REMOTE_ATOMIC)
    req, resp = RcRequester(1, 2), RcResponder(2, 1, mrs={5: mr})
    mr.words[0x2000] = rc.U64
    a = req.post(FETCH_ADD, 8, va=0x2000, rkey=5, swap_add=3)
    exchange(req, resp)
    assert a.result == rc.U64 and mr.words[0x2000] == 2


def test_atomic_replay_cache_is_bounded():
    """Many atomics must not grow the responder's saved-results table without bound, and
    the newest results stay there to answer a duplicate."""
    mr = MemoryRegion(0x2000, 64, 5, ACCESS_REMOTE_ATOMIC)
    req, resp = RcRequester(1, 2), RcResponder(2, 1, mrs={5: mr})
    for _ in range(100):
        req.post(FETCH_ADD, 8, va=0x2000, rkey=5, swap_add=1)
        exchange(req, resp)
    assert mr.words[0x2000] == 100 and req.idle
    assert len(resp._atomic_done) <= rc._ATOMIC_CACHE
    (dup,) = resp.on_pdu(Pdu(C.RC_FETCH_ADD, 2, 99, True, atomic=(0x2000, 5, 1, 0)), 0)
    assert dup.atomic_ack == 99 and mr.words[0x2000] == 100  # answered, not re-executed


def test_selective_repeat_does_not_resend_a_psn_sacked_after_it_was_marked_lost():
    """IRN resends only PSNs it infers lost: one that a later NACK reports received is
    skipped even though it was already queued for retransmission."""
    req = RcRequester(1, 2, mtu=100, mode="sr")
    req.post(WRITE, 600)  # PSN 0..5
    assert len(drain(req)) == 6
    nack = C.AETH_NAK_PSN_SEQ_ERROR
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(nack, 3)), 0)  # 3 arrived: 0, 1, 2 lost
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(nack, 1)), 0)  # 1 arrived after all (reordered)
    assert [p.psn for p in drain(req)] == [0, 2]
    assert req.stats.retransmitted_packets == 2


def test_no_ack_timeout_while_waiting_out_an_rnr_timer():
    """The RNR wait is not a lost ACK: the retransmit timer does not fire before the wait
    the RNR NAK asked for (code 0 = 655.36 ms, IBA table 45) is over."""
    req = RcRequester(1, 2, mtu=100, timeout_ns=1_000_000, retry_cnt=0)
    req.post(SEND, 100)
    drain(req)
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(C.AETH_RNR_NAK | 0, 0)), 0)
    assert not req.check_timeout(2_000_000)  # retry_cnt=0 would fail the QP here
    assert req.state == rc.QPS_RTS and req.next_pdu(2_000_000) is None
    assert req.timer_deadline() >= 655_360_000
    (again,) = drain(req, 655_360_000)
    assert again.psn == 0


def test_send_that_exactly_fills_the_receive_buffer_is_accepted():
    """Only a message longer than the posted buffer is a local length error."""
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, rq_depth=2, recv_size=150)
    req.post(SEND, 150)
    exchange(req, resp)
    assert resp.state == rc.QPS_RTS and req.idle
    assert resp.recv_completions[-1].byte_len == 150
    assert resp.recv_completions[-1].status == rc.WC_SUCCESS
    req.post(SEND, 151)
    exchange(req, resp)
    assert resp.state == rc.QPS_ERR and resp.recv_completions[-1].status == rc.WC_LOC_LEN_ERR
