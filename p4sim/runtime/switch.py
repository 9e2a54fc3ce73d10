"""The v1model pipeline driver: Parser -> VerifyChecksum -> Ingress -> traffic manager ->
Egress -> ComputeChecksum -> Deparser, with standard_metadata filled as BMv2's
simple_switch fills it. Implements `p4sim.model.SwitchAPI`.

Externs act between the stages through the hooks of their modules in `p4sim.externs`
(`Extern.after_ingress`, `after_egress`, `after_deparse`), resolved when the switch is built;
this driver names no extern. The order follows simple_switch (targets/simple_switch/
simple_switch.cpp): after ingress, the extern hooks (ingress-to-egress clone, then
resubmit), then multicast (mcast_grp != 0), drop (egress_spec == drop port), else unicast to
egress_spec (`ingress_thread`); after egress, the hooks (egress-to-egress clone), then drop,
deparse, the after-deparse hooks (recirculate), then out (`egress_thread`).
A parser error does not drop the packet: ingress runs with parser_error set (BMv2).

Time is virtual by default: `send()` runs ingress at `now()`, the traffic manager decides
when each packet leaves its queue, egress runs at that moment and the output is stamped
with the time its last bit left (`advance()` / `run_until_idle()` move time on).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import MethodType

from p4sim import externs as registry
from p4sim.compiled.binding import RuntimeClasses, bind_runtime
from p4sim.externs._common import resolve_name
from p4sim.lower import CompiledProgram
from p4sim.lower.codegen import fld
from p4sim.lower.rt import ParserError
from p4sim.model import (
    OutputPacket,
    P4SimError,
    QueuedPacket,
    TableEntry,
)
from p4sim.runtime import tables as tables_mod
from p4sim.runtime.instance import instantiate, load_program, used_externs
from p4sim.runtime.pre import PRE
from p4sim.runtime.tables import Table
from p4sim.runtime.tm import _STALE, TrafficManager, _PortState

__all__ = ["Switch", "P4View", "resolve_name", "load_program", "DROP_PORT"]

DROP_PORT = 511
NORMAL, REPLICATION = 0, 5  # standard_metadata.instance_type (BMv2 PKT_INSTANCE_TYPE_*)
PFC_ETHERTYPE = 0x8808
MAX_REINJECT = 16  # passes re-injected into ingress per packet before we drop it (loop guard)


_new = object.__new__


class _Pkt(QueuedPacket):
    """Per-packet state carried from ingress to egress; it is also the `QueuedPacket` the
    traffic manager queues (`state` is the packet itself), one object per packet.
    `trunc`: clone session truncation (bytes), 0 = none; `in_port`: the port it came in on
    (kept across metadata resets, as BMv2)."""

    def __init__(
        self,
        hdr,
        meta,
        sm,
        payload: bytes,
        frame: bytes,
        passes: int = 0,
        in_port: int = 0,
        trunc: int = 0,
    ):
        # the dataclass __init__ costs more per packet; the TM fields not set here have
        # class-level defaults (enq_*/deq_*) or are set by _enqueue (egress_port, priority, length)
        self.hdr, self.meta, self.sm = hdr, meta, sm
        self.payload, self.frame, self.passes = payload, frame, passes
        self.trunc, self.in_port = trunc, in_port

    tx_start_ns: int | None = None  # set by the TM when the packet leaves its queue
    tx_end_ns: int | None = None

    # `state` is the packet itself; a property, not an attribute, so that a packet is not
    # a reference cycle (freed at once instead of by the cyclic garbage collector)
    @property
    def state(self) -> _Pkt:  # type: ignore[override]
        return self

    # dataclass equality would compare the whole packet state
    __eq__ = object.__eq__
    __hash__ = object.__hash__


class P4View:
    """Read-only access to generated header/struct objects by P4 names: generated code
    mangles every P4 name (lower/codegen.py, `mangle`), so callers outside p4sim use this
    instead of the mangled attributes. `valid` is a header's validity bit."""

    __slots__ = ("_obj",)

    def __init__(self, obj) -> None:
        self._obj = obj

    @property
    def valid(self) -> bool:
        return bool(self._obj._v)

    def __getattr__(self, name: str):
        value = getattr(self._obj, fld(name))
        return value if isinstance(value, (int, bytes)) else P4View(value)


class Switch:
    """One simulated v1model switch running a compiled P4 program."""

    # the attributes read per packet from C (the compiled driver, generated code's `_RT.x`):
    # a slot is found by the type lookup alone, an instance-dict attribute needs a dict
    # lookup after it; the others (and the externs' bound methods) stay in __dict__
    __slots__ = (
        "_now",
        "_dirty",
        "plen",
        "payload",
        "cap",
        "cksum_err",
        "_pending",
        "drop_port",
        "tm",
        "stats",
        "_out",
        "cpu_port",
        "log",
        "_parse_errors",
        "_stops",
        "_enq_seq",
        "_drive",
        "pfc_rx",
        "__dict__",
        "__weakref__",
    )

    def __init__(
        self,
        program: CompiledProgram | str,
        *,
        include_dirs=(),
        cpu_port: int | None = None,
        tm=None,
        pfc_rx: bool = True,
        seed: int = 0,
        drop_port: int = DROP_PORT,
        wait_for_build: bool = True,
    ):
        if isinstance(program, str):
            program = load_program(program, include_dirs)
        self.program = program
        self.model = program.model
        self.cpu_port = cpu_port
        self.pfc_rx = pfc_rx
        self.drop_port = drop_port
        if tm is None:
            tm = TrafficManager()
        self.tm = tm
        self.seed = seed  # the seed of the switch's random source (externs draw from it)
        self._now = 0
        self._enq_seq = 0
        self.pre = PRE()
        self._out: list[OutputPacket] = []
        self._packet_in_cbs: list[Callable] = []
        self.log: list[str] = []
        self.stats = {"rx": 0, "tx": 0, "drops": 0, "tm_drops": 0, "pfc_rx": 0}
        # per-pipeline-pass state read/written by the generated code (`_RT`) and the externs:
        # plen, payload; cap: the length the packet is cut to when it leaves, 0 = none (BMv2
        # Packet::truncate); cksum_err: a checksum verification failed in this pass (BMv2
        # Packet::set_checksum_error; ingress_thread copies it into standard_metadata)
        self.plen = 0
        self.payload = b""
        self.cap = 0
        self.cksum_err = False
        self._pending = False  # an extern asked for something this pass: run the stage hooks
        self._dirty = False  # an extern left per-pass state behind: reset it before the next pass
        self.extern_objects: dict[str, object] = {}  # control-plane name -> runtime object
        # the externs' `_RT` functions and SwitchAPI operations, bound to this switch
        for ext in registry.all_externs():
            for name, f in ext.runtime_methods().items():
                self._bind(name, f, ext)
        for name, f in registry.operations().items():
            self._bind(name, f, None)
        ns = instantiate(program, self, wait=wait_for_build)
        self._ns = ns
        # the compiled backend's driver for send()'s common case (p4sim.compiled.drive): it
        # hands every other case back to _dispatch/_egress_out; a subclass keeps this driver
        self._drive = ns.get("_p4sim_drive") if type(self) is Switch else None
        if self._drive is not None and "_p4sim_send" in ns:
            # send() itself with that driver, in C: no Python frame per packet (it takes
            # this send() for what it does not inline: a port or frame of another type)
            self.send = MethodType(ns["_p4sim_send"], self)  # type: ignore[method-assign]
        pl = program.pipeline
        self._parse = ns[pl.parser]
        self._verify = ns[pl.verify]
        self._ingress = ns[pl.ingress]
        self._egress = ns[pl.egress]
        self._compute = ns[pl.compute]
        self._deparse = ns[pl.deparser]
        self._new_hdr = ns[pl.new_hdr]
        self._new_meta = ns[pl.new_meta]
        self._new_sm = ns[pl.new_sm]
        self.new_meta = (
            self._new_meta
        )  # fresh user metadata (every field 0), for the externs' copies
        self._field_lists = {i: ns[f] for i, f in pl.field_lists.items()}
        self.tables: dict[str, Table] = {s.info.name: ns[s.py] for s in program.tables}
        for ext in registry.all_externs():
            ext.setup(self, program, ns)
        for ex in program.externs:
            self.extern_objects[ex.name] = ns[ex.py]
            registry.lookup(ex.kind).attach(self, ex, ns[ex.py])
        # the per-packet side of the externs this program uses, resolved once; a pass in
        # which no extern asked for anything costs one attribute test (`_pending`) per stage
        used = used_externs(program)
        self._resets = tuple(e.reset for e in used if type(e).reset is not registry.Extern.reset)
        self._after_ingress = registry.stage_hooks("after_ingress", used)
        self._after_egress = registry.stage_hooks("after_egress", used)
        self._after_deparse = registry.stage_hooks("after_deparse", used)
        # exceptions with which an extern's code stops a packet (logged, counted as a drop);
        # an except clause's tuple is evaluated only when something was raised: no cost
        self._stops = tuple(x for e in registry.all_externs() for x in e.stops)
        self._parse_errors = (
            IndexError,
            ZeroDivisionError,
            ValueError,
            OverflowError,
            *self._stops,
        )
        self._pkt_in_hdr = next(
            (h for h in self.model.controller_headers.values() if h.kind == "packet_in"), None
        )
        self._pkt_out_hdr = next(
            (h for h in self.model.controller_headers.values() if h.kind == "packet_out"), None
        )
        # the packet_in header's bits and bytes (the bytes a PacketIn's frame starts with)
        self._pkt_in_bits = (
            sum(f.bitwidth for f in self._pkt_in_hdr.fields) if self._pkt_in_hdr else 0
        )
        self._pkt_in_nb = (self._pkt_in_bits + 7) // 8
        self._packet_in_frame_cbs: list[Callable] = []

    def _bind(self, name: str, f: Callable, ext: object) -> None:
        if name.startswith("_") or name in self.__dict__ or hasattr(type(self), name):
            raise RuntimeError(
                f"extern {type(ext).__name__ if ext else 'operation'}: {name!r} "
                f"clashes with the switch's own attribute"
            )
        setattr(self, name, MethodType(f, self))

    # ================================================================ for the externs' hooks

    def request(self) -> None:
        """An extern asked for something after this pass's control: run the stage hooks
        (and reset the externs' per-pass state before the next pass)."""
        self._pending = True
        self._dirty = True

    def mark_dirty(self) -> None:
        """An extern changed per-pass state (no stage hook needed): reset it before the next pass."""
        self._dirty = True

    def _reset_flags(self) -> None:
        self.cap = 0
        self.cksum_err = False
        self._pending = False
        self._dirty = False
        for reset in self._resets:
            reset(self)

    def new_sm(self, packet_length: int, instance_type: int, egress_rid: int = 0):
        """Fresh standard_metadata: BMv2 resets all metadata of a copy (a clone)."""
        s2 = self._new_sm()
        s2.f_packet_length = packet_length
        s2.f_instance_type = instance_type
        s2.f_egress_rid = egress_rid
        return s2

    def reparse(self, port: int, frame: bytes, instance_type: int):
        """Parse `frame` again into fresh headers, as if it came in on `port` (the parser may
        read ingress_port: simple_switch.cpp ingress_thread keeps it for an ingress clone's
        re-parse): (headers, payload), or None when the parser fails (logged, counted).
        The pass's extern state is kept: the hooks after this one still act on it."""
        hdr, meta, sm = self._fresh(port, frame, instance_type)
        self.plen = len(frame)
        try:
            off = self._parse(frame, hdr, meta, sm)
            payload = frame[off:]
            self.payload = payload
            self._verify(hdr, meta)
        except self._parse_errors as e:
            self._runtime_error("parser", e)
            return None
        return hdr, payload

    def enqueue_copy(
        self,
        hdr,
        meta,
        sm,
        payload: bytes,
        frame: bytes,
        passes: int,
        in_port: int,
        cap: int,
        eport: int,
    ) -> None:
        """Queue a new packet (a copy) to `eport`; `cap`: cut it to that length (0 = no cut)."""
        p = _Pkt(hdr, meta, sm, payload, frame, passes, in_port)
        p.trunc = cap
        self._enqueue(p, eport)

    def reinject(
        self, port: int, frame: bytes, instance_type: int, src_meta, fl, passes: int
    ) -> None:
        """Run `frame` through the ingress pipeline again with fresh metadata (fields copied
        from `src_meta` by `fl`); past MAX_REINJECT passes the packet is dropped instead."""
        if passes >= MAX_REINJECT:
            self.stats["drops"] += 1
            return
        self._ingress_pass(port, frame, instance_type, src_meta, fl, passes + 1)

    # ================================================================ packets

    def on_packet_in(self, callback) -> None:
        self._packet_in_cbs.append(callback)

    def on_packet_in_frame(self, callback) -> None:
        """callback(payload, head): a PacketIn as bytes, its packet_in header's bytes (`head`,
        b"" without one) split off and not decoded: what `packet_in_metadata(head)` gives is
        the metadata an `on_packet_in` callback gets with the same payload."""
        self._packet_in_frame_cbs.append(callback)

    def packet_in_metadata(self, head: bytes) -> dict[str, int]:
        """The packet_in header's fields (by name) from its bytes, as `on_packet_in` gets them."""
        md: dict[str, int] = {}
        if self._pkt_in_hdr is not None:
            nbits, nb = self._pkt_in_bits, self._pkt_in_nb
            v = int.from_bytes(head[:nb], "big") >> (nb * 8 - nbits)
            shift = nbits
            for f in self._pkt_in_hdr.fields:
                shift -= f.bitwidth
                md[f.name] = (v >> shift) & ((1 << f.bitwidth) - 1)
        return md

    def now(self) -> int:
        return self._now

    def send(self, port: int, frame: bytes) -> None:
        if not 0 <= port < 512:
            raise P4SimError(f"port {port} out of range: v1model ports are 9 bits (0..511)")
        if type(frame) is not bytes:
            frame = bytes(frame)
        self.stats["rx"] += 1
        if self.pfc_rx and len(frame) >= 18 and frame[12] == 0x88 and frame[13] == 0x08:
            self._pfc(port, frame)
        seq = self._enq_seq
        drive = self._drive
        if (
            drive(self, port, frame)
            if drive is not None
            else self._ingress_pass(port, frame, NORMAL, None, None, 0, True)
        ) and self._enq_seq == seq:
            # the packet went through the idle traffic manager and egress at once, and
            # nothing was queued since: what the loop below would dequeue is nothing
            return
        # _service(now), inlined (once per packet)
        tm = self.tm
        now = self._now
        egress_pass = self._egress_pass
        while True:
            seq = self._enq_seq
            for qp in tm.dequeue(now):
                egress_pass(qp)
            if self._enq_seq == seq:  # egress queued nothing new (clone, recirculation)
                return

    def packet_out(self, payload: bytes, metadata: dict[str, int] | None = None) -> None:
        """Inject a PacketOut: the packet_out header (built from metadata) + payload, on the CPU port."""
        if self.cpu_port is None:
            raise P4SimError("this switch has no CPU port (cpu_port=None)")
        data = bytes(payload)
        if metadata is not None and self._pkt_out_hdr is not None:
            acc = nbits = 0  # the fields MSB first, the last byte padded at its end
            for f in self._pkt_out_hdr.fields:
                acc = (acc << f.bitwidth) | (int(metadata.get(f.name, 0)) & ((1 << f.bitwidth) - 1))
                nbits += f.bitwidth
            pad = -nbits % 8
            data = (acc << pad).to_bytes((nbits + pad) // 8, "big") + data
        self.send(self.cpu_port, data)

    def _pfc(self, port: int, frame: bytes) -> None:
        opcode = int.from_bytes(frame[14:16], "big")
        if opcode == 0x0101 and len(frame) >= 34:
            cev = int.from_bytes(frame[16:18], "big") & 0xFF
            quanta = [int.from_bytes(frame[18 + 2 * i : 20 + 2 * i], "big") for i in range(8)]
        elif opcode == 0x0001:
            q = int.from_bytes(frame[16:18], "big")
            cev, quanta = 0xFF, [q] * 8
        else:
            return
        self.stats["pfc_rx"] += 1
        self.tm.pause(port, cev, quanta, self._now)

    def _runtime_error(self, where: str, e: Exception) -> None:
        """Undefined behaviour in the program (stack index out of range, division by zero):
        BMv2 leaves it undefined; we drop the packet and log why, never crash."""
        self.log.append(f"{where}: packet dropped: {type(e).__name__}: {e}")
        self.stats["drops"] += 1
        self.stats["errors"] = self.stats.get("errors", 0) + 1

    # standard_metadata_t fields are read and written under their generated names: every P4
    # field `x` is attribute `f_x` (p4sim.lower.codegen.mangle), so no P4 name can clash
    # with Python or with p4sim's own attributes

    def _fresh(self, port: int, frame: bytes, itype: int):
        hdr = self._new_hdr()
        meta = self._new_meta()
        sm = self._new_sm()
        sm.f_packet_length = len(frame)
        sm.f_instance_type = itype
        sm.f_ingress_port = port
        sm.f_ingress_global_timestamp = (self._now // 1000) & 0xFFFFFFFFFFFF
        return hdr, meta, sm

    def _parse_into(self, frame: bytes, hdr, meta, sm) -> bytes:
        if self._dirty:
            self._reset_flags()
        self.plen = len(frame)
        try:
            off = self._parse(frame, hdr, meta, sm)
            payload = frame[off:]
            self.payload = payload
            self._verify(hdr, meta)
        except self._parse_errors as e:
            self._runtime_error("parser", e)
            return None
        if self.cksum_err:
            sm.f_checksum_error = 1
        return payload

    def parse_only(self, frame: bytes, port: int = 0) -> P4View | None:
        """Run only the program's parser on `frame` (no ingress, no state changed) and return
        its headers by their P4 names, or None when the parser rejects the frame: what a
        cross-check (controller.fil) compares with other parsers."""
        hdr, meta, sm = self._fresh(port, frame, 0)
        if self._parse_into(frame, hdr, meta, sm) is None:
            return None
        return P4View(hdr)

    def _ingress_pass(
        self, port: int, frame: bytes, itype: int, src_meta, fl, passes: int, direct: bool = False
    ) -> bool:
        """One ingress pass, then the packet to the traffic manager. `direct` (a packet from
        send(), not a re-injected one): when the traffic manager is idle and lets it leave at
        once, run its egress here too and return True (send()'s dequeue would give exactly
        this packet, alone, now); otherwise False."""
        # _fresh and _parse_into, inlined: this runs once per packet
        hdr = self._new_hdr()
        meta = self._new_meta()
        sm = self._new_sm()
        plen = len(frame)
        sm.f_packet_length = plen
        sm.f_instance_type = itype
        if src_meta is None:
            # a packet re-injected by an extern (resubmit, recirculate: src_meta is the pass
            # it comes from) starts with all metadata reset, as simple_switch does (only the
            # preserved fields come back): ingress_port and timestamp read 0 there
            sm.f_ingress_port = port
            sm.f_ingress_global_timestamp = (self._now // 1000) & 0xFFFFFFFFFFFF
        if self._dirty:
            self._reset_flags()
        self.plen = plen
        try:
            payload = frame[self._parse(frame, hdr, meta, sm) :]
            self.payload = payload
            self._verify(hdr, meta)
        except self._parse_errors as e:
            self._runtime_error("parser", e)
            return False
        if self.cksum_err:
            sm.f_checksum_error = 1
        if fl is not None and src_meta is not None:
            fl(src_meta, meta)
        try:
            self._ingress(hdr, meta, sm)
        except self._stops as e:  # an extern stopped the packet (assert)
            self.log.append(str(e))
            self.stats["drops"] += 1
            return False
        except (IndexError, ZeroDivisionError, ValueError, OverflowError, ParserError) as e:
            self._runtime_error("ingress", e)
            return False
        return self._dispatch(port, frame, hdr, meta, sm, payload, passes, direct)

    def _dispatch(
        self, port: int, frame: bytes, hdr, meta, sm, payload: bytes, passes: int, direct: bool
    ) -> bool:
        """After ingress: the externs' hooks, multicast, drop, else unicast to the traffic
        manager (and, `direct` and idle, egress at once); what _ingress_pass returns. The
        compiled driver (p4sim.compiled.drive) calls it for every case it does not inline."""
        if self._pending:
            # what the externs asked for in ingress (clone, resubmit), in simple_switch's order
            for hook in self._after_ingress:
                if hook(self, port, frame, hdr, meta, sm, passes):
                    return False
        # a length cap asked for in ingress cuts the frame when it leaves
        if sm.f_mcast_grp:
            pkt = _Pkt(hdr, meta, sm, payload, frame, passes, port, self.cap)
            reps = self.pre.replicas(sm.f_mcast_grp)
            for i, (eport, rid) in enumerate(reps):
                last = i == len(reps) - 1
                p = (
                    pkt
                    if last
                    else _Pkt(hdr.copy(), meta.copy(), sm.copy(), payload, frame, passes, port)
                )
                p.trunc = pkt.trunc
                p.sm.f_egress_rid = rid
                p.sm.f_instance_type = REPLICATION
                self._enqueue(p, eport)
            if not reps:
                self.stats["drops"] += 1
            return False
        if sm.f_egress_spec == self.drop_port:
            self.stats["drops"] += 1
            return False
        sm.f_instance_type = NORMAL  # simple_switch: a unicast packet leaves ingress as NORMAL
        eport = sm.f_egress_spec
        tm = self.tm
        if direct and type(tm) is TrafficManager:
            now = self._now
            tx = tm.send_now(eport, sm.f_priority, sm.f_packet_length, now)
            if tx >= 0:
                # what _egress_pass reads from the queued packet: it left as it came,
                # with both queues' depths 0, after 0 ns in the queue
                t_us = now // 1000
                sm.f_egress_port = eport
                sm.f_egress_spec = 0
                sm.f_enq_timestamp = t_us & 0xFFFFFFFF
                sm.f_enq_qdepth = 0
                sm.f_deq_timedelta = 0
                sm.f_deq_qdepth = 0
                sm.f_egress_global_timestamp = t_us & 0xFFFFFFFFFFFF
                self._egress_run(
                    None, hdr, meta, sm, payload, frame, passes, port, self.cap, eport, now + tx
                )
                return True
        # _Pkt(...) and _enqueue, inlined (once per packet): the attributes in __init__'s order
        pkt = _new(_Pkt)
        pkt.hdr, pkt.meta, pkt.sm = hdr, meta, sm
        pkt.payload, pkt.frame, pkt.passes = payload, frame, passes
        pkt.trunc, pkt.in_port = self.cap, port
        self._enq_seq += 1
        pkt.egress_port = eport
        pkt.priority = sm.f_priority
        pkt.length = sm.f_packet_length
        if not tm.enqueue(pkt, self._now):
            self.stats["tm_drops"] += 1
        return False

    def _enqueue(self, pkt: _Pkt, eport: int) -> None:
        self._enq_seq += 1
        sm = pkt.sm
        pkt.egress_port = eport
        pkt.priority = sm.f_priority
        pkt.length = sm.f_packet_length
        if not self.tm.enqueue(pkt, self._now):
            self.stats["tm_drops"] += 1

    def _service(self, t: int) -> None:
        """Run egress for every packet the traffic manager releases by time t."""
        tm = self.tm
        if type(tm) is TrafficManager and not tm._departed and t <= tm._now:
            # TrafficManager.dequeue(t) step for step when its clock is at t already and
            # its cached next start is later (or nothing is queued): it releases nothing
            best = tm._best
            if best is None or (best is not _STALE and best[0] > t):
                return
        while True:
            seq = self._enq_seq
            qps = tm.dequeue(t)
            for qp in qps:
                self._egress_pass(qp)
            if self._enq_seq == seq:  # egress queued nothing new (clone, recirculation)
                return

    def _egress_pass(self, qp: QueuedPacket) -> None:
        # our packets are their own state (skips the property call); another TM may wrap them
        if type(qp) is _Pkt:
            p: _Pkt = qp
            # class defaults None; reading __dict__ instead would slow every later attribute
            # access on the object (CPython 3.11+ then drops its inline-values fast path)
            start = qp.tx_start_ns
            if start is None:
                start = self._now
            end = qp.tx_end_ns
            if end is None:
                end = start
        else:
            p = qp.state  # type: ignore[assignment]
            start = getattr(qp, "tx_start_ns", self._now)
            end = getattr(qp, "tx_end_ns", start)
        sm = p.sm
        eport = qp.egress_port
        sm.f_egress_port = eport
        sm.f_egress_spec = 0
        sm.f_enq_timestamp = (qp.enq_timestamp // 1000) & 0xFFFFFFFF
        sm.f_enq_qdepth = qp.enq_qdepth & 0x7FFFF
        sm.f_deq_timedelta = (qp.deq_timedelta // 1000) & 0xFFFFFFFF
        sm.f_deq_qdepth = qp.deq_qdepth & 0x7FFFF
        sm.f_egress_global_timestamp = (start // 1000) & 0xFFFFFFFFFFFF
        self._egress_run(
            p, p.hdr, p.meta, sm, p.payload, p.frame, p.passes, p.in_port, p.trunc, eport, end
        )

    def _egress_run(
        self,
        p: _Pkt | None,
        hdr,
        meta,
        sm,
        payload: bytes,
        frame: bytes,
        passes: int,
        in_port: int,
        trunc: int,
        eport: int,
        end: int,
    ) -> None:
        """Egress, deparser and output of a packet whose standard_metadata is filled for
        egress; `p`: its queued packet, or None when it never was one (the fast path of
        _ingress_pass; the stage hooks get one made then); `end`: when its last bit leaves."""
        if self._dirty:
            self._reset_flags()
        self.plen = sm.f_packet_length
        self.payload = payload
        try:
            self._egress(hdr, meta, sm)
        except self._stops as e:  # an extern stopped the packet (assert)
            self.log.append(str(e))
            self.stats["drops"] += 1
            return
        except (IndexError, ZeroDivisionError, ValueError, OverflowError, ParserError) as e:
            self._runtime_error("egress", e)
            return
        self._egress_out(p, hdr, meta, sm, payload, frame, passes, in_port, trunc, eport, end)

    def _egress_out(
        self,
        p: _Pkt | None,
        hdr,
        meta,
        sm,
        payload: bytes,
        frame: bytes,
        passes: int,
        in_port: int,
        trunc: int,
        eport: int,
        end: int,
    ) -> None:
        """After egress: the hooks, drop, deparser, cuts, PacketIn or output (the compiled
        driver calls it when an extern asked for something or the port is the CPU port)."""
        cap = self.cap
        pending = self._pending
        if pending:
            if p is None:  # the hooks read the packet's fields (pkt.payload, pkt.in_port)
                p = _Pkt(hdr, meta, sm, payload, frame, passes, in_port, trunc)
                p.egress_port, p.priority, p.length = eport, sm.f_priority, sm.f_packet_length
            # what the externs asked for in egress (an egress-to-egress clone), before the
            # drop check, as simple_switch.cpp egress_thread orders them
            for hook in self._after_egress:
                if hook(self, p, hdr, meta, sm):
                    return
        if sm.f_egress_spec == self.drop_port:
            self.stats["drops"] += 1
            return
        out: list[bytes] = []
        try:
            self._compute(hdr, meta)
            self._deparse(out, hdr)
        except (
            IndexError,
            ZeroDivisionError,
            ValueError,
            OverflowError,
            ParserError,
            struct.error,
        ) as e:
            self._runtime_error("deparser", e)
            return
        out.append(payload)
        data = b"".join(out)
        if cap and len(data) > cap:
            data = data[:cap]
        if trunc and len(data) > trunc:
            data = data[:trunc]
        if pending:
            # after the deparser (recirculation), simple_switch.cpp egress_thread
            for hook in self._after_deparse:
                if hook(self, p, data, meta):
                    return
        if (
            self.cpu_port is not None
            and eport == self.cpu_port
            and (self._packet_in_cbs or self._packet_in_frame_cbs)
        ):
            nb = self._pkt_in_nb
            head, data = data[:nb], data[nb:]
            for fcb in self._packet_in_frame_cbs:  # (the server: no dict per PacketIn)
                fcb(data, head)
            if self._packet_in_cbs:
                md = self.packet_in_metadata(head)
                for cb in self._packet_in_cbs:
                    cb(data, md)
            self.stats["tx"] += 1
            return
        self.stats["tx"] += 1
        # the dataclass __init__ (frozen: one object.__setattr__ per field) costs more than
        # the rest of the egress bookkeeping; filling __dict__ builds the same object
        o = _new(OutputPacket)
        d = o.__dict__  # (item stores: cheaper than update(**kwargs))
        d["port"] = eport
        d["data"] = data
        d["time_ns"] = end
        self._out.append(o)

    def receive(self) -> list[OutputPacket]:
        out, self._out = self._out, []
        return out

    def advance(self, dt_ns: int) -> None:
        if dt_ns < 0:
            raise P4SimError("time only moves forward")
        target = self._now + int(dt_ns)
        tm = self.tm
        while True:
            nd = tm.next_departure()
            if nd is None or nd > target:
                break
            self._now = max(self._now, nd)
            self._service(self._now)
        self._now = target
        if type(tm) is TrafficManager and not tm._departed:
            # _service(target) when nothing left by target (the loop's exit) and nothing
            # departed at an enqueue: its dequeue only moves the clock (TrafficManager.dequeue)
            if target > tm._now:
                tm._now = target
            return
        self._service(target)

    def run_until_idle(self) -> None:
        guard = 0
        while True:
            nd = self.tm.next_departure()
            if nd is None:
                return
            self._now = max(self._now, nd)
            self._service(self._now)
            guard += 1
            if guard > 10_000_000:
                raise P4SimError("run_until_idle: the traffic manager never empties")

    # ================================================================ tables

    def _table(self, name: str) -> Table:
        return self.tables[resolve_name(name, self.tables, "table")]

    def table_add(self, entry: TableEntry) -> None:
        t = self._table(entry.table)
        entry.table = t.name
        t.add(entry)

    def table_modify(self, entry: TableEntry) -> None:
        self._table(entry.table).modify(entry)

    def table_delete(self, entry: TableEntry) -> None:
        self._table(entry.table).delete(entry)

    def table_set_default(self, table: str, action: str, params: dict[str, int]) -> None:
        self._table(table).set_default(action, params)

    def table_entries(self, table: str) -> list[TableEntry]:
        return self._table(table).entries()

    def table_default(self, table: str) -> tuple[str, dict[str, int]]:
        return self._table(table).default_action()

    def table_clear(self, table: str) -> None:
        self._table(table).clear()

    # ================================================================ PRE

    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None:
        self.pre.group_set(group, replicas)

    def mc_group_delete(self, group: int) -> None:
        self.pre.group_delete(group)


# the compiled backend reads these classes' slots at their offsets: handed to it here, so
# it never imports the runtime (p4sim.compiled.binding: imports flow runtime -> compiled)
bind_runtime(
    RuntimeClasses(
        switch=Switch, traffic_manager=TrafficManager, port_state=_PortState, rec=tables_mod.Rec
    )
)
