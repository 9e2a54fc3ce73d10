"""The FPGA-in-the-loop co-simulation: one host's NIC receive path outside Python (RTL in
the HDL simulator, or a real port), in step with p4sim's virtual time.

Wiring (a `run_once` nic_hook): frames p4sim emits toward the host go to the port when the
switch emits them, stamped with their arrival (emission + link delay); what the port gives
back (frames for the host's RC responder, CNPs for the wire) is scheduled into the engine
at its own instants: `Host.receive` and `Host.send_cnp`. The host's Python NP is off.

Conservative synchronisation (as SimBricks between simulators), lookahead = the link
delay L: when the engine has moved the switch to t, every frame arriving at the NIC
before t + L has been emitted (it left the switch before t), so the port may run to
t + L; whatever it produces in (t_prev + L, t + L] lies at or after t, the engine's now,
and anything the NIC sends reaches the switch no sooner than L after that. Nothing is
approximated and nothing depends on wall time: a run is repeatable bit for bit.

Cross-check on every frame (stops the run, naming the frame and fields):
- the port's parsed record == controller.packets.decode(frame) == the fields p4sim's own
  P4 parser extracts from the same bytes (the switch's compiled parser run on the egress
  frame: p4sim keeps no per-packet parse of what it emits, so we re-parse it);
- every CNP the port sends == the CNP the Python host would send (`Host._cnp`), for
  exactly the CE frames the Python NP model (controller.hosts.dcqcn.NotificationPoint)
  answers when run on the clock cycles the RTL took the records.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from controller.hosts.dcqcn import NotificationPoint
from controller.hosts.host import Host, _sport
from controller.packets import Decoded, decode
from controller.packets.fields import FIELD_NAMES
from controller.scenarios.engine import Engine

from .np_regs import NpConfig, QpContext


class FilMismatch(AssertionError):
    """The port and a reference disagree about a frame (the run stops)."""


class Port(Protocol):
    """A NIC receive path that speaks frames in virtual time (RtlNic, a real port)."""

    clock_ps: int

    def setup(self, cfg: NpConfig, now_ns: int) -> None: ...
    def exchange(self, until_ns: int, inputs: list[tuple[int, bytes]]): ...


def p4_parsed(sw, frame: bytes) -> dict[str, int]:
    """The record fields p4sim's parser (the P4 program's, compiled) extracts from `frame`:
    the fields of the headers it marks valid (the program's parser sets no metadata; the
    derived flags, is_roce and the like, come from its ingress). Runs the parser only."""
    hdr = sw.parse_only(frame)
    if hdr is None:
        return {}
    out: dict[str, int] = {}
    e, v = hdr.ethernet, hdr.vlan
    if e.valid:
        out.update(
            eth_dst=e.dst,
            eth_src=e.src,
            vlan_valid=int(v.valid),
            ethertype=v.ether_type if v.valid else e.ether_type,
        )
    if v.valid:
        out.update(vlan_pcp=v.pcp, vlan_vid=v.vid)
    if hdr.ipv4.valid:
        ip = hdr.ipv4
        out.update(
            ip_version=ip.version,
            ip_src=ip.src,
            ip_dst=ip.dst,
            dscp=ip.dscp,
            ecn=ip.ecn,
            ttl=ip.ttl,
        )
    elif hdr.ipv6.valid:
        ip6 = hdr.ipv6
        out.update(
            ip_version=ip6.version,
            ip_src=ip6.src,
            ip_dst=ip6.dst,
            dscp=ip6.dscp,
            ecn=ip6.ecn,
            ttl=ip6.hop_limit,
        )
    if hdr.udp.valid:
        out.update(udp_sport=hdr.udp.sport, udp_dport=hdr.udp.dport)
    if hdr.bth.valid:
        b = hdr.bth
        out.update(
            bth_opcode=b.opcode,
            bth_se=b.se,
            bth_m=b.m,
            bth_pad=b.pad,
            bth_tver=b.tver,
            bth_pkey=b.pkey,
            bth_fecn=b.fecn,
            bth_becn=b.becn,
            bth_dqpn=b.dqpn,
            bth_ackreq=b.ackreq,
            bth_psn=b.psn,
        )
    for name, h, fields in (
        ("reth", hdr.reth, ("va", "rkey", "dlen")),
        ("aeth", hdr.aeth, ("syndrome", "msn")),
    ):
        out[f"{name}_valid"] = int(h.valid)
        if h.valid:
            out.update({f"{name}_{f}": getattr(h, f) for f in fields})
    out["immdt_valid"] = int(hdr.immdt.valid)
    if hdr.immdt.valid:
        out["immdt"] = hdr.immdt.immdt
    a, ack = hdr.atomiceth, hdr.atomicacketh
    out["atomic_valid"] = int(a.valid)
    if a.valid:
        out.update(atomic_va=a.va, atomic_rkey=a.rkey, atomic_swap=a.swap_add, atomic_cmp=a.compare)
    out["atomicack_valid"] = int(ack.valid)
    if ack.valid:
        out["atomicack_orig"] = ack.orig
    return out


def cross_check(
    index: int, t_ns: int, frame: bytes, rtl: Decoded, p4: dict[str, int] | None
) -> None:
    """Raise FilMismatch naming frame `index` and every differing field."""
    got = rtl.as_dict()
    want = decode(frame).as_dict()
    diff = {k: (hex(got[k]), hex(want[k])) for k in FIELD_NAMES if got[k] != want[k]}
    if diff:
        raise FilMismatch(
            f"frame {index} at {t_ns} ns ({len(frame)} B {frame[:48].hex()}...): "
            f"RTL record != decode() in {diff} (rtl, decode)"
        )
    if p4 is not None:
        diff = {k: (hex(got[k]), hex(v)) for k, v in p4.items() if got[k] != v}
        if diff:
            raise FilMismatch(
                f"frame {index} at {t_ns} ns ({len(frame)} B {frame[:48].hex()}...): "
                f"RTL record != p4sim's parser in {diff} (rtl, p4sim)"
            )


@dataclass
class FilStats:
    frames_in: int = 0
    records_checked: int = 0
    p4_checked: int = 0
    cnps: int = 0
    ce_records: int = 0
    mismatches: int = 0
    cnp_times: list[tuple[int, int]] = field(default_factory=list)  # (virtual ns, dqpn)
    syncs: int = 0


class FilLoop:
    """Attach with `run_once(..., nic_hook=loop.hook)`; `port` is the NIC receive path."""

    def __init__(self, port: Port, host: str, switch=None):
        self.port = port
        self.host_name = host
        self.switch = switch  # a p4sim Switch: its parser cross-checks every frame
        self.stats = FilStats()
        self._inputs: deque[tuple[int, bytes]] = deque()
        self._expect: deque[tuple[int, int, bytes, dict[str, int] | None]] = deque()
        self._cnps_due: deque[bytes] = deque()
        self.cfg: NpConfig | None = None

    def hook(self, eng: Engine, hosts: dict[str, Host]) -> None:
        h = hosts[self.host_name]
        h.spec.np_enabled = False  # the port's NP answers CE marks
        self.eng, self.h, self.prop = eng, h, h.spec.prop_ns
        if self.prop <= 0:
            raise ValueError("the loop needs a link delay > 0 (its lookahead)")
        eng.external_rx(h.spec.port, self._arrive)
        eng.sync = self._sync
        interval = math.ceil(h.dcqcn.cnp_interval_ns * 1000 / self.port.clock_ps)
        qps = tuple(
            QpContext(qpn, qp.dqpn, *h.peers[qpn], _sport(qpn)) for qpn, qp in h.qps.items()
        )
        self.cfg = NpConfig(h.spec.mac, h.spec.ip, h.spec.cnp_dscp, interval, qps, h.spec.cnp_pcp)
        self.model = NotificationPoint(interval)
        self._flows = {(_ip_int(q.peer_ip), q.local_qpn): q for q in qps}
        self._until = eng.now()
        self.exact = getattr(self.port, "exact", True)
        # inexact ports: per sender QP, CE frames handed to the port and CNPs back
        self._ce_sent: dict[int, int] = {q.peer_qpn: 0 for q in qps}
        self._cnp_back: dict[int, int] = {q.peer_qpn: 0 for q in qps}
        self._ce_of: dict[int, int] = {}  # frame id -> sender QP, for CE frames
        self.port.setup(self.cfg, eng.now())

    def _arrive(self, t_ns: int, frame: bytes) -> None:
        i = self.stats.frames_in
        self.stats.frames_in += 1
        self._inputs.append((t_ns, frame))
        p4 = p4_parsed(self.switch, frame) if self.switch is not None else None
        if self.exact:
            self._expect.append((i, t_ns, frame, p4))
            return
        # a real port returns no records: check the harness's decode() against p4sim
        rec = decode(frame)
        cross_check(i, t_ns, frame, rec, p4)
        self.stats.records_checked += 1
        self.stats.p4_checked += p4 is not None
        q = self._flows.get((rec.ip_src, rec.bth_dqpn))
        if q is not None and rec.ecn_ce and not rec.is_cnp:
            self.stats.ce_records += 1
            self._ce_of[id(frame)] = q.peer_qpn

    def _sync(self, t_ns: int) -> None:
        until = t_ns + self.prop
        if until <= self._until:
            return
        inputs = []
        while self._inputs and self._inputs[0][0] < until:
            inputs.append(self._inputs.popleft())
            qpn = self._ce_of.pop(id(inputs[-1][1]), None)
            if qpn is not None:
                self._ce_sent[qpn] += 1
        ex = self.port.exchange(until, inputs)
        self._until = until
        self.stats.syncs += 1
        now = self.eng.now()
        for cycle, t, rec in ex.records:
            self._check_record(cycle, t, rec)
        for t, frame in ex.to_host:
            self._causal(t, now, "frame to the host")
            self.eng.at(t, lambda f=frame: self.h.receive(f))
        for t, frame in ex.to_wire:
            self._causal(t, now, "CNP")
            self._check_cnp(t, frame)
            self.eng.at(t, lambda f=frame: self.h.send_cnp(f))

    def _causal(self, t: int, now: int, what: str) -> None:
        if t < now:
            raise FilMismatch(
                f"{what} at {t} ns is before the engine's now {now} ns: "
                "the synchronisation broke causality"
            )

    def _check_record(self, cycle: int, t: int, rec: Decoded) -> None:
        if not self._expect:
            raise FilMismatch(f"a record at {t} ns for no frame sent: {rec.as_dict()}")
        i, t_in, frame, p4 = self._expect.popleft()
        try:
            cross_check(i, t_in, frame, rec, p4)
        except FilMismatch:
            self.stats.mismatches += 1
            raise
        self.stats.records_checked += 1
        self.stats.p4_checked += p4 is not None
        ok = (
            rec.is_roce
            and not rec.is_cnp
            and rec.ecn_ce
            and rec.roce_version == 2
            and rec.ip_version in (4, 6)
            and not (rec.err_truncated or rec.err_ip_csum or rec.err_icrc or rec.err_unsupported)
        )
        q = self._flows.get((rec.ip_src, rec.bth_dqpn)) if ok else None
        if q is None:
            return
        self.stats.ce_records += 1
        if self.model.on_ce((rec.ip_src, rec.bth_dqpn), cycle):
            self._cnps_due.append(self.h._cnp(self.h.qps[q.local_qpn]))

    def _check_cnp(self, t: int, frame: bytes) -> None:
        k = self.stats.cnps
        self.stats.cnps += 1
        if not self.exact:
            self._check_cnp_loose(k, t, frame)
            return
        if not self._cnps_due:
            self.stats.mismatches += 1
            raise FilMismatch(
                f"CNP {k} at {t} ns ({decode(frame).bth_dqpn:#x}): the NP model "
                f"sends no CNP here (interval {self.cfg.interval_cycles} cycles)"
            )
        want = self._cnps_due.popleft()
        if frame != want:
            got, exp = decode(frame).as_dict(), decode(want).as_dict()
            diff = {n: (hex(got[n]), hex(exp[n])) for n in FIELD_NAMES if got[n] != exp[n]}
            self.stats.mismatches += 1
            raise FilMismatch(
                f"CNP {k} at {t} ns differs from the host's CNP: {diff or 'bytes'} "
                f"(rtl, python) rtl {frame.hex()} python {want.hex()}"
            )
        self.stats.cnp_times.append((t, decode(frame).bth_dqpn))

    def _check_cnp_loose(self, k: int, t: int, frame: bytes) -> None:
        """A real port's CNP: the host's own CNP for the flow its DestQP names, and no
        flow gets more CNPs than CE frames of it were handed to the port."""
        dqpn = decode(frame).bth_dqpn
        q = next((q for q in self.cfg.qps if q.peer_qpn == dqpn), None)
        if q is None or self._cnp_back[dqpn] >= self._ce_sent[dqpn]:
            self.stats.mismatches += 1
            raise FilMismatch(
                f"CNP {k} at {t} ns to QP {dqpn:#x}: more CNPs than CE frames "
                "of that flow were sent"
            )
        self._cnp_back[dqpn] += 1
        want = self.h._cnp(self.h.qps[q.local_qpn])
        if frame != want:
            self.stats.mismatches += 1
            raise FilMismatch(
                f"CNP {k} at {t} ns differs from the host's CNP: "
                f"rtl {frame.hex()} python {want.hex()}"
            )
        self.stats.cnp_times.append((t, dqpn))

    def finish(self) -> None:
        """After the run: every frame got its record, every due CNP was sent."""
        if self._expect and self._expect[0][1] + 10 * self.prop < self._until:
            i, t, _f, _p = self._expect[0]
            raise FilMismatch(f"frame {i} (arrived {t} ns) never produced a record")
        if len(self._cnps_due) > 1:
            raise FilMismatch(f"{len(self._cnps_due)} CNPs the model sends never left the NP")


def _ip_int(ip: str) -> int:
    from controller.packets.build import ip_to_int

    return ip_to_int(ip)
