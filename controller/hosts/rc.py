"""InfiniBand RC transport state machines (requester and responder) as RoCEv2 NICs run them.

These work on `Pdu` records (the transport fields of one packet); `controller.hosts.host`
turns them into frames with the packet library and back. PSNs are 24-bit on the wire; inside
we keep them unwrapped (absolute ints) and wrap on output.

Requester: splits work requests (SEND / WRITE / READ / FETCH_ADD / CMP_SWAP) into
MTU-sized packets with FIRST/MIDDLE/LAST/ONLY opcodes and consecutive PSNs (a READ request
takes one PSN per expected response packet), keeps at most `window` PSNs outstanding and at
most `max_atomic` atomics, retires work on ACKs, goes back to the NAK'ed PSN on a
PSN-sequence-error NAK (go-back-N), re-issues the rest of a READ when a response is missing,
goes back to the oldest unacknowledged PSN when the retransmit timer expires, waits the RNR
timer an RNR NAK names before resending. `retry_cnt` bounds timeouts and sequence NAKs
without progress, `rnr_retry` the RNR NAKs (7 = forever); exhausted, or any fatal NAK, puts
the QP in the error state with the completion status a verbs user sees (`ibv_wc_status`).

Responder: accepts only the expected PSN; coalesces ACKs (one per `ack_every` packets, and
for every packet with AckReq); on a PSN gap sends one PSN-sequence-error NAK and drops
everything until the expected PSN arrives; re-ACKs duplicates; answers READ requests with
READ RESPONSE packets (AETH on FIRST/LAST/ONLY) and atomics with ATOMIC ACKNOWLEDGE.
SEND and WRITE-with-immediate consume a posted receive WQE and complete on the receiver;
WRITE and READ consume none. No posted receive: RNR NAK. Every RETH/AtomicETH is checked
against the registered memory regions (rkey, range, access): a violation is a remote
access error NAK and the QP goes to the error state.

Selective repeat (`mode="sr"`, after IRN, Mittal et al., SIGCOMM 2018): the responder keeps
out-of-order packets (a bitmap of received PSNs within the window) and NACKs every one of
them with the cumulative PSN and the PSN that triggered it; the requester resends only the
PSNs it infers lost (`reorder_psns`: only those the NACKs have passed by more than that many
PSNs, so a reordering path does not look lossy). IRN's NACK has its own header; here it is a
PSN-sequence-error NAK whose AETH MSN field carries the triggering PSN (both ends of a QP must use the same mode).
READ responses are recovered go-back-N in both modes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass, field

from controller.packets import constants as C

PSN_MASK = 0xFFFFFF
PSN_HALF = 0x800000
U64 = (1 << 64) - 1

SEND, WRITE, READ = "SEND", "WRITE", "READ"
FETCH_ADD, CMP_SWAP = "FETCH_ADD", "CMP_SWAP"
ATOMIC_OPS = {FETCH_ADD: C.RC_FETCH_ADD, CMP_SWAP: C.RC_CMP_SWAP}
_OPS = {  # op -> (FIRST, MIDDLE, LAST, ONLY)
    SEND: (C.RC_SEND_FIRST, C.RC_SEND_MIDDLE, C.RC_SEND_LAST, C.RC_SEND_ONLY),
    WRITE: (C.RC_WRITE_FIRST, C.RC_WRITE_MIDDLE, C.RC_WRITE_LAST, C.RC_WRITE_ONLY),
    READ: (
        C.RC_READ_RESPONSE_FIRST,
        C.RC_READ_RESPONSE_MIDDLE,
        C.RC_READ_RESPONSE_LAST,
        C.RC_READ_RESPONSE_ONLY,
    ),
}
_IMM = {  # op -> (LAST with immediate, ONLY with immediate)
    SEND: (C.RC_SEND_LAST_IMM, C.RC_SEND_ONLY_IMM),
    WRITE: (C.RC_WRITE_LAST_IMM, C.RC_WRITE_ONLY_IMM),
}
SEND_OPCODES = frozenset(list(_OPS[SEND]) + list(_IMM[SEND]))
WRITE_OPCODES = frozenset(list(_OPS[WRITE]) + list(_IMM[WRITE]))
ATOMIC_OPCODES = frozenset(ATOMIC_OPS.values())
REQUEST_OPCODES = SEND_OPCODES | WRITE_OPCODES | ATOMIC_OPCODES | {C.RC_READ_REQUEST}
RESPONSE_OPCODES = frozenset(list(_OPS[READ]) + [C.RC_ACK, C.RC_ATOMIC_ACK])
_MSG_END = frozenset(
    {
        C.RC_SEND_LAST,
        C.RC_SEND_ONLY,
        C.RC_WRITE_LAST,
        C.RC_WRITE_ONLY,
        C.RC_SEND_LAST_IMM,
        C.RC_SEND_ONLY_IMM,
        C.RC_WRITE_LAST_IMM,
        C.RC_WRITE_ONLY_IMM,
    }
)
_MSG_START = frozenset(
    {
        C.RC_SEND_FIRST,
        C.RC_SEND_ONLY,
        C.RC_SEND_ONLY_IMM,
        C.RC_WRITE_FIRST,
        C.RC_WRITE_ONLY,
        C.RC_WRITE_ONLY_IMM,
    }
)
_CONSUMES_RQ_AT_END = frozenset({C.RC_WRITE_LAST_IMM, C.RC_WRITE_ONLY_IMM})

# RNR NAK timer field (IBA vol. 1 table 45; ibv_modify_qp(3) min_rnr_timer): code -> us.
# Code 0 is the longest wait (655.36 ms), not the shortest.
RNR_TIMER_US: tuple[float, ...] = (
    655360,
    10,
    20,
    30,
    40,
    60,
    80,
    120,
    160,
    240,
    320,
    480,
    640,
    960,
    1280,
    1920,
    2560,
    3840,
    5120,
    7680,
    10240,
    15360,
    20480,
    30720,
    40960,
    61440,
    81920,
    122880,
    163840,
    245760,
    327680,
    491520,
)
RNR_RETRY_INFINITE = 7

# Remote access flags (the values of enum ibv_access_flags).
ACCESS_LOCAL_WRITE = 1
ACCESS_REMOTE_WRITE = 2
ACCESS_REMOTE_READ = 4
ACCESS_REMOTE_ATOMIC = 8
ACCESS_ALL = ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC

# Completion status names as ibv_wc_status_str() reports them (enum ibv_wc_status).
WC_SUCCESS = "IBV_WC_SUCCESS"
WC_LOC_LEN_ERR = "IBV_WC_LOC_LEN_ERR"
WC_REM_INV_REQ_ERR = "IBV_WC_REM_INV_REQ_ERR"
WC_REM_ACCESS_ERR = "IBV_WC_REM_ACCESS_ERR"
WC_REM_OP_ERR = "IBV_WC_REM_OP_ERR"
WC_RETRY_EXC_ERR = "IBV_WC_RETRY_EXC_ERR"
WC_RNR_RETRY_EXC_ERR = "IBV_WC_RNR_RETRY_EXC_ERR"
WC_WR_FLUSH_ERR = "IBV_WC_WR_FLUSH_ERR"
_NAK_STATUS = {
    C.AETH_NAK_INVALID_REQUEST: WC_REM_INV_REQ_ERR,
    C.AETH_NAK_REMOTE_ACCESS: WC_REM_ACCESS_ERR,
    C.AETH_NAK_REMOTE_OP: WC_REM_OP_ERR,
}

QPS_RTS, QPS_ERR = "RTS", "ERR"
MODES = ("gbn", "sr")


def rnr_timer_ns(code: int) -> int:
    """The wait an RNR NAK with timer field `code` (0-31) asks for."""
    if not 0 <= code <= 31:
        raise ValueError(f"RNR timer code {code} outside 0-31")
    return int(RNR_TIMER_US[code] * 1000)


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
    imm: int | None = None  # ImmDt
    atomic: tuple[int, int, int, int] | None = None  # AtomicETH (va, rkey, swap/add, compare)
    atomic_ack: int | None = None  # AtomicAckETH: the original value

    @property
    def name(self) -> str:
        return C.RC_OPCODES.get(self.opcode, f"0x{self.opcode:02x}")


def segments(length: int, mtu: int) -> int:
    return max(1, -(-length // mtu))


def opcode_for(op: str, index: int, count: int, imm: bool = False) -> int:
    first, middle, last, only = _OPS[op]
    if count == 1:
        return _IMM[op][1] if imm else only
    if index == 0:
        return first
    if index == count - 1:
        return _IMM[op][0] if imm else last
    return middle


@dataclass
class MemoryRegion:
    """A registered range a remote peer may touch with `rkey`, as `access` allows.
    Only 8-byte words an atomic touched are stored (payload bytes are not modelled)."""

    va: int
    length: int
    rkey: int
    access: int = ACCESS_ALL
    words: dict[int, int] = field(default_factory=dict)

    def allows(self, va: int, length: int, access: int) -> bool:
        return (
            self.access & access == access
            and va >= self.va
            and va + length <= self.va + self.length
        )


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
    imm: int | None = None
    swap_add: int = 0  # atomics: FETCH_ADD's addend or CMP_SWAP's swap value
    compare: int = 0
    result: int | None = None  # atomics: the original value the responder returned
    status: str = WC_SUCCESS


@dataclass
class RecvCompletion:
    """A receive completion: what the remote CPU sees of a SEND or WRITE-with-immediate."""

    wr_id: int
    opcode: int  # of the message's last packet
    byte_len: int
    imm: int | None
    time_ns: int
    status: str = WC_SUCCESS


@dataclass
class RequesterStats:
    packets_sent: int = 0
    bytes_sent: int = 0  # payload bytes including retransmissions
    retransmitted_packets: int = 0
    naks: int = 0
    timeouts: int = 0
    go_back_events: int = 0
    acked_bytes: int = 0  # payload bytes acknowledged (goodput)


@dataclass
class RequesterCounters:
    """The requester's share of the per-QP counters a ConnectX NIC exposes
    (mlx5 hw_counters / `rdma statistic qp`; same names, same 'limit not exceeded' rule)."""

    packet_seq_err: int = 0  # sequence-error NAKs received (retry limit not exceeded)
    local_ack_timeout_err: int = 0  # ACK timer expiries (retry limit not exceeded)
    rnr_nak_retry_err: int = 0  # RNR NAKs received (RNR retry limit not exceeded)
    implied_nak_seq_err: int = 0  # a READ response/ACK beyond a missing READ response
    req_transport_retries_exceeded: int = 0
    req_rnr_retries_exceeded: int = 0
    req_remote_access_errors: int = 0
    req_remote_invalid_request: int = 0
    req_cqe_error: int = 0
    req_cqe_flush_error: int = 0


class RcRequester:
    """The sending half of an RC QP."""

    def __init__(
        self,
        qpn: int,
        dqpn: int,
        mtu: int = 1024,
        window: int = 256,
        timeout_ns: int = 1_000_000,
        start_psn: int = 0,
        ack_req_every: int = 0,
        retry_cnt: int = 7,
        rnr_retry: int = 7,
        mode: str = "gbn",
        max_atomic: int = 1,
        reorder_psns: int = 0,
    ):
        if not 0 <= reorder_psns <= window:
            raise ValueError(f"reorder_psns must be 0..window ({window})")
        if not 0 <= retry_cnt <= 7 or not 0 <= rnr_retry <= 7:
            raise ValueError("retry_cnt and rnr_retry are 3-bit values (0-7)")
        if mode not in MODES:
            raise ValueError(f"transport mode {mode!r} (gbn or sr)")
        if max_atomic < 1:
            raise ValueError("max_atomic must be >= 1")
        self.qpn, self.dqpn, self.mtu = qpn, dqpn, mtu
        self.window = window  # max outstanding PSNs
        self.timeout_ns = timeout_ns
        self.ack_req_every = ack_req_every  # also request an ACK every N packets (0: last only)
        self.retry_cnt, self.rnr_retry, self.mode = retry_cnt, rnr_retry, mode
        self.max_atomic = max_atomic  # outstanding atomics (ibv_qp_attr.max_rd_atomic)
        self.state = QPS_RTS
        self.wrs: list[WorkRequest] = []  # not yet completed, in PSN order
        self.done: list[WorkRequest] = []
        self.next_psn = start_psn  # PSN of the next new or resent packet (absolute)
        self.max_psn = start_psn  # one past the highest PSN ever sent
        self.end_psn = start_psn  # one past the last PSN of posted work
        self.una = start_psn  # oldest unacknowledged PSN
        self.blocked_until = 0  # RNR wait: nothing is sent before this time
        self._cursor = 0  # index in wrs of the request holding next_psn
        self._retries = 0  # timeouts / sequence NAKs since the last progress
        self._rnr_retries = 0
        self.last_progress_ns = 0
        self.stats = RequesterStats()
        self.hw = RequesterCounters()
        self._wr_seq = 0
        # selective repeat
        self.sacked: set[int] = set()
        self._retx: deque[int] = deque()
        self._lost_marked: set[int] = set()
        # selective repeat's reordering window: a PSN is inferred lost only once a NACK
        # reports a PSN more than this far beyond it (0: any NACK past it, as IRN; TCP's
        # dupthresh idea, for paths that reorder, e.g. per-packet spraying); a loss the
        # window hides is resent by the timeout
        self.reorder_psns = reorder_psns

    # -- posting work
    def post(
        self,
        op: str,
        length: int,
        now_ns: int = 0,
        va: int = 0,
        rkey: int = 0,
        imm: int | None = None,
        swap_add: int = 0,
        compare: int = 0,
    ) -> WorkRequest:
        if op not in _OPS and op not in ATOMIC_OPS:
            raise ValueError(
                f"unknown RC operation {op!r} (SEND, WRITE, READ, FETCH_ADD, CMP_SWAP)"
            )
        if length < 0:
            raise ValueError("length must be >= 0")
        if imm is not None and op not in _IMM:
            raise ValueError(f"{op} carries no immediate data (SEND and WRITE do)")
        if op in ATOMIC_OPS:
            length = 8
            if not (0 <= swap_add <= U64 and 0 <= compare <= U64):
                raise ValueError("atomic operands are 64-bit unsigned")
        n = 1 if op in ATOMIC_OPS else segments(length, self.mtu)
        self._wr_seq += 1
        wr = WorkRequest(
            self._wr_seq,
            op,
            length,
            va,
            rkey,
            self.end_psn,
            n,
            now_ns,
            imm=imm,
            swap_add=swap_add,
            compare=compare,
        )
        if self.state == QPS_ERR:  # a QP in error flushes what is posted to it
            wr.status, wr.completed_ns = WC_WR_FLUSH_ERR, now_ns
            self.hw.req_cqe_flush_error += 1
            self.done.append(wr)
            return wr
        self.end_psn += n
        if not self.wrs:
            self.last_progress_ns = now_ns
        self.wrs.append(wr)
        return wr

    # -- transmit side
    def has_work(self) -> bool:
        if self.state == QPS_ERR:
            return False
        return bool(self._retx) or (
            self.next_psn < self.end_psn and self.next_psn - self.una < self.window
        )

    def outstanding(self) -> int:
        return self.max_psn - self.una

    def next_pdu(self, now_ns: int) -> Pdu | None:
        """The next packet to put on the wire, or None (nothing posted, window full,
        waiting out an RNR timer, atomic limit reached, or the QP is in error)."""
        if not self.has_work() or now_ns < self.blocked_until:
            return None
        while self._retx:  # selective repeat: resend what was inferred lost
            psn = self._retx.popleft()
            if psn >= self.una and psn not in self.sacked and psn < self.max_psn:
                wr = self._wr_at(psn)
                if wr.op != READ:
                    self.stats.retransmitted_packets += 1
                    return self._data_pdu(wr, psn, now_ns)
        if not (self.next_psn < self.end_psn and self.next_psn - self.una < self.window):
            return None
        wr = self._wr_at(self.next_psn)
        psn = self.next_psn
        if wr.op in ATOMIC_OPS and psn >= self.max_psn and self._atomics_out() >= self.max_atomic:
            return None
        if self.next_psn < self.max_psn:
            self.stats.retransmitted_packets += 1
        if self.una == self.max_psn:
            self.last_progress_ns = now_ns  # the timer starts with the first outstanding packet
        if wr.op == READ:
            # One request covers the rest of the READ (a re-issue starts mid-way).
            offset = (psn - wr.first_psn) * self.mtu
            pdu = Pdu(
                C.RC_READ_REQUEST,
                self.dqpn,
                psn & PSN_MASK,
                True,
                0,
                (wr.va + offset, wr.rkey, wr.length - offset),
            )
            self.next_psn = wr.first_psn + wr.npkts
            self.max_psn = max(self.max_psn, self.next_psn)
            self.stats.packets_sent += 1
            return pdu
        self.next_psn += 1
        return self._data_pdu(wr, psn, now_ns)

    def _data_pdu(self, wr: WorkRequest, psn: int, now_ns: int) -> Pdu:
        idx = psn - wr.first_psn
        if wr.op in ATOMIC_OPS:
            pdu = Pdu(
                ATOMIC_OPS[wr.op],
                self.dqpn,
                psn & PSN_MASK,
                True,
                atomic=(wr.va, wr.rkey, wr.swap_add, wr.compare),
            )
        else:
            length = min(self.mtu, wr.length - idx * self.mtu)
            last = idx == wr.npkts - 1
            opcode = opcode_for(wr.op, idx, wr.npkts, wr.imm is not None)
            ackreq = last or (self.ack_req_every > 0 and (psn + 1) % self.ack_req_every == 0)
            reth = (wr.va, wr.rkey, wr.length) if wr.op == WRITE and idx == 0 else None
            pdu = Pdu(
                opcode,
                self.dqpn,
                psn & PSN_MASK,
                ackreq,
                length,
                reth,
                imm=wr.imm if last else None,
            )
            self.stats.bytes_sent += length
        if self.una == self.max_psn:
            self.last_progress_ns = now_ns
        self.max_psn = max(self.max_psn, psn + 1)
        self.stats.packets_sent += 1
        return pdu

    def _atomics_out(self) -> int:
        return sum(1 for w in self.wrs if w.op in ATOMIC_OPS and w.first_psn < self.max_psn)

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
        if self.state == QPS_ERR:
            return
        if pdu.opcode == C.RC_ACK:
            syndrome = pdu.aeth[0] if pdu.aeth else 0
            psn = self._abs(pdu.psn)
            kind = syndrome & 0xE0
            if kind == C.AETH_NAK:
                self.stats.naks += 1
                if syndrome == C.AETH_NAK_PSN_SEQ_ERROR:
                    if psn >= self.una:
                        self._on_seq_nak(psn, pdu, now_ns)
                    return  # (a NAK below una is stale: a later ACK already covered it)
                if psn >= self.una:
                    self._ack_through(psn - 1, now_ns)
                    if syndrome == C.AETH_NAK_REMOTE_ACCESS:
                        self.hw.req_remote_access_errors += 1
                    elif syndrome == C.AETH_NAK_INVALID_REQUEST:
                        self.hw.req_remote_invalid_request += 1
                    self._fail(_NAK_STATUS.get(syndrome, WC_REM_OP_ERR), now_ns)
                return
            if kind == C.AETH_RNR_NAK:
                if psn >= self.una:
                    self._on_rnr_nak(psn, syndrome & 0x1F, now_ns)
                return
            self._ack_through(psn, now_ns)
            # An ACK beyond a READ whose responses are missing: they were lost, re-read.
            wr = self.wrs[0] if self.wrs else None
            if wr is not None and wr.op == READ and psn >= wr.first_psn + wr.npkts:
                self.hw.implied_nak_seq_err += 1
                self._go_back(wr.first_psn + wr.read_received)
        elif pdu.opcode == C.RC_ATOMIC_ACK:
            psn = self._abs(pdu.psn)
            wr = next((w for w in self.wrs if w.first_psn == psn and w.op in ATOMIC_OPS), None)
            if wr is not None:
                wr.result = pdu.atomic_ack
                self._ack_through(psn, now_ns)
        elif pdu.opcode in _OPS[READ]:
            self._on_read_response(pdu, now_ns)

    def _on_seq_nak(self, psn: int, pdu: Pdu, now_ns: int) -> None:
        # Everything before the NAK'ed PSN arrived.
        self._ack_through(psn - 1, now_ns)
        if self.mode == "sr":
            # IRN NACK: cumulative PSN + the PSN that arrived out of order (in the MSN field).
            self.hw.packet_seq_err += 1
            sack = psn + ((pdu.aeth[1] - psn) & PSN_MASK) if pdu.aeth else psn
            if sack >= self.una:
                self.sacked.add(sack)
            for p in range(self.una, min(sack - self.reorder_psns, self.max_psn)):
                if p not in self.sacked and p not in self._lost_marked:
                    wr = self._wr_at(p)
                    if wr.op == READ:
                        continue
                    self._lost_marked.add(p)
                    self._retx.append(p)
            return
        if not self._retry(now_ns):
            return
        self.hw.packet_seq_err += 1
        self._go_back(psn)

    def _retry(self, now_ns: int) -> bool:
        """Count one transport retry; False (and the QP fails) when retry_cnt is spent."""
        if self._retries >= self.retry_cnt:
            self.hw.req_transport_retries_exceeded += 1
            self._fail(WC_RETRY_EXC_ERR, now_ns)
            return False
        self._retries += 1
        return True

    def _on_rnr_nak(self, psn: int, code: int, now_ns: int) -> None:
        self._ack_through(psn - 1, now_ns)  # an RNR NAK acknowledges what came before
        if self.rnr_retry != RNR_RETRY_INFINITE and self._rnr_retries >= self.rnr_retry:
            self.hw.req_rnr_retries_exceeded += 1
            self._fail(WC_RNR_RETRY_EXC_ERR, now_ns)
            return
        self._rnr_retries += 1
        self.hw.rnr_nak_retry_err += 1
        self.blocked_until = now_ns + rnr_timer_ns(code)
        self.last_progress_ns = self.blocked_until  # no ACK timeout while we wait
        self._retx.clear()
        self._lost_marked.clear()
        self.next_psn = min(self.next_psn, psn)
        self.stats.go_back_events += 1

    def _fail(self, status: str, now_ns: int) -> None:
        """Error state: the failing request completes with `status`, the rest flush."""
        self.state = QPS_ERR
        for i, wr in enumerate(self.wrs):
            wr.completed_ns = now_ns
            wr.status = status if i == 0 else WC_WR_FLUSH_ERR
            if i == 0:
                self.hw.req_cqe_error += 1
            else:
                self.hw.req_cqe_flush_error += 1
            self.done.append(wr)
        self.wrs.clear()
        self._retx.clear()
        self.next_psn = self.end_psn = self.max_psn = self.una

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
            self._retries = 0
            self._ack_through(wr.first_psn + wr.read_received - 1, now_ns)
        elif psn > expected and self.next_psn > expected and wr.reissued_at != expected:
            # A response is missing: re-issue the READ for the remainder (go-back-N), once
            # per gap -- the rest of the old response stream is still arriving and must not
            # trigger a re-issue per packet (the responder would resend the tail each time).
            self.hw.implied_nak_seq_err += 1
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
            if wr.op in ATOMIC_OPS and wr.result is None:
                limit = min(limit, wr.first_psn)  # only its ATOMIC ACK completes an atomic
                break
        if limit <= self.una:
            return
        old, self.una = self.una, limit
        self._retries = self._rnr_retries = 0  # forward progress
        if self.sacked:
            self.sacked = {p for p in self.sacked if p >= limit}
            self._lost_marked = {p for p in self._lost_marked if p >= limit}
        else:
            self._lost_marked.clear()
        for wr in self.wrs:  # goodput: SEND/WRITE payload newly acknowledged
            if wr.first_psn >= limit:
                break
            if wr.op in _IMM:
                lo = max(old, wr.first_psn) - wr.first_psn
                hi = min(limit, wr.first_psn + wr.npkts) - wr.first_psn
                if hi > lo:
                    self.stats.acked_bytes += min(wr.length, hi * self.mtu) - min(
                        wr.length, lo * self.mtu
                    )
        while self.wrs and self.wrs[0].first_psn + self.wrs[0].npkts <= self.una:
            wr = self.wrs.pop(0)
            wr.completed_ns = now_ns
            self.done.append(wr)
            self._cursor = max(0, self._cursor - 1)
        self.last_progress_ns = max(now_ns, self.last_progress_ns)
        if self.next_psn < self.una:
            self.next_psn = self.una

    def _go_back(self, psn: int) -> None:
        if psn < self.next_psn:
            self.stats.go_back_events += 1
            self.next_psn = psn

    def check_timeout(self, now_ns: int) -> bool:
        """Retransmit timer: no progress for `timeout_ns` with packets outstanding."""
        if self.state == QPS_ERR:
            return False
        if self.max_psn > self.una and now_ns - self.last_progress_ns >= self.timeout_ns:
            self.stats.timeouts += 1
            self.last_progress_ns = now_ns
            if not self._retry(now_ns):
                return True
            self.hw.local_ack_timeout_err += 1
            head = self.wrs[0] if self.wrs else None
            start = self.una
            if head is not None and head.op == READ:
                start = head.first_psn + head.read_received
                head.reissued_at = None  # the timer's re-issue may be repaired by a gap again
            self.stats.go_back_events += 1
            if self.mode == "sr" and (head is None or head.op != READ):
                # resend every PSN not selectively acknowledged
                self._lost_marked = {p for p in range(start, self.max_psn) if p not in self.sacked}
                self._retx = deque(sorted(self._lost_marked))
            else:
                self.next_psn = start
            return True
        return False

    def timer_deadline(self) -> int | None:
        if self.state != QPS_ERR and self.max_psn > self.una:
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


@dataclass
class ResponderCounters:
    """The responder's share of the per-QP NIC counters (mlx5 hw_counters names; the
    two without a ConnectX name say so)."""

    rx_write_requests: int = 0
    rx_read_requests: int = 0
    rx_atomic_requests: int = 0
    out_of_buffer: int = 0  # requests that found no posted receive WQE (RNR NAKs sent)
    out_of_sequence: int = 0
    duplicate_request: int = 0
    resp_remote_access_errors: int = 0
    resp_local_length_error: int = 0
    resp_cqe_error: int = 0
    rnr_naks_sent: int = 0  # rxe's "send_rnr_err"; mlx5 counts these in out_of_buffer
    recv_completions: int = 0  # no NIC counter: the receive CQEs the remote CPU reaps


_ATOMIC_CACHE = 16  # responses kept to answer duplicate atomics without re-executing them


class RcResponder:
    """The receiving half of an RC QP. Everything it sends (ACK, NAK, READ responses) goes
    to `out` in order, so an ACK never overtakes the READ data before it.

    `rq_depth`: receive WQEs posted up front (each of `recv_size` bytes); None models an
    application that keeps its receive queue full (a WQE is always there). `mrs` are the
    memory regions remote requests may touch, by rkey (shared by the host's QPs)."""

    def __init__(
        self,
        qpn: int,
        dqpn: int,
        mtu: int = 1024,
        ack_every: int = 16,
        start_psn: int = 0,
        rq_depth: int | None = 0,
        recv_size: int = 1 << 30,
        min_rnr_timer: int = 12,
        mrs: dict[int, MemoryRegion] | None = None,
        mode: str = "gbn",
        window: int = 256,
    ):
        if not 0 <= min_rnr_timer <= 31:
            raise ValueError(f"min_rnr_timer {min_rnr_timer} outside 0-31")
        if mode not in MODES:
            raise ValueError(f"transport mode {mode!r} (gbn or sr)")
        self.qpn, self.dqpn, self.mtu = qpn, dqpn, mtu
        self.ack_every = ack_every
        self.epsn = start_psn  # expected PSN (absolute)
        self.msn = 0
        self.nak_pending = False  # a NAK (sequence or RNR) was sent for the current gap
        self._since_ack = 0
        self.out: deque[Pdu] = deque()
        self.stats = ResponderStats()
        self.hw = ResponderCounters()
        self.state = QPS_RTS
        self.mode, self.window = mode, window
        self.min_rnr_timer = min_rnr_timer
        self.mrs: dict[int, MemoryRegion] = {0: MemoryRegion(0, 1 << 64, 0)} if mrs is None else mrs
        self.rq_unlimited = rq_depth is None
        self.rq: deque[tuple[int, int]] = deque()  # (wr_id, size)
        self._recv_seq = 0
        self.post_recv(recv_size, rq_depth or 0)
        self.recv_completions: deque[RecvCompletion] = deque(maxlen=4096)  # the recent ones
        self._recv_wqe: tuple[int, int] | None = None  # the WQE the current SEND fills
        self._recv_bytes = 0
        self._atomic_done: dict[int, tuple[int, int]] = {}  # psn -> (original, msn)
        self._ooo: dict[int, Pdu] = {}  # selective repeat: received beyond epsn
        self._now = 0
        self.messages: list[tuple[int, int]] = []  # (opcode of the last packet, time)

    def post_recv(self, size: int, count: int = 1) -> None:
        """Post `count` receive WQEs of `size` bytes each."""
        if size < 0 or count < 0:
            raise ValueError("receive size and count must be >= 0")
        for _ in range(count):
            self._recv_seq += 1
            self.rq.append((self._recv_seq, size))

    def _abs(self, psn24: int) -> int:
        return self.epsn + psn_diff(psn24, self.epsn & PSN_MASK)

    def _ack(self, psn: int) -> Pdu:
        self.stats.acks_sent += 1
        self._since_ack = 0
        return Pdu(
            C.RC_ACK,
            self.dqpn,
            psn & PSN_MASK,
            False,
            0,
            None,
            (C.AETH_ACK_NO_CREDIT, self.msn & PSN_MASK),
        )

    def _nak(self, syndrome: int, psn: int, msn: int | None = None) -> None:
        self.stats.naks_sent += 1
        self.out.append(
            Pdu(
                C.RC_ACK,
                self.dqpn,
                psn & PSN_MASK,
                False,
                0,
                None,
                (syndrome, (self.msn if msn is None else msn) & PSN_MASK),
            )
        )

    def on_pdu(self, pdu: Pdu, now_ns: int) -> list[Pdu]:
        """Handle one request packet; returns what it queued on `out`."""
        before = len(self.out)
        self._now = now_ns
        self._handle(pdu)
        return list(self.out)[before:]

    def _handle(self, pdu: Pdu) -> None:
        self.stats.packets_received += 1
        if pdu.ce:
            self.stats.ce_marked += 1
        if self.state == QPS_ERR:
            return  # a QP in error answers nothing
        psn = self._abs(pdu.psn)
        if psn < self.epsn:
            self.stats.duplicates += 1
            self.hw.duplicate_request += 1
            if pdu.opcode == C.RC_READ_REQUEST:
                self._answer_read(pdu, psn)  # READs are idempotent: answer again
            elif pdu.opcode in ATOMIC_OPCODES:
                if psn in self._atomic_done:  # never execute an atomic twice
                    orig, msn = self._atomic_done[psn]
                    self._atomic_ack(psn, orig, msn)
            elif pdu.ackreq or self._since_ack == 0:
                # Our ACK was lost or the requester went back: tell it where we are.
                self.out.append(self._ack(self.epsn - 1))
            return
        if psn > self.epsn:
            self.stats.out_of_order += 1
            self.hw.out_of_sequence += 1
            if (
                self.mode == "sr"
                and not self.nak_pending
                and psn - self.epsn < self.window
                and pdu.opcode in SEND_OPCODES | WRITE_OPCODES
            ):
                if psn in self._ooo:
                    self.stats.duplicates += 1
                self._ooo[psn] = pdu
                self._nak(C.AETH_NAK_PSN_SEQ_ERROR, self.epsn, psn)  # IRN NACK, every time
                return
            if not self.nak_pending:  # one NAK per gap
                self.nak_pending = True
                self._nak(C.AETH_NAK_PSN_SEQ_ERROR, self.epsn)
            return
        self.nak_pending = False
        if not self._accept(pdu, psn):
            return
        if self._ooo:  # selective repeat: the hole is filled, deliver what waited behind it
            while self.state == QPS_RTS and self.epsn in self._ooo:
                nxt = self._ooo.pop(self.epsn)
                if not self._accept(nxt, self.epsn):
                    break
            if self.state == QPS_RTS and not self.nak_pending and self._since_ack:
                self.out.append(self._ack(self.epsn - 1))

    def _accept(self, pdu: Pdu, psn: int) -> bool:
        """Execute the in-order request at `psn`; False when it was refused (NAK sent)."""
        op = pdu.opcode
        if op == C.RC_READ_REQUEST:
            va, rkey, length = pdu.reth or (0, 0, 0)
            if not self._check(rkey, va, length, ACCESS_REMOTE_READ, psn):
                return False
            self.hw.rx_read_requests += 1
            self.msn += 1
            self.epsn += self._answer_read(pdu, psn)
            self.stats.messages += 1
            self._since_ack = 0
            return True
        if op in ATOMIC_OPCODES:
            return self._atomic(pdu, psn)
        # rxe's order: receive resources (RNR) first, then the rkey.
        needs_wqe = (op in SEND_OPCODES and op in _MSG_START) or op in _CONSUMES_RQ_AT_END
        if needs_wqe and not self.rq_unlimited and not self.rq:
            self._rnr(psn)
            return False
        if op in WRITE_OPCODES and op in _MSG_START:
            va, rkey, length = pdu.reth or (0, 0, 0)
            if not self._check(rkey, va, length, ACCESS_REMOTE_WRITE, psn):
                return False
            self.hw.rx_write_requests += 1
        if op in SEND_OPCODES:
            if op in _MSG_START:
                self._recv_wqe = self.rq.popleft() if not self.rq_unlimited else (0, 1 << 62)
                self._recv_bytes = 0
            self._recv_bytes += pdu.payload_len
            if self._recv_wqe is not None and self._recv_bytes > self._recv_wqe[1]:
                # The message does not fit the posted buffer: a local length error here,
                # an invalid-request NAK for the requester, both QPs to error.
                self.hw.resp_local_length_error += 1
                self.hw.resp_cqe_error += 1
                self.recv_completions.append(
                    RecvCompletion(
                        self._recv_wqe[0], op, self._recv_bytes, None, self._now, WC_LOC_LEN_ERR
                    )
                )
                self._nak(C.AETH_NAK_INVALID_REQUEST, psn)
                self.state = QPS_ERR
                return False
        self.epsn += 1
        self.stats.bytes_received += pdu.payload_len
        self._since_ack += 1
        if op in _MSG_END:
            self.msn += 1
            self.stats.messages += 1
            if op in SEND_OPCODES:
                wqe = self._recv_wqe or (0, 0)
                self._complete(wqe[0], op, self._recv_bytes, pdu.imm)
                self._recv_wqe = None
            elif op in _CONSUMES_RQ_AT_END:
                wqe = self.rq.popleft() if not self.rq_unlimited else (0, 0)
                self._complete(wqe[0], op, 0, pdu.imm)  # WRITE's data is not in the buffer
        if pdu.ackreq or self._since_ack >= self.ack_every:
            self.out.append(self._ack(psn))
        return True

    def _complete(self, wr_id: int, opcode: int, byte_len: int, imm: int | None) -> None:
        self.hw.recv_completions += 1
        self.recv_completions.append(RecvCompletion(wr_id, opcode, byte_len, imm, self._now))

    def _rnr(self, psn: int) -> None:
        self.hw.out_of_buffer += 1
        self.hw.rnr_naks_sent += 1
        self.nak_pending = True  # drop what follows until the requester comes back
        self._ooo.clear()
        self._nak(C.AETH_RNR_NAK | self.min_rnr_timer, psn)

    def _check(self, rkey: int, va: int, length: int, access: int, psn: int) -> bool:
        mr = self.mrs.get(rkey)
        if mr is None or not mr.allows(va, length, access):
            self.hw.resp_remote_access_errors += 1
            self._nak(C.AETH_NAK_REMOTE_ACCESS, psn)
            self.state = QPS_ERR
            return False
        return True

    def _atomic(self, pdu: Pdu, psn: int) -> bool:
        va, rkey, swap_add, compare = pdu.atomic or (0, 0, 0, 0)
        if va % 8:
            self._nak(C.AETH_NAK_INVALID_REQUEST, psn)  # atomics need 8-byte alignment
            self.state = QPS_ERR
            return False
        if not self._check(rkey, va, 8, ACCESS_REMOTE_ATOMIC, psn):
            return False
        self.hw.rx_atomic_requests += 1
        mr = self.mrs[rkey]
        orig = mr.words.get(va, 0)
        if pdu.opcode == C.RC_FETCH_ADD:
            mr.words[va] = (orig + swap_add) & U64
        elif orig == compare:
            mr.words[va] = swap_add
        self.epsn += 1
        self.msn += 1
        self.stats.messages += 1
        self._atomic_done[psn] = (orig, self.msn)
        if len(self._atomic_done) > _ATOMIC_CACHE:
            del self._atomic_done[min(self._atomic_done)]
        self._atomic_ack(psn, orig, self.msn)
        self._since_ack = 0
        return True

    def _atomic_ack(self, psn: int, orig: int, msn: int) -> None:
        self.stats.acks_sent += 1
        self.out.append(
            Pdu(
                C.RC_ATOMIC_ACK,
                self.dqpn,
                psn & PSN_MASK,
                False,
                0,
                None,
                (C.AETH_ACK_NO_CREDIT, msn & PSN_MASK),
                atomic_ack=orig,
            )
        )

    def _answer_read(self, pdu: Pdu, psn: int) -> int:
        _va, _rkey, length = pdu.reth or (0, 0, 0)
        n = segments(length, self.mtu)
        for i in range(n):
            opcode = opcode_for(READ, i, n)
            aeth = (
                None
                if opcode == C.RC_READ_RESPONSE_MIDDLE
                else (C.AETH_ACK_NO_CREDIT, self.msn & PSN_MASK)
            )
            self.out.append(
                Pdu(
                    opcode,
                    self.dqpn,
                    (psn + i) & PSN_MASK,
                    False,
                    max(0, min(self.mtu, length - i * self.mtu)),
                    None,
                    aeth,
                )
            )
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

    @property
    def state(self) -> str:
        if QPS_ERR in (self.requester.state, self.responder.state):
            return QPS_ERR
        return QPS_RTS

    def counters(self) -> dict[str, int]:
        """Both halves' NIC counters by name (the host adds its CNP counters)."""
        return {**asdict(self.requester.hw), **asdict(self.responder.hw)}
