"""Boundary tests for the RC model where a plausible slip passed the rest of the suite
(issue 36's mutation round): retry budgets that must start afresh on every message's
progress, and the exact edges of selective repeat's windows (the requester's reordering
window, the responder's out-of-order buffer). Each test names the slip it catches."""

from __future__ import annotations

import pytest
from rc_helpers import drain

from controller.hosts import rc
from controller.hosts.rc import READ, SEND, WRITE, Pdu, RcRequester, RcResponder, rnr_timer_ns
from controller.packets import constants as C

NACK = C.AETH_NAK_PSN_SEQ_ERROR


def ack(psn: int) -> Pdu:
    return Pdu(C.RC_ACK, 1, psn, aeth=(C.AETH_ACK_NO_CREDIT, 0))


def rnr(psn: int) -> Pdu:
    return Pdu(C.RC_ACK, 1, psn, aeth=(C.AETH_RNR_NAK | 1, 0))


# -- retry accounting across messages ----------------------------------------------------


@pytest.mark.parametrize("rnr_retry", [1, 3])
def test_rnr_budget_is_per_message_not_per_qp(rnr_retry):
    """Three SENDs, each RNR NAK'ed `rnr_retry` times (the most allowed) before it lands:
    all complete; the counters add up over the messages. Then one more RNR NAK than allowed
    on the fourth fails the QP. Catches: progress resetting the transport retry count but not
    the RNR one (the budget would run out on the second message)."""
    req = RcRequester(1, 2, rnr_retry=rnr_retry)
    wrs = [req.post(SEND, 10) for _ in range(4)]
    t = 0
    for psn in range(3):
        for _ in range(rnr_retry):
            assert psn in [p.psn for p in drain(req, t)]
            req.on_pdu(rnr(psn), t)  # acknowledges the messages before `psn`
            assert req.state == rc.QPS_RTS, (psn, req.hw)
            t += rnr_timer_ns(1)
    assert [w.status for w in wrs[:2]] == [rc.WC_SUCCESS] * 2
    req.on_pdu(ack(2), t)
    assert wrs[2].status == rc.WC_SUCCESS
    assert req.hw.rnr_nak_retry_err == 3 * rnr_retry and req.hw.req_rnr_retries_exceeded == 0
    for _ in range(rnr_retry + 1):
        drain(req, t)
        req.on_pdu(rnr(3), t)
        t += rnr_timer_ns(1)
    assert req.state == rc.QPS_ERR and wrs[3].status == rc.WC_RNR_RETRY_EXC_ERR
    assert req.hw.req_rnr_retries_exceeded == 1


def test_timeout_budget_is_per_message():
    """retry_cnt=1: each of three WRITEs times out once and is then ACKed: no error; a
    second timeout without progress on the last fails it."""
    req = RcRequester(1, 2, timeout_ns=1000, retry_cnt=1)
    wrs = [req.post(WRITE, 10) for _ in range(3)]
    t = 0
    for psn in range(3):
        drain(req, t)
        t += 1000
        assert req.check_timeout(t) and req.state == rc.QPS_RTS
        drain(req, t)
        if psn < 2:
            req.on_pdu(ack(psn), t)
    assert [w.status for w in wrs[:2]] == [rc.WC_SUCCESS] * 2
    assert req.hw.local_ack_timeout_err == 3
    t += 1000
    req.check_timeout(t)
    assert req.state == rc.QPS_ERR and wrs[2].status == rc.WC_RETRY_EXC_ERR


def test_read_responses_are_progress_for_the_retry_budget():
    """A 3-packet READ, retry_cnt=1: a timeout (retry 1), then the first response arrives
    (progress), then a timeout again: a fresh budget, still RTS; a third timeout without a
    response fails it. Catches: READ responses not resetting the retry count."""
    req = RcRequester(1, 2, mtu=100, timeout_ns=1000, retry_cnt=1)
    wr = req.post(READ, 300)
    (r,) = drain(req, 0)
    assert r.opcode == C.RC_READ_REQUEST
    assert req.check_timeout(1000) and req.state == rc.QPS_RTS
    drain(req, 1000)
    req.on_pdu(Pdu(C.RC_READ_RESPONSE_FIRST, 1, 0, payload_len=100, aeth=(0, 1)), 1500)
    assert wr.read_received == 1
    assert req.check_timeout(2500) and req.state == rc.QPS_RTS
    drain(req, 2500)
    req.check_timeout(3500)
    assert req.state == rc.QPS_ERR and wr.status == rc.WC_RETRY_EXC_ERR


# -- selective repeat: the requester's reordering window ----------------------------------


@pytest.mark.parametrize("window", [1, 3, 8])
def test_reorder_window_edge_is_exact(window):
    """PSN 0 is missing. A NACK whose triggering PSN is exactly `window` beyond it does not
    make it lost (reordering up to `window` PSNs is tolerated); one PSN further does.
    Catches an off-by-one either way in `sack - reorder_psns`."""
    req = RcRequester(1, 2, mtu=100, mode="sr", reorder_psns=window)
    req.post(WRITE, 100 * (window + 4))
    drain(req)
    for sack in range(1, window + 1):  # PSNs 1..window arrived, 0 did not (yet)
        req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(NACK, sack)), 0)
        assert drain(req) == [], sack
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(NACK, window + 1)), 0)
    assert [p.psn for p in drain(req)] == [0]
    assert req.stats.retransmitted_packets == 1


def test_reorder_window_may_equal_the_send_window():
    req = RcRequester(1, 2, window=16, mode="sr", reorder_psns=16)  # the bound is inclusive
    assert req.reorder_psns == 16


def test_a_psn_sacked_at_the_new_una_is_not_resent_by_the_timer():
    """PSNs 0..5 sent; a NACK says 3 arrived (0..2 missing); an ACK then covers 0..2, so una
    is 3 -- and 3 is the sacked PSN. The timer must resend 4 and 5 only. Catches: pruning
    the sacked set with `p > una` (forgets that una itself arrived)."""
    req = RcRequester(1, 2, mtu=100, mode="sr", timeout_ns=1000)
    req.post(WRITE, 600)
    drain(req)
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(NACK, 3)), 0)
    assert [p.psn for p in drain(req)] == [0, 1, 2]
    req.on_pdu(ack(2), 10)
    assert req.una == 3
    assert req.check_timeout(2000)
    assert [p.psn for p in drain(req, 2000)] == [4, 5]


# -- selective repeat: the responder's out-of-order buffer --------------------------------


def _write(psn: int, opcode: int = C.RC_WRITE_MIDDLE) -> Pdu:
    return Pdu(opcode, 2, psn, payload_len=100)


@pytest.mark.parametrize("window", [2, 4, 16])
def test_responder_keeps_out_of_order_packets_up_to_its_window_edge(window):
    """With PSN 0 missing, PSN window-1 (the last inside the window) is kept and NACKed
    with itself as the triggering PSN; once 0..window-2 arrive, it is delivered from the
    buffer. PSN `window` (just outside) is not kept: a plain sequence NAK, and it must be
    sent again. Catches `<` turned into `<=` or the window shrunk by one."""
    resp = RcResponder(2, 1, mtu=100, mode="sr", window=window)
    edge = resp.on_pdu(_write(window - 1, C.RC_WRITE_LAST), 0)
    assert [(p.aeth[0], p.aeth[1]) for p in edge] == [(NACK, window - 1)]
    resp.on_pdu(_write(0, C.RC_WRITE_FIRST), 0)
    for psn in range(1, window - 1):
        resp.on_pdu(_write(psn), 0)
    assert resp.epsn == window  # the kept packet was delivered behind the hole
    assert resp.stats.bytes_received == 100 * window

    outside = RcResponder(2, 1, mtu=100, mode="sr", window=window)
    (nak,) = outside.on_pdu(_write(window, C.RC_WRITE_LAST), 0)
    assert nak.aeth == (NACK, 0) and outside.nak_pending  # go-back-N's NAK: not kept
    for psn in range(window):
        outside.on_pdu(_write(psn, C.RC_WRITE_FIRST if psn == 0 else C.RC_WRITE_MIDDLE), 0)
    assert outside.epsn == window  # PSN `window` was dropped: it must come again
