"""Selective repeat's reordering window (RcRequester.reorder_psns), at the Pdu level: a
reordered packet is not resent; a real loss still is, by NACK or, within the window's
tail, by the timeout."""

from __future__ import annotations

import pytest

from controller.hosts.rc import Pdu, RcRequester, RcResponder


def _sent(req: RcRequester, now: int) -> list[Pdu]:
    out = []
    while (p := req.next_pdu(now)) is not None:
        out.append(p)
    return out


def _deliver(
    req: RcRequester, resp: RcResponder, order: list[int] | None = None, now: int = 0
) -> list[int]:
    """Send what the requester has, deliver the PSNs in `order` (the rest are lost; None:
    all, as sent), hand the replies back; the PSNs sent."""
    pdus = {p.psn: p for p in _sent(req, now)}
    replies = []
    for psn in list(pdus) if order is None else order:
        replies += resp.on_pdu(pdus[psn], now)
    resp.out.clear()
    for r in replies:
        req.on_pdu(r, now)
    return list(pdus)


@pytest.mark.parametrize(("window", "resent"), [(0, [1]), (4, [])])
def test_a_late_packet_is_resent_only_without_a_reordering_window(window, resent):
    """PSN 1 arrives three places late (behind 2, 3, 4): IRN's rule (window 0) takes it for
    lost at the first NACK and resends it (a spurious retransmission); a window of 4 PSNs
    does not."""
    req = RcRequester(1, 2, mtu=100, mode="sr", reorder_psns=window)
    resp = RcResponder(2, 1, mtu=100, ack_every=100, mode="sr")
    req.post("WRITE", 1000)  # PSN 0..9
    pdus = _sent(req, 0)
    for psn in (0, 2, 3, 4):  # 1 is still on the longer path
        for r in resp.on_pdu(pdus[psn], 0):
            req.on_pdu(r, 0)
    again = _sent(req, 0)
    assert [p.psn for p in again] == resent
    for p in [pdus[1], *pdus[5:], *again]:
        for r in resp.on_pdu(p, 0):
            req.on_pdu(r, 0)
    assert req.stats.retransmitted_packets == len(resent)
    assert resp.stats.bytes_received == 1000 and req.idle


def test_a_real_loss_is_still_resent_by_nack_or_timeout():
    req = RcRequester(1, 2, mtu=100, mode="sr", reorder_psns=4, timeout_ns=1000)
    resp = RcResponder(2, 1, mtu=100, ack_every=100, mode="sr")
    req.post("WRITE", 1000)  # PSN 0..9
    # 3 lost: the NACK for 9 passes it by 6 > 4 PSNs; 8 lost: only 9 passes it (1 <= 4)
    _deliver(req, resp, [0, 1, 2, 4, 5, 6, 7, 9])
    assert _deliver(req, resp, now=1) == [3]  # 8 waits for the timer
    assert resp.epsn == 8 and not req.idle
    assert not req.check_timeout(500)
    assert req.check_timeout(2000)  # the timer resends what no NACK passed far enough
    assert 8 in _deliver(req, resp, now=2000)
    assert resp.stats.bytes_received == 1000 and req.idle


def test_reorder_window_is_bounded_by_the_send_window():
    with pytest.raises(ValueError):
        RcRequester(1, 2, window=16, mode="sr", reorder_psns=17)
    with pytest.raises(ValueError):
        RcRequester(1, 2, mode="sr", reorder_psns=-1)
