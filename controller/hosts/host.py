"""A RoCE host (v2 by default, v1 on request): a NIC with RC QPs, the DCQCN NP and RP, PFC reception, one link.

Frames are real bytes from the packet library (`controller.packets.build`) and are decoded
with its decoder; nothing here knows what is on the other end of the link (a p4sim port,
a P4Runtime target's PacketOut, an AF_PACKET socket: see `controller.hosts.inject`).

NIC egress model: one frame on the wire at a time at the link speed. The scheduler serves,
in order, CNPs, then responder traffic (ACK/NAK/READ responses, in QP order, round robin),
then requester data round robin over QPs whose DCQCN rate limiter allows a packet
(`next_tx = start + wire_bits / R_C`) and whose priority is not paused by PFC.
Time is integer ns from the `Clock` the host is given (virtual in scenarios).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from controller.packets import Decoded, decode
from controller.packets import constants as C
from controller.packets.build import PsnTemplate, cnp_frame, psn_template
from controller.packets.decode import rocev2_fast

from .dcqcn import DcqcnParams, NotificationPoint, ReactionPoint
from .rc import (
    ACCESS_ALL,
    REQUEST_OPCODES,
    MemoryRegion,
    Pdu,
    QueuePair,
    RcRequester,
    RcResponder,
)

ETH_OVERHEAD = 24  # preamble + SFD (8) + FCS (4) + inter-frame gap (12): wire bytes per frame
PAUSE_QUANTUM_BITS = 512
UDP_LEN = 8


def wire_bits(frame_len: int) -> int:
    """Bits a frame occupies on the wire (frames here carry no FCS)."""
    return (frame_len + ETH_OVERHEAD) * 8


def tx_ns(frame_len: int, bps: float) -> int:
    return -(-wire_bits(frame_len) * 1_000_000_000 // int(bps))


class Scheduler(Protocol):
    def now(self) -> int: ...
    def at(self, t_ns: int, fn: Callable[[], None]) -> None: ...


@dataclass
class HostSpec:
    name: str
    mac: str
    ip: str
    port: int  # switch port the host's link is attached to
    link_bps: float = 10e9
    prop_ns: int = 1000  # one-way propagation delay of the link
    mtu: int = 1024  # RoCE path MTU (payload bytes per packet)
    dscp: int = 26  # data DSCP
    pcp: int = 3
    vlan: int | None = None  # tag frames (PCP carries the class) when set
    cnp_dscp: int = 48
    cnp_pcp: int = 6
    data_priority: int = 3  # PFC class of the data (what pause frames stop)
    np_enabled: bool = True  # host NP (False when the switch emulates the NP)
    rp_enabled: bool = True  # DCQCN rate limiting
    window: int = 256  # max outstanding PSNs per QP
    timeout_ns: int = 1_000_000  # retransmit timer
    ack_every: int = 16  # responder ACK coalescing
    gateway_mac: str | None = None  # L2 next hop for every destination (None: the peer's MAC)
    roce_version: int = 2  # 1: EtherType 0x8915 + GRH (one L2 segment only); 2: IP/UDP
    retry_cnt: int = 7  # transport retries (timeouts, sequence NAKs) before IBV_WC_RETRY_EXC_ERR
    rnr_retry: int = 7  # RNR NAK retries (7: forever)
    min_rnr_timer: int = 12  # the RNR timer code this host's NAKs ask for (12: 0.64 ms)
    rq_depth: int | None = None  # receive WQEs posted per QP (None: the app keeps the RQ full)
    recv_size: int = 1 << 30  # bytes per posted receive WQE
    transport: str = "gbn"  # "gbn" (go-back-N, what RoCE NICs do) or "sr" (IRN selective repeat)
    max_atomic: int = 1  # outstanding atomics per QP
    sport_entropy: bool = True  # a UDP source port per QP (False: every QP uses 0xC000)
    nic_mirror: bool = False  # the NIC copies offloaded RoCE to the kernel (a sniffer flag)

    def __post_init__(self) -> None:
        if self.roce_version not in (1, 2):
            raise ValueError(f"{self.name}: roce_version {self.roce_version} (1 or 2)")
        if self.transport not in ("gbn", "sr"):
            raise ValueError(f"{self.name}: transport {self.transport!r} (gbn or sr)")


@dataclass
class HostStats:
    tx_frames: int = 0
    rx_frames: int = 0
    rx_bad: int = 0
    cnps_sent: int = 0
    cnps_received: int = 0
    ce_received: int = 0
    pfc_received: int = 0
    pause_ns: int = 0
    tx_bytes_by_qp: dict[int, int] = field(default_factory=dict)
    kernel_rx: int = 0  # frames the kernel stack got (non-RoCE, RoCE for no QP)
    kernel_tx: int = 0


class HostCapture:
    """What tcpdump on the host sees: the kernel's path only. RoCE the NIC handles in
    hardware (kernel bypass) never reaches it, unless the NIC mirrors it (`nic_mirror`).
    Keeps counts, and the first `keep` frames."""

    def __init__(self, keep: int = 256):
        self.keep = keep
        self.frames: list[tuple[int, str, bytes]] = []  # (ns, "rx"/"tx", frame)
        self.roce = 0
        self.other = 0

    def add(self, t: int, direction: str, frame: bytes, roce: bool) -> None:
        if roce:
            self.roce += 1
        else:
            self.other += 1
        if len(self.frames) < self.keep:
            self.frames.append((t, direction, frame))


class Host:
    """One RoCEv2 endpoint. `transmit(frame, t_end)` is called when a frame's last bit
    left the NIC; `receive(frame)` hands the host a frame that arrived now."""

    def __init__(
        self,
        spec: HostSpec,
        clock: Scheduler,
        dcqcn: DcqcnParams | None = None,
        on_tx_sample: Callable[[str, int, int, int, float], None] | None = None,
    ):
        self.spec = spec
        self.clock = clock
        self.dcqcn = dcqcn or DcqcnParams()
        self.qps: dict[int, QueuePair] = {}
        self.rps: dict[int, ReactionPoint] = {}
        self.peers: dict[int, tuple[str, str]] = {}  # qpn -> (peer ip, peer mac)
        self._templates: dict[tuple, PsnTemplate] = {}  # frame() by all but the PSN
        self.np = NotificationPoint(self.dcqcn.cnp_interval_ns)
        self.transmit: Callable[[bytes, int], None] = lambda frame, t_end: None
        self.stats = HostStats()
        self._cnp_q: deque[bytes] = deque()
        self._kernel_q: deque[bytes] = deque()
        self.tcpdump = HostCapture()
        self._next_tx: dict[int, int] = {}  # qpn -> earliest start allowed by the RP
        self._busy_until = 0
        self._kick_at: int | None = None
        self._timer_at: dict[int, int] = {}
        self._rp_at: dict[int, int] = {}
        self._paused_until = [0] * 8
        self._rr = 0
        self.on_tx_sample = on_tx_sample  # (host, qpn, t_ns, wire bytes, rate) for reports
        # Memory regions remote peers may touch, by rkey (one protection domain per host).
        # rkey 0 spans the address space with every access: work posted without an MR.
        self.mrs: dict[int, MemoryRegion] = {0: MemoryRegion(0, 1 << 64, 0)}

    # -- set-up
    def add_qp(
        self,
        qpn: int,
        peer_qpn: int,
        peer_ip: str,
        peer_mac: str,
        priority: int | None = None,
        start_psn: int = 0,
    ) -> QueuePair:
        s = self.spec
        qp = QueuePair(
            qpn,
            peer_qpn,
            RcRequester(
                qpn,
                peer_qpn,
                s.mtu,
                s.window,
                s.timeout_ns,
                start_psn,
                retry_cnt=s.retry_cnt,
                rnr_retry=s.rnr_retry,
                mode=s.transport,
                max_atomic=s.max_atomic,
            ),
            RcResponder(
                qpn,
                peer_qpn,
                s.mtu,
                s.ack_every,
                start_psn,
                rq_depth=s.rq_depth,
                recv_size=s.recv_size,
                min_rnr_timer=s.min_rnr_timer,
                mrs=self.mrs,
                mode=s.transport,
                window=s.window,
            ),
            priority=s.data_priority if priority is None else priority,
        )
        self.qps[qpn] = qp
        self.peers[qpn] = (peer_ip, s.gateway_mac or peer_mac)
        self._templates.clear()  # (a QP of this number again: its frames change)
        self.rps[qpn] = ReactionPoint(s.link_bps, self.dcqcn, self.clock.now())
        self._next_tx[qpn] = 0
        return qp

    def post(
        self,
        qpn: int,
        op: str,
        length: int,
        va: int = 0,
        rkey: int = 0,
        imm: int | None = None,
        swap_add: int = 0,
        compare: int = 0,
    ):
        wr = self.qps[qpn].requester.post(
            op, length, self.clock.now(), va, rkey, imm, swap_add, compare
        )
        self.kick()
        return wr

    def post_recv(self, qpn: int, size: int, count: int = 1) -> None:
        """Post receive WQEs on a QP (SENDs and WRITE-with-immediate consume them)."""
        self.qps[qpn].responder.post_recv(size, count)

    def register_mr(self, va: int, length: int, rkey: int, access: int) -> MemoryRegion:
        """Register [va, va + length) for remote access with `rkey` (rkey 0 is the
        catch-all region: registering it replaces that)."""
        if not 0 <= rkey < 1 << 32 or not 0 <= va < 1 << 64 or length < 0 or va + length > 1 << 64:
            raise ValueError(
                f"{self.spec.name}: MR va={va:#x} length={length} rkey={rkey:#x} "
                "outside the 64-bit address / 32-bit rkey space"
            )
        if access & ~ACCESS_ALL:
            raise ValueError(f"{self.spec.name}: unknown access flags {access:#x}")
        if rkey in self.mrs and rkey != 0:
            raise ValueError(f"{self.spec.name}: rkey {rkey:#x} is already registered")
        mr = self.mrs[rkey] = MemoryRegion(va, length, rkey, access)
        return mr

    def counters(self, qpn: int) -> dict[str, int]:
        """One QP's NIC counters by the names mlx5 hw_counters use (plus CNPs, per host)."""
        out = self.qps[qpn].counters()
        out["np_cnp_sent"] = self.stats.cnps_sent
        out["rp_cnp_handled"] = self.rps[qpn].cnps
        out["np_ecn_marked_roce_packets"] = self.stats.ce_received
        return out

    # -- frames
    def frame(self, qpn: int, pdu: Pdu, **over: object) -> bytes:
        """The frame this host sends for `pdu` on QP `qpn`; `over` replaces RoceSpec fields
        (a test's expectation of the frame after a router: MACs, TTL)."""
        if over:
            return self._frame_template(qpn, pdu, over).frame(pdu.psn)
        s = self.spec
        # a message's packets differ only in PSN: one template per everything else
        key = (
            qpn,
            pdu.opcode,
            pdu.dqpn,
            pdu.payload_len,
            pdu.ackreq,
            pdu.reth,
            pdu.aeth,
            pdu.imm,
            pdu.atomic,
            pdu.atomic_ack,
            s.dscp,
            s.pcp,
            s.vlan,
            s.roce_version,
            s.sport_entropy,
        )
        t = self._templates.get(key)
        if t is None:
            if len(self._templates) >= 256:  # ACKs (a new MSN each) would fill it: bounded
                self._templates.clear()
            t = self._templates[key] = self._frame_template(qpn, pdu, {})
        return t.frame(pdu.psn)

    def _frame_template(self, qpn: int, pdu: Pdu, over: dict) -> PsnTemplate:
        s = self.spec
        ip, mac = self.peers[qpn]
        va, rkey, dlen = pdu.reth or (0, 0, None)
        syndrome, msn = pdu.aeth or (0, 0)
        swap = compare = 0
        if pdu.atomic is not None:
            va, rkey, swap, compare = pdu.atomic
        kw: dict[str, object] = dict(
            eth_src=s.mac,
            eth_dst=mac,
            vlan=s.vlan,
            pcp=s.pcp,
            dscp=s.dscp,
            ecn=2,
            ackreq=int(pdu.ackreq),
            va=va,
            rkey=rkey,
            dlen=dlen,
            syndrome=syndrome,
            msn=msn,
            sport=self.sport(qpn),
            version=s.roce_version,
            imm=pdu.imm or 0,
            swap=swap,
            compare=compare,
            orig=pdu.atomic_ack or 0,
        )
        kw.update(over)
        return psn_template(s.ip, ip, pdu.opcode, pdu.dqpn, bytes(pdu.payload_len), **kw)

    def sport(self, qpn: int) -> int:
        """The UDP source port of a QP's frames (RoCEv2 flow entropy)."""
        return _sport(qpn) if self.spec.sport_entropy else C.ROCE_SPORT_MIN

    def _cnp(self, qp: QueuePair) -> bytes:
        s = self.spec
        ip, mac = self.peers[qp.qpn]
        return cnp_frame(
            s.ip,
            ip,
            qp.dqpn,
            eth_src=s.mac,
            eth_dst=mac,
            vlan=s.vlan,
            pcp=s.cnp_pcp,
            dscp=s.cnp_dscp,
            sport=self.sport(qp.qpn),
            version=s.roce_version,
        )

    def send_cnp(self, frame: bytes) -> None:
        """Send a CNP made outside this model (an NP in RTL, controller.fil): it leaves
        ahead of any other frame, as the host's own CNPs do."""
        self.stats.cnps_sent += 1
        self._cnp_q.append(frame)
        self.kick()

    # -- egress scheduling
    def kick(self) -> None:
        """Send the next frame if the NIC is free, else make sure we wake up in time."""
        now = self.clock.now()
        if now < self._busy_until:
            self._wake(self._busy_until)
            return
        frame, qpn, wake = self._pick(now)
        if frame is None:
            if wake is not None:
                self._wake(wake)
            return
        t_end = now + tx_ns(len(frame), self.spec.link_bps)
        self._busy_until = t_end
        if self.spec.nic_mirror and decode(frame).is_roce:  # (kernel frames are not RoCE)
            self.tcpdump.add(now, "tx", frame, True)
        self.stats.tx_frames += 1
        if qpn is not None:
            self.stats.tx_bytes_by_qp[qpn] = self.stats.tx_bytes_by_qp.get(qpn, 0) + len(frame)
        self.transmit(frame, t_end)
        self._wake(t_end)

    def _wake(self, t: int) -> None:
        if self._kick_at is not None and self._kick_at <= t and self._kick_at >= self.clock.now():
            return
        self._kick_at = t
        self.clock.at(t, self._on_wake)

    def _on_wake(self) -> None:
        if self._kick_at is not None and self._kick_at <= self.clock.now():
            self._kick_at = None
        self.kick()

    def send_kernel(self, frame: bytes) -> None:
        """A frame the host's kernel stack sends (ARP, TCP, ...): through the same NIC."""
        self._kernel_q.append(frame)
        self.kick()

    def _pick(self, now: int) -> tuple[bytes | None, int | None, int | None]:
        if self._cnp_q:
            return self._cnp_q.popleft(), None, None
        if self._kernel_q:
            frame = self._kernel_q.popleft()
            self.stats.kernel_tx += 1
            self.tcpdump.add(now, "tx", frame, False)
            return frame, None, None
        for qp in self.qps.values():
            if qp.responder.out:
                if now < self._paused_until[qp.priority]:
                    continue
                return self.frame(qp.qpn, qp.responder.out.popleft()), None, None
        wake: int | None = None
        qpns = list(self.qps)
        n = len(qpns)
        for i in range(n):
            qpn = qpns[(self._rr + i) % n]
            qp = self.qps[qpn]
            req = qp.requester
            if not req.has_work():
                continue
            if now < req.blocked_until:  # waiting out an RNR timer
                wake = req.blocked_until if wake is None else min(wake, req.blocked_until)
                continue
            paused = self._paused_until[qp.priority]
            if now < paused:
                wake = paused if wake is None else min(wake, paused)
                continue
            t_ok = self._next_tx[qpn]
            if now < t_ok:
                wake = t_ok if wake is None else min(wake, t_ok)
                continue
            pdu = req.next_pdu(now)
            if pdu is None:
                continue
            frame = self.frame(qpn, pdu)
            self._rr = (self._rr + i + 1) % n
            rp = self.rps[qpn]
            if self.spec.rp_enabled:
                self._next_tx[qpn] = now + int(wire_bits(len(frame)) * 1e9 / rp.rc)
                rp.on_sent(len(frame))
                self._arm_rp(qpn)
            if self.on_tx_sample is not None:
                self.on_tx_sample(self.spec.name, qpn, now, len(frame), rp.rc)
            self._arm_timer(qpn)
            return frame, qpn, None
        for qp in self.qps.values():  # responder traffic held by PFC
            if qp.responder.out:
                p = self._paused_until[qp.priority]
                wake = p if wake is None else min(wake, p)
        return None, None, wake

    # -- timers
    def _arm_timer(self, qpn: int) -> None:
        deadline = self.qps[qpn].requester.timer_deadline()
        if deadline is None:
            return
        cur = self._timer_at.get(qpn)
        if cur is not None and cur <= deadline and cur >= self.clock.now():
            return
        self._timer_at[qpn] = deadline
        self.clock.at(deadline, lambda: self._on_timer(qpn))

    def _on_timer(self, qpn: int) -> None:
        now = self.clock.now()
        if self._timer_at.get(qpn) == now:
            del self._timer_at[qpn]
        req = self.qps[qpn].requester
        if req.check_timeout(now):
            self.kick()
        self._arm_timer(qpn)

    def _arm_rp(self, qpn: int) -> None:
        rp = self.rps[qpn]
        if not rp.active:
            return
        t = rp.next_event()
        cur = self._rp_at.get(qpn)
        if cur is not None and cur <= t and cur >= self.clock.now():
            return
        self._rp_at[qpn] = t
        self.clock.at(t, lambda: self._on_rp(qpn))

    def _on_rp(self, qpn: int) -> None:
        now = self.clock.now()
        if self._rp_at.get(qpn) == now:
            del self._rp_at[qpn]
        rp = self.rps[qpn]
        before = rp.rc
        rp.tick(now)
        if rp.rc != before:
            # A faster rate may allow the next packet earlier than scheduled.
            self._next_tx[qpn] = min(self._next_tx[qpn], now)
            if self.on_tx_sample is not None:
                self.on_tx_sample(self.spec.name, qpn, now, 0, rp.rc)
            self.kick()
        self._arm_rp(qpn)

    # -- ingress
    def receive(self, frame: bytes) -> None:
        now = self.clock.now()
        self.stats.rx_frames += 1
        # most frames are good RoCEv2 data/ACKs for one of our QPs: read them in one pass
        # (rocev2_fast gives what decode + pdu_of give; anything else takes decode below)
        fast = rocev2_fast(frame)
        if fast is not None:
            qp = self.qps.get(fast[2])
            if qp is not None:
                if self.spec.nic_mirror:
                    self.tcpdump.add(now, "rx", frame, True)
                self._take(qp, Pdu(*fast[1:]), fast[0], now)
                return
        rec = decode(frame)
        if rec.is_pfc or rec.is_pause:
            self._on_pause(rec, now)
            return
        qp = self.qps.get(rec.bth_dqpn) if rec.is_roce else None
        if qp is None or rec.err_icrc or rec.err_truncated or rec.err_ip_csum:
            # not for the RDMA engine: the kernel's path (what tcpdump sees)
            self.stats.kernel_rx += 1
            self.tcpdump.add(now, "rx", frame, bool(rec.is_roce))
            if rec.is_roce or rec.err_icrc or rec.err_truncated or rec.err_ip_csum:
                self.stats.rx_bad += 1
            return
        if self.spec.nic_mirror:
            self.tcpdump.add(now, "rx", frame, True)
        if rec.is_cnp:
            self.stats.cnps_received += 1
            if self.spec.rp_enabled:
                rp = self.rps[qp.qpn]
                if rp.on_cnp(now):
                    if self.on_tx_sample is not None:
                        self.on_tx_sample(self.spec.name, qp.qpn, now, 0, rp.rc)
                    # the new, lower rate applies from the next packet on
                    self._arm_rp(qp.qpn)
            return
        self._take(qp, pdu_of(frame, rec), rec.ip_src, now)

    def _take(self, qp: QueuePair, pdu: Pdu, ip_src: int, now: int) -> None:
        """A good RoCE frame (not a CNP) for `qp`: the NP, then the RC state machines."""
        if pdu.ce:
            self.stats.ce_received += 1
            if self.spec.np_enabled and self.np.on_ce((ip_src, pdu.dqpn), now):
                self.stats.cnps_sent += 1
                self._cnp_q.append(self._cnp(qp))
        if pdu.opcode in REQUEST_OPCODES:
            qp.responder.on_pdu(pdu, now)
        else:
            qp.requester.on_pdu(pdu, now)
            self._arm_timer(qp.qpn)
        self.kick()

    def _on_pause(self, rec, now: int) -> None:
        self.stats.pfc_received += 1
        bit_ns = 1e9 / self.spec.link_bps
        if rec.is_pause:
            quanta = [rec.pause_time] * 8
            cev = 0xFF
        else:
            quanta = [getattr(rec, f"pfc_quanta{i}") for i in range(8)]
            cev = rec.pfc_cev
        for i in range(8):
            if cev >> i & 1:
                until = now + int(quanta[i] * PAUSE_QUANTUM_BITS * bit_ns)
                if quanta[i] and until > max(now, self._paused_until[i]):
                    self.stats.pause_ns += until - max(now, self._paused_until[i])
                self._paused_until[i] = until
        self.kick()

    # -- views
    def is_paused(self, priority: int) -> bool:
        return self.clock.now() < self._paused_until[priority]

    @property
    def idle(self) -> bool:
        return (
            not self._cnp_q
            and not self._kernel_q
            and all(q.requester.idle and not q.responder.out for q in self.qps.values())
        )


def _sport(qpn: int) -> int:
    # RoCEv2 entropy: a fixed source port per QP in 0xC000-0xFFFF
    return C.ROCE_SPORT_MIN | (qpn * 2654435761 & 0x3FFF)


def pdu_of(frame: bytes, rec: Decoded) -> Pdu:
    """What the RC state machines see of a received RoCE frame (decoded as `rec`)."""
    return Pdu(
        rec.bth_opcode,
        rec.bth_dqpn,
        rec.bth_psn,
        bool(rec.bth_ackreq),
        payload_len(frame, rec),
        (rec.reth_va, rec.reth_rkey, rec.reth_dlen) if rec.reth_valid else None,
        (rec.aeth_syndrome, rec.aeth_msn) if rec.aeth_valid else None,
        bool(rec.ecn_ce),
        bool(rec.bth_becn),
        rec.immdt if rec.immdt_valid else None,
        (rec.atomic_va, rec.atomic_rkey, rec.atomic_swap, rec.atomic_cmp)
        if rec.atomic_valid
        else None,
        rec.atomicack_orig if rec.atomicack_valid else None,
    )


def payload_len(frame: bytes, rec: Decoded) -> int:
    """Payload bytes of a RoCE frame: the length its IP or GRH header gives, minus the
    headers after it, pad and ICRC. (The frame may carry Ethernet padding: never use len.)"""
    off = 18 if rec.vlan_valid else 14
    if rec.roce_version == 1:  # GRH payload length: BTH to ICRC inclusive, no UDP
        (transport,) = struct.unpack_from("!H", frame, off + 4)
    elif rec.ip_version == 4:
        (total,) = struct.unpack_from("!H", frame, off + 2)
        transport = total - (frame[off] & 0x0F) * 4 - UDP_LEN
    elif rec.ip_version == 6:
        (udp,) = struct.unpack_from("!H", frame, off + 4)
        transport = udp - UDP_LEN
    else:
        return 0
    ext = (
        16 * rec.reth_valid
        + 4 * rec.aeth_valid
        + 4 * rec.immdt_valid
        + C.ATOMICETH_LEN * rec.atomic_valid
        + C.ATOMICACKETH_LEN * rec.atomicack_valid
    )
    return max(0, transport - C.BTH_LEN - ext - C.ICRC_LEN - rec.bth_pad)
