"""InfiniBand RC transport state machines (requester and responder) as RoCEv2 NICs run them.

These work on `Pdu` records (the transport fields of one packet); `controller.hosts.host`
turns them into frames with the packet library and back. PSNs are 24-bit on the wire; inside
we keep them unwrapped (absolute ints) and wrap on output.

Requester: splits work requests (SEND / WRITE / READ) into MTU-sized packets with
FIRST/MIDDLE/LAST/ONLY opcodes and consecutive PSNs (a READ request takes one PSN per
expected response packet), keeps at most `window` PSNs outstanding, retires work on ACKs,
goes back to the NAK'ed PSN on a PSN-sequence-error NAK (go-back-N), re-issues the rest
of a READ when a response is missing, and goes back to the oldest unacknowledged PSN when
the retransmit timer expires without progress.

Responder: accepts only the expected PSN; coalesces ACKs (one per `ack_every` packets, and
for every packet with AckReq); on a PSN gap sends one PSN-sequence-error NAK and drops
everything until the expected PSN arrives; re-ACKs duplicates; answers READ requests with
READ RESPONSE packets (AETH on FIRST/LAST/ONLY).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from controller.packets import constants as C

PSN_MASK = 0xFFFFFF
PSN_HALF = 0x800000

SEND, WRITE, READ = "SEND", "WRITE", "READ"
_OPS = {  # op -> (FIRST, MIDDLE, LAST, ONLY)
    SEND: (C.RC_SEND_FIRST, C.RC_SEND_MIDDLE, C.RC_SEND_LAST, C.RC_SEND_ONLY),
    WRITE: (C.RC_WRITE_FIRST, C.RC_WRITE_MIDDLE, C.RC_WRITE_LAST, C.RC_WRITE_ONLY),
    READ: (C.RC_READ_RESPONSE_FIRST, C.RC_READ_RESPONSE_MIDDLE, C.RC_READ_RESPONSE_LAST,
           C.RC_READ_RESPONSE_ONLY),
}
REQUEST_OPCODES = frozenset(list(_OPS[SEND]) + list(_OPS[WRITE]) + [C.RC_READ_REQUEST])
RESPONSE_OPCODES = frozenset(list(_OPS[READ]) + [C.RC_ACK])
_MSG_END = frozenset({C.RC_SEND_LAST, C.RC_SEND_ONLY, C.RC_WRITE_LAST, C.RC_WRITE_ONLY,
                      C.RC_SEND_LAST_IMM, C.RC_SEND_ONLY_IMM, C.RC_WRITE_LAST_IMM,
                      C.RC_WRITE_ONLY_IMM})


def psn_diff(a: int, b: int) -> int:
    """Signed distance a - b of two 24-bit PSNs (as the IBA serial-number compare)."""
    d = (a - b) & PSN_MASK
    return d - (1 << 24) if d >= PSN_HALF else d


@dataclass(slots=True)
class Pdu:
    """The transport fields of one RoCE packet (what the QPs produce and consume)."""

    opcode: int
    dqpn: int
    psn: int  # 24-bit on the wire
    ackreq: bool = False
    payload_len: int = 0
    reth: tuple[int, int, int] | None = None  # (va, rkey, dma length)
    aeth: tuple[int, int] | None = None  # (syndrome, msn)
    ce: bool = False  # arrived with IP ECN = CE (receive side)
    becn: bool = False

    @property
    def name(self) -> str:
        return C.RC_OPCODES.get(self.opcode, f"0x{self.opcode:02x}")


def segments(length: int, mtu: int) -> int:
    return max(1, -(-length // mtu))


def opcode_for(op: str, index: int, count: int) -> int:
    first, middle, last, only = _OPS[op]
    if count == 1:
        return only
    if index == 0:
        return first
    return last if index == count - 1 else middle


@dataclass
class WorkRequest:
    wr_id: int
    op: str
    length: int
    va: int = 0
    rkey: int = 0
    first_psn: int = 0  # absolute
    npkts: int = 1  # PSNs this request consumes
    posted_ns: int = 0
    completed_ns: int | None = None
    read_received: int = 0  # READ: response packets received in order
    reissued_at: int | None = None  # READ: the missing PSN a re-issue was already sent for


@dataclass
class RequesterStats:
    packets_sent: int = 0
    bytes_sent: int = 0  # payload bytes including retransmissions
    retransmitted_packets: int = 0
    naks: int = 0
    timeouts: int = 0
    go_back_events: int = 0
    acked_bytes: int = 0  # payload bytes acknowledged (goodput)


class RcRequester:
    """The sending half of an RC QP."""

    def __init__(self, qpn: int, dqpn: int, mtu: int = 1024, window: int = 256,
                 timeout_ns: int = 1_000_000, start_psn: int = 0, ack_req_every: int = 0):
        self.qpn, self.dqpn, self.mtu = qpn, dqpn, mtu
        self.window = window  # max outstanding PSNs
        self.timeout_ns = timeout_ns
        self.ack_req_every = ack_req_every  # also request an ACK every N packets (0: last only)
        self.wrs: list[WorkRequest] = []  # not yet completed, in PSN order
        self.done: list[WorkRequest] = []
        self.next_psn = start_psn  # PSN of the next new or resent packet (absolute)
        self.max_psn = start_psn  # one past the highest PSN ever sent
        self.end_psn = start_psn  # one past the last PSN of posted work
        self.una = start_psn  # oldest unacknowledged PSN
        self._cursor = 0  # index in wrs of the request holding next_psn
        self.last_progress_ns = 0
        self.stats = RequesterStats()
        self._wr_seq = 0

    # -- posting work
    def post(self, op: str, length: int, now_ns: int = 0, va: int = 0, rkey: int = 0) -> WorkRequest:
        if op not in _OPS:
            raise ValueError(f"unknown RC operation {op!r} (SEND, WRITE, READ)")
        if length < 0:
            raise ValueError("length must be >= 0")
        n = segments(length, self.mtu)
        self._wr_seq += 1
        wr = WorkRequest(self._wr_seq, op, length, va, rkey, self.end_psn, n, now_ns)
        self.end_psn += n
        if not self.wrs:
            self.last_progress_ns = now_ns
        self.wrs.append(wr)
        return wr

    # -- transmit side
    def has_work(self) -> bool:
        return self.next_psn < self.end_psn and self.next_psn - self.una < self.window

    def outstanding(self) -> int:
        return self.max_psn - self.una

    def next_pdu(self, now_ns: int) -> Pdu | None:
        """The next packet to put on the wire, or None (nothing posted or window full)."""
        if not self.has_work():
            return None
        wr = self._wr_at(self.next_psn)
        psn = self.next_psn
        idx = psn - wr.first_psn
        if self.next_psn < self.max_psn:
            self.stats.retransmitted_packets += 1
        if self.una == self.max_psn:
            self.last_progress_ns = now_ns  # the timer starts with the first outstanding packet
        if wr.op == READ:
            # One request covers the rest of the READ (a re-issue starts mid-way).
            offset = idx * self.mtu
            pdu = Pdu(C.RC_READ_REQUEST, self.dqpn, psn & PSN_MASK, True, 0,
                      (wr.va + offset, wr.rkey, wr.length - offset))
            self.next_psn = wr.first_psn + wr.npkts
        else:
            length = min(self.mtu, wr.length - idx * self.mtu)
            opcode = opcode_for(wr.op, idx, wr.npkts)
            last = idx == wr.npkts - 1
            ackreq = last or (self.ack_req_every > 0 and (psn + 1) % self.ack_req_every == 0)
            reth = (wr.va, wr.rkey, wr.length) if wr.op == WRITE and idx == 0 else None
            pdu = Pdu(opcode, self.dqpn, psn & PSN_MASK, ackreq, length, reth)
            self.next_psn += 1
            self.stats.bytes_sent += length
        self.max_psn = max(self.max_psn, self.next_psn)
        self.stats.packets_sent += 1
        return pdu

    def _wr_at(self, psn: int) -> WorkRequest:
        wrs = self.wrs
        i = min(self._cursor, len(wrs) - 1)
        while i > 0 and wrs[i].first_psn > psn:
            i -= 1
        while wrs[i].first_psn + wrs[i].npkts <= psn:
            i += 1
        self._cursor = i
        return wrs[i]

    # -- receive side
    def _abs(self, psn24: int) -> int:
        return self.una + psn_diff(psn24, self.una & PSN_MASK)

    def on_pdu(self, pdu: Pdu, now_ns: int) -> None:
        if pdu.opcode == C.RC_ACK:
            syndrome = pdu.aeth[0] if pdu.aeth else 0
            psn = self._abs(pdu.psn)
            if syndrome & 0xE0 == C.AETH_NAK:
                self.stats.naks += 1
                if syndrome == C.AETH_NAK_PSN_SEQ_ERROR and psn >= self.una:
                    # Everything before the NAK'ed PSN arrived; resend from it. (A NAK
                    # below una is stale: a later ACK already covered it.)
                    self._ack_through(psn - 1, now_ns)
                    self._go_back(psn)
                return
            if syndrome & 0xE0 == C.AETH_RNR_NAK:
                return
            self._ack_through(psn, now_ns)
            # An ACK beyond a READ whose responses are missing: they were lost, re-read.
            wr = self.wrs[0] if self.wrs else None
            if wr is not None and wr.op == READ and psn >= wr.first_psn + wr.npkts:
                self._go_back(wr.first_psn + wr.read_received)
        elif pdu.opcode in _OPS[READ]:
            self._on_read_response(pdu, now_ns)

    def _on_read_response(self, pdu: Pdu, now_ns: int) -> None:
        psn = self._abs(pdu.psn)
        wr = next((w for w in self.wrs if w.first_psn <= psn < w.first_psn + w.npkts), None)
        if wr is None or wr.op != READ:
            return  # stale duplicate response
        # Everything before this READ is implicitly acknowledged by its response.
        self._ack_through(wr.first_psn - 1, now_ns)
        expected = wr.first_psn + wr.read_received
        if psn == expected:
            wr.read_received += 1
            self.stats.acked_bytes += pdu.payload_len
            self.last_progress_ns = now_ns
            self._ack_through(wr.first_psn + wr.read_received - 1, now_ns)
        elif psn > expected and self.next_psn > expected and wr.reissued_at != expected:
            # A response is missing: re-issue the READ for the remainder (go-back-N), once
            # per gap -- the rest of the old response stream is still arriving and must not
            # trigger a re-issue per packet (the responder would resend the tail each time).
            wr.reissued_at = expected
            self._go_back(expected)

    def _ack_through(self, psn: int, now_ns: int) -> None:
        """Every PSN up to and including `psn` is acknowledged (a READ only as far as its
        responses arrived)."""
        limit = min(psn, self.max_psn - 1) + 1
        if limit <= self.una:
            return
        for wr in self.wrs:
            if wr.first_psn >= limit:
                break
            if wr.op == READ and wr.read_received < wr.npkts:
                limit = min(limit, wr.first_psn + wr.read_received)
                break
        if limit <= self.una:
            return
        old, self.una = self.una, limit
        for wr in self.wrs:  # goodput: SEND/WRITE payload newly acknowledged
            if wr.first_psn >= limit:
                break
            if wr.op != READ:
                lo = max(old, wr.first_psn) - wr.first_psn
                hi = min(limit, wr.first_psn + wr.npkts) - wr.first_psn
                if hi > lo:
                    self.stats.acked_bytes += (min(wr.length, hi * self.mtu)
                                               - min(wr.length, lo * self.mtu))
        while self.wrs and self.wrs[0].first_psn + self.wrs[0].npkts <= self.una:
            wr = self.wrs.pop(0)
            wr.completed_ns = now_ns
            self.done.append(wr)
            self._cursor = max(0, self._cursor - 1)
        self.last_progress_ns = now_ns
        if self.next_psn < self.una:
            self.next_psn = self.una

    def _go_back(self, psn: int) -> None:
        if psn < self.next_psn:
            self.stats.go_back_events += 1
            self.next_psn = psn

    def check_timeout(self, now_ns: int) -> bool:
        """Retransmit timer: no progress for `timeout_ns` with packets outstanding."""
        if self.max_psn > self.una and now_ns - self.last_progress_ns >= self.timeout_ns:
            self.stats.timeouts += 1
            self.last_progress_ns = now_ns
            head = self.wrs[0] if self.wrs else None
            start = self.una
            if head is not None and head.op == READ:
                start = head.first_psn + head.read_received
                head.reissued_at = None  # the timer's re-issue may be repaired by a gap again
            self.stats.go_back_events += 1
            self.next_psn = start
            return True
        return False

    def timer_deadline(self) -> int | None:
        if self.max_psn > self.una:
            return self.last_progress_ns + self.timeout_ns
        return None

    @property
    def idle(self) -> bool:
        return not self.wrs


@dataclass
class ResponderStats:
    packets_received: int = 0
    bytes_received: int = 0  # in-order payload bytes (goodput)
    duplicates: int = 0
    out_of_order: int = 0
    acks_sent: int = 0
    naks_sent: int = 0
    messages: int = 0
    read_responses: int = 0
    ce_marked: int = 0


class RcResponder:
    """The receiving half of an RC QP. Everything it sends (ACK, NAK, READ responses) goes
    to `out` in order, so an ACK never overtakes the READ data before it."""

    def __init__(self, qpn: int, dqpn: int, mtu: int = 1024, ack_every: int = 16,
                 start_psn: int = 0):
        self.qpn, self.dqpn, self.mtu = qpn, dqpn, mtu
        self.ack_every = ack_every
        self.epsn = start_psn  # expected PSN (absolute)
        self.msn = 0
        self.nak_pending = False  # a NAK was sent for the current gap
        self._since_ack = 0
        self.out: deque[Pdu] = deque()
        self.stats = ResponderStats()
        self.messages: list[tuple[int, int]] = []  # (opcode of the last packet, time)

    def _abs(self, psn24: int) -> int:
        return self.epsn + psn_diff(psn24, self.epsn & PSN_MASK)

    def _ack(self, psn: int) -> Pdu:
        self.stats.acks_sent += 1
        self._since_ack = 0
        return Pdu(C.RC_ACK, self.dqpn, psn & PSN_MASK, False, 0, None,
                   (C.AETH_ACK_NO_CREDIT, self.msn & PSN_MASK))

    def on_pdu(self, pdu: Pdu, now_ns: int) -> list[Pdu]:
        """Handle one request packet; returns what it queued on `out`."""
        before = len(self.out)
        self._handle(pdu)
        return list(self.out)[before:]

    def _handle(self, pdu: Pdu) -> None:
        self.stats.packets_received += 1
        if pdu.ce:
            self.stats.ce_marked += 1
        psn = self._abs(pdu.psn)
        if psn < self.epsn:
            self.stats.duplicates += 1
            if pdu.opcode == C.RC_READ_REQUEST:
                self._answer_read(pdu, psn)  # READs are idempotent: answer again
            elif pdu.ackreq or self._since_ack == 0:
                # Our ACK was lost or the requester went back: tell it where we are.
                self.out.append(self._ack(self.epsn - 1))
            return
        if psn > self.epsn:
            self.stats.out_of_order += 1
            if not self.nak_pending:  # one NAK per gap
                self.nak_pending = True
                self.stats.naks_sent += 1
                self.out.append(Pdu(C.RC_ACK, self.dqpn, self.epsn & PSN_MASK, False, 0, None,
                                    (C.AETH_NAK_PSN_SEQ_ERROR, self.msn & PSN_MASK)))
            return
        self.nak_pending = False
        if pdu.opcode == C.RC_READ_REQUEST:
            self.msn += 1
            self.epsn += self._answer_read(pdu, psn)
            self.stats.messages += 1
            self._since_ack = 0
            return
        self.epsn += 1
        self.stats.bytes_received += pdu.payload_len
        self._since_ack += 1
        if pdu.opcode in _MSG_END:
            self.msn += 1
            self.stats.messages += 1
        if pdu.ackreq or self._since_ack >= self.ack_every:
            self.out.append(self._ack(psn))

    def _answer_read(self, pdu: Pdu, psn: int) -> int:
        _va, _rkey, length = pdu.reth or (0, 0, 0)
        n = segments(length, self.mtu)
        for i in range(n):
            opcode = opcode_for(READ, i, n)
            aeth = (None if opcode == C.RC_READ_RESPONSE_MIDDLE
                    else (C.AETH_ACK_NO_CREDIT, self.msn & PSN_MASK))
            self.out.append(Pdu(opcode, self.dqpn, (psn + i) & PSN_MASK, False,
                                max(0, min(self.mtu, length - i * self.mtu)), None, aeth))
        self.stats.read_responses += n
        return n


@dataclass
class QueuePair:
    """One RC QP: both halves plus its peer's addressing (filled by the host)."""

    qpn: int
    dqpn: int
    requester: RcRequester
    responder: RcResponder
    peer: str = ""  # peer host name
    priority: int = 3  # traffic class of its data
    extra: dict = field(default_factory=dict)
