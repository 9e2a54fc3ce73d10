"""Drive an RC requester against a responder at the Pdu level (shared by the RC tests)."""

from __future__ import annotations

from controller.hosts.rc import Pdu, RcRequester, RcResponder


def drain(req: RcRequester, now: int = 0) -> list[Pdu]:
    """Every Pdu the requester has to send at `now`."""
    out = []
    while (p := req.next_pdu(now)) is not None:
        out.append(p)
    return out


def exchange(req: RcRequester, resp: RcResponder, now: int = 0, lose=()) -> list[Pdu]:
    """Send what the requester has, deliver it (except PSNs in `lose`), return the replies
    after handing them back to the requester."""
    replies = []
    for p in drain(req, now):
        if p.psn in lose:
            continue
        replies += resp.on_pdu(p, now)
    resp.out.clear()
    for r in replies:
        req.on_pdu(r, now)
    return replies
