"""RC verbs semantics of the host model: receive queues and RNR NAKs, retry limits and the
error state, memory regions and rkeys, atomics, selective repeat. Transport level (Pdus).

The RNR timer values below are typed in from IBA vol. 1 table 45 / ibv_modify_qp(3) on
purpose, as an independent oracle for rc.RNR_TIMER_US."""

from __future__ import annotations

import pytest
from rc_helpers import drain, exchange

from controller.hosts import rc
from controller.hosts.rc import (
    ACCESS_REMOTE_ATOMIC,
    ACCESS_REMOTE_READ,
    ACCESS_REMOTE_WRITE,
    CMP_SWAP,
    FETCH_ADD,
    READ,
    SEND,
    WRITE,
    MemoryRegion,
    Pdu,
    RcRequester,
    RcResponder,
    rnr_timer_ns,
)
from controller.packets import constants as C

# -- RNR timer ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "us"),
    [
        (0, 655360),
        (1, 10),
        (2, 20),
        (5, 60),
        (7, 120),
        (12, 640),
        (14, 1280),
        (18, 5120),
        (24, 40960),
        (30, 327680),
        (31, 491520),
    ],
)
def test_rnr_timer_table(code, us):
    assert rnr_timer_ns(code) == us * 1000


def test_rnr_timer_table_is_monotone_after_code_0_and_bounded():
    vals = [rnr_timer_ns(c) for c in range(1, 32)]
    assert vals == sorted(vals) and len(set(vals)) == 31
    assert rnr_timer_ns(0) > rnr_timer_ns(31)
    for bad in (-1, 32):
        with pytest.raises(ValueError):
            rnr_timer_ns(bad)


# -- receive queues ----------------------------------------------------------------------


def test_send_without_posted_receive_gets_rnr_nak_then_waits_the_timer():
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, rq_depth=0, min_rnr_timer=3)  # 30 us
    req.post(SEND, 250)
    (nak,) = exchange(req, resp, now=1000)
    assert nak.opcode == C.RC_ACK and nak.psn == 0
    assert nak.aeth[0] == C.AETH_RNR_NAK | 3 == 0x23
    assert resp.epsn == 0 and resp.hw.out_of_buffer == 1 and resp.hw.rnr_naks_sent == 1
    assert resp.hw.recv_completions == 0
    assert req.hw.rnr_nak_retry_err == 1 and req.blocked_until == 1000 + 30_000
    assert req.has_work() and req.next_pdu(30_999) is None  # still waiting
    resp.post_recv(250)
    again = drain(req, 31_000)
    assert [p.psn for p in again] == [0, 1, 2]  # the whole message again, from the NAK'ed PSN
    replies = [r for p in again for r in resp.on_pdu(p, 31_000)]
    for r in replies:
        req.on_pdu(r, 31_000)
    assert req.idle and req.done[0].status == rc.WC_SUCCESS
    (wc,) = resp.recv_completions
    assert wc.byte_len == 250 and wc.status == rc.WC_SUCCESS and resp.hw.recv_completions == 1


def test_rnr_nak_silences_the_rest_of_the_message():
    """After an RNR NAK the responder drops what follows without a sequence NAK."""
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, rq_depth=0)
    req.post(SEND, 500)
    out = [r for p in drain(req) for r in resp.on_pdu(p, 0)]
    assert len(out) == 1 and out[0].aeth[0] & 0xE0 == C.AETH_RNR_NAK
    assert resp.stats.naks_sent == 1 and resp.hw.out_of_sequence == 4


def test_send_and_write_imm_consume_a_receive_write_and_read_do_not():
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, rq_depth=3, recv_size=1000)
    req.post(WRITE, 300)
    req.post(READ, 300)
    exchange(req, resp)
    assert len(resp.rq) == 3 and resp.hw.recv_completions == 0
    req.post(SEND, 300)
    req.post(WRITE, 300, imm=0xCAFE)
    req.post(SEND, 50, imm=7)
    exchange(req, resp)
    assert req.idle and all(w.status == rc.WC_SUCCESS for w in req.done)
    assert len(resp.rq) == 0 and resp.hw.recv_completions == 3
    wcs = list(resp.recv_completions)
    assert [(w.wr_id, w.opcode, w.byte_len, w.imm) for w in wcs] == [
        (1, C.RC_SEND_LAST, 300, None),
        (2, C.RC_WRITE_LAST_IMM, 0, 0xCAFE),
        (3, C.RC_SEND_ONLY_IMM, 50, 7),
    ]
    assert resp.hw.rx_write_requests == 2 and resp.hw.rx_read_requests == 1


def test_write_imm_without_receive_is_rnr_naked_at_its_last_packet():
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, rq_depth=0)
    req.post(WRITE, 300, imm=1)
    (nak,) = exchange(req, resp)
    assert nak.aeth[0] & 0xE0 == C.AETH_RNR_NAK and nak.psn == 2
    assert resp.epsn == 2 and req.una == 2  # the RNR NAK acknowledged PSNs 0 and 1


def test_send_longer_than_the_posted_buffer_is_a_length_error_on_both_sides():
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, rq_depth=2, recv_size=150)
    req.post(SEND, 200)
    req.post(SEND, 10)
    (nak,) = exchange(req, resp)
    assert nak.aeth[0] == C.AETH_NAK_INVALID_REQUEST and nak.psn == 1
    assert resp.state == rc.QPS_ERR and resp.hw.resp_local_length_error == 1
    assert resp.recv_completions[0].status == rc.WC_LOC_LEN_ERR
    assert req.state == rc.QPS_ERR
    assert [w.status for w in req.done] == [rc.WC_REM_INV_REQ_ERR, rc.WC_WR_FLUSH_ERR]


# -- RNR retry limit ---------------------------------------------------------------------


def rnr(psn: int = 0, code: int = 1) -> Pdu:
    return Pdu(C.RC_ACK, 1, psn, aeth=(C.AETH_RNR_NAK | code, 0))


@pytest.mark.parametrize("rnr_retry", [0, 1, 3, 6])
def test_rnr_retry_limit_is_exact(rnr_retry):
    req = RcRequester(1, 2, rnr_retry=rnr_retry)
    req.post(SEND, 10)
    t = 0
    for _ in range(rnr_retry):  # each of these is retried
        assert drain(req, t)
        req.on_pdu(rnr(), t)
        assert req.state == rc.QPS_RTS
        t += rnr_timer_ns(1)
    assert drain(req, t)
    req.on_pdu(rnr(), t)  # one more than allowed
    assert req.state == rc.QPS_ERR
    assert req.done[0].status == rc.WC_RNR_RETRY_EXC_ERR
    assert req.hw.rnr_nak_retry_err == rnr_retry and req.hw.req_rnr_retries_exceeded == 1
    assert not req.has_work() and req.idle


def test_rnr_retry_7_is_infinite():
    req = RcRequester(1, 2, rnr_retry=7)
    req.post(SEND, 10)
    t = 0
    for _ in range(50):
        assert drain(req, t)
        req.on_pdu(rnr(), t)
        t += rnr_timer_ns(1)
    assert req.state == rc.QPS_RTS and req.hw.rnr_nak_retry_err == 50


# -- transport retry limit ---------------------------------------------------------------


@pytest.mark.parametrize("retry_cnt", [0, 1, 2, 7])
def test_timeout_retry_limit_is_exact_and_flushes_the_rest(retry_cnt):
    req = RcRequester(1, 2, timeout_ns=1000, retry_cnt=retry_cnt)
    req.post(WRITE, 10)
    req.post(WRITE, 10)
    t = 0
    drain(req, t)
    for _ in range(retry_cnt):
        t += 1000
        assert req.check_timeout(t) and req.state == rc.QPS_RTS
        assert [p.psn for p in drain(req, t)] == [0, 1]
    t += 1000
    req.check_timeout(t)
    assert req.state == rc.QPS_ERR
    assert [w.status for w in req.done] == [rc.WC_RETRY_EXC_ERR, rc.WC_WR_FLUSH_ERR]
    assert req.hw.local_ack_timeout_err == retry_cnt
    assert req.hw.req_transport_retries_exceeded == 1 and req.hw.req_cqe_flush_error == 1
    assert req.timer_deadline() is None and not drain(req, t + 10_000)
    late = req.post(SEND, 1, now_ns=t)  # posting to a QP in error flushes at once
    assert late.status == rc.WC_WR_FLUSH_ERR and req.idle


def test_progress_resets_the_retry_counter():
    req = RcRequester(1, 2, mtu=100, timeout_ns=1000, retry_cnt=1)
    req.post(WRITE, 300)
    drain(req, 0)
    assert req.check_timeout(1000) and req.state == rc.QPS_RTS  # retry 1 of 1
    drain(req, 1000)
    req.on_pdu(Pdu(C.RC_ACK, 1, 0, aeth=(C.AETH_ACK_NO_CREDIT, 0)), 1500)  # progress
    assert req.check_timeout(2500) and req.state == rc.QPS_RTS  # a fresh retry budget
    drain(req, 2500)
    req.check_timeout(3500)
    assert req.state == rc.QPS_ERR


def test_sequence_naks_without_progress_count_against_retry_cnt():
    req = RcRequester(1, 2, mtu=100, retry_cnt=2)
    req.post(WRITE, 500)
    drain(req)
    nak = Pdu(C.RC_ACK, 1, 2, aeth=(C.AETH_NAK_PSN_SEQ_ERROR, 0))
    req.on_pdu(nak, 1)  # progress (PSN 0, 1 acked), then retry 1
    assert req.una == 2 and req.hw.packet_seq_err == 1
    drain(req)
    req.on_pdu(nak, 2)  # retry 2, no progress
    assert req.state == rc.QPS_RTS and req.hw.packet_seq_err == 2
    drain(req)
    req.on_pdu(nak, 3)
    assert req.state == rc.QPS_ERR and req.done[-1].status == rc.WC_RETRY_EXC_ERR
    assert req.hw.packet_seq_err == 2 and req.hw.req_transport_retries_exceeded == 1


# -- memory regions ----------------------------------------------------------------------


def mr_pair(access=ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ):
    req = RcRequester(1, 2, mtu=100)
    resp = RcResponder(2, 1, mtu=100, mrs={0x77: MemoryRegion(0x1000, 0x400, 0x77, access)})
    return req, resp


@pytest.mark.parametrize(
    ("op", "va", "length", "rkey"),
    [
        (WRITE, 0x1000, 0x400, 0x77),  # exactly the region
        (WRITE, 0x1300, 0x100, 0x77),  # ends on its last byte
        (READ, 0x1000, 0x400, 0x77),
    ],
)
def test_access_inside_the_region_succeeds(op, va, length, rkey):
    req, resp = mr_pair()
    req.post(op, length, va=va, rkey=rkey)
    exchange(req, resp)
    assert req.idle and req.done[0].status == rc.WC_SUCCESS and resp.state == rc.QPS_RTS


@pytest.mark.parametrize(
    ("op", "va", "length", "rkey", "access"),
    [
        (WRITE, 0x1000, 0x100, 0x78, ACCESS_REMOTE_WRITE),  # unknown rkey
        (WRITE, 0x1301, 0x100, 0x77, ACCESS_REMOTE_WRITE),  # one byte past the end
        (WRITE, 0x0FFF, 0x10, 0x77, ACCESS_REMOTE_WRITE),  # starts before it
        (READ, 0x1000, 0x10, 0x77, ACCESS_REMOTE_WRITE),  # no remote read access
        (WRITE, 0x1000, 0x10, 0x77, ACCESS_REMOTE_READ),  # no remote write access
    ],
)
def test_bad_rkey_range_or_access_is_a_remote_access_error(op, va, length, rkey, access):
    req, resp = mr_pair(access)
    req.post(op, length, va=va, rkey=rkey)
    req.post(SEND, 1)
    (nak,) = exchange(req, resp)
    assert nak.aeth[0] == C.AETH_NAK_REMOTE_ACCESS == 0x62 and nak.psn == 0
    assert resp.state == rc.QPS_ERR and resp.hw.resp_remote_access_errors == 1
    assert req.state == rc.QPS_ERR and req.hw.req_remote_access_errors == 1
    assert [w.status for w in req.done] == [rc.WC_REM_ACCESS_ERR, rc.WC_WR_FLUSH_ERR]
    assert resp.on_pdu(Pdu(C.RC_SEND_ONLY, 2, 1, True, 1), 5) == []  # in error: silent


# -- atomics -----------------------------------------------------------------------------


def atomic_pair(**kw):
    req = RcRequester(1, 2, **kw)
    mr = MemoryRegion(0x2000, 64, 5, ACCESS_REMOTE_ATOMIC)
    resp = RcResponder(2, 1, mrs={5: mr})
    return req, resp, mr


def test_fetch_add_and_cmp_swap_execute_on_the_region():
    req, resp, mr = atomic_pair()
    mr.words[0x2008] = 40
    a = req.post(FETCH_ADD, 8, va=0x2008, rkey=5, swap_add=2)
    (ack,) = exchange(req, resp)
    assert ack.opcode == C.RC_ATOMIC_ACK and ack.atomic_ack == 40
    assert a.result == 40 and mr.words[0x2008] == 42 and a.status == rc.WC_SUCCESS
    miss = req.post(CMP_SWAP, 8, va=0x2008, rkey=5, compare=41, swap_add=7)
    exchange(req, resp)
    assert miss.result == 42 and mr.words[0x2008] == 42  # compare failed: unchanged
    hit = req.post(CMP_SWAP, 8, va=0x2008, rkey=5, compare=42, swap_add=7)
    exchange(req, resp)
    assert hit.result == 42 and mr.words[0x2008] == 7
    wrap = req.post(FETCH_ADD, 8, va=0x2010, rkey=5, swap_add=rc.U64)
    exchange(req, resp)
    assert wrap.result == 0 and mr.words[0x2010] == rc.U64
    assert resp.hw.rx_atomic_requests == 4 and req.idle


def test_duplicate_atomic_is_answered_from_the_saved_result_not_re_executed():
    req, resp, mr = atomic_pair(timeout_ns=1000)
    req.post(FETCH_ADD, 8, va=0x2000, rkey=5, swap_add=1)
    (p,) = drain(req, 0)
    resp.on_pdu(p, 0)
    resp.out.clear()  # the ATOMIC ACK is lost
    assert req.check_timeout(1000)
    (again,) = drain(req, 1000)
    (ack,) = resp.on_pdu(again, 1000)
    req.on_pdu(ack, 1000)
    assert mr.words[0x2000] == 1 and ack.atomic_ack == 0 and req.done[0].result == 0
    assert resp.hw.duplicate_request == 1 and resp.hw.rx_atomic_requests == 1


def test_one_atomic_outstanding_by_default():
    req, resp, _ = atomic_pair()
    for _ in range(3):
        req.post(FETCH_ADD, 8, va=0x2000, rkey=5, swap_add=1)
    (first,) = drain(req)
    assert drain(req) == []  # blocked until the ATOMIC ACK
    for r in resp.on_pdu(first, 0):
        req.on_pdu(r, 0)
    req2, _, _ = atomic_pair(max_atomic=2)
    for _ in range(3):
        req2.post(FETCH_ADD, 8, va=0x2000, rkey=5, swap_add=1)
    assert len(drain(req2)) == 2
    for _ in range(2):
        assert len(exchange(req, resp)) == 1
    assert req.idle and [w.result for w in req.done] == [0, 1, 2]


@pytest.mark.parametrize(
    ("va", "rkey", "syndrome", "status"),
    [
        (0x2004, 5, C.AETH_NAK_INVALID_REQUEST, rc.WC_REM_INV_REQ_ERR),  # not 8-byte aligned
        (0x2040, 5, C.AETH_NAK_REMOTE_ACCESS, rc.WC_REM_ACCESS_ERR),  # past the region
        (0x2000, 6, C.AETH_NAK_REMOTE_ACCESS, rc.WC_REM_ACCESS_ERR),  # bad rkey
    ],
)
def test_bad_atomic_is_naked(va, rkey, syndrome, status):
    req, resp, mr = atomic_pair()
    req.post(FETCH_ADD, 8, va=va, rkey=rkey, swap_add=1)
    (nak,) = exchange(req, resp)
    assert nak.aeth[0] == syndrome and req.done[0].status == status and not mr.words


def test_atomic_without_atomic_access_is_refused():
    req = RcRequester(1, 2)
    resp = RcResponder(2, 1, mrs={5: MemoryRegion(0, 64, 5, ACCESS_REMOTE_WRITE)})
    req.post(CMP_SWAP, 8, va=0, rkey=5)
    (nak,) = exchange(req, resp)
    assert nak.aeth[0] == C.AETH_NAK_REMOTE_ACCESS


# -- selective repeat --------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "retransmitted"), [("gbn", 7), ("sr", 1)])
def test_one_loss_costs_one_packet_with_selective_repeat_and_the_tail_with_go_back_n(
    mode, retransmitted
):
    req = RcRequester(1, 2, mtu=100, mode=mode)
    resp = RcResponder(2, 1, mtu=100, ack_every=100, mode=mode)
    req.post(WRITE, 1000)  # PSN 0..9
    replies = exchange(req, resp, lose={3})
    naks = [r for r in replies if r.aeth[0] == C.AETH_NAK_PSN_SEQ_ERROR]
    # go-back-N: one NAK per gap; IRN: a NACK per out-of-order packet, naming it
    assert len(naks) == (1 if mode == "gbn" else 6)
    if mode == "sr":
        assert [n.aeth[1] for n in naks] == [4, 5, 6, 7, 8, 9] and all(n.psn == 3 for n in naks)
    exchange(req, resp)
    assert req.stats.retransmitted_packets == retransmitted
    assert req.idle and resp.stats.bytes_received == 1000 and resp.msn == 1


def test_selective_repeat_recovers_several_losses_and_a_lost_retransmission():
    req = RcRequester(1, 2, mtu=100, mode="sr", timeout_ns=1000)
    resp = RcResponder(2, 1, mtu=100, ack_every=4, mode="sr")
    req.post(WRITE, 2000)  # PSN 0..19
    exchange(req, resp, lose={2, 7, 8, 15})
    exchange(req, resp, now=10, lose={7})  # the resend of 7 is lost too
    assert not req.idle and resp.epsn == 7
    assert req.check_timeout(2000)
    exchange(req, resp, now=2000)
    assert req.idle and resp.stats.bytes_received == 2000
    assert req.stats.retransmitted_packets == 5  # 2, 7, 8, 15, then 7 again


def test_bad_modes_and_limits_are_refused():
    with pytest.raises(ValueError):
        RcRequester(1, 2, mode="tcp")
    with pytest.raises(ValueError):
        RcRequester(1, 2, retry_cnt=8)
    with pytest.raises(ValueError):
        RcResponder(2, 1, min_rnr_timer=32)
    with pytest.raises(ValueError):
        RcRequester(1, 2).post(READ, 10, imm=1)
