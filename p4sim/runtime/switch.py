"""The v1model pipeline driver: Parser -> VerifyChecksum -> Ingress -> traffic manager ->
Egress -> ComputeChecksum -> Deparser, with standard_metadata filled as BMv2's
simple_switch fills it. Implements `p4sim.model.SwitchAPI`.

Post-ingress order follows simple_switch: ingress-to-egress clone, digest, resubmit,
multicast (mcast_grp != 0), drop (egress_spec == 511), else unicast to egress_spec.
After egress: egress-to-egress clone, drop (egress_spec == 511), deparse, recirculate.
A parser error does not drop the packet: ingress runs with parser_error set (BMv2).

Time is virtual by default: `send()` runs ingress at `now()`, the traffic manager decides
when each packet leaves its queue, egress runs at that moment and the output is stamped
with the time its last bit left (`advance()` / `run_until_idle()` move time on).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

from p4sim import externs as registry
from p4sim.externs import hash as H
from p4sim.externs.counter import CounterArray
from p4sim.externs.meter import GREEN, MeterArray, MeterState
from p4sim.externs.register import RegisterArray
from p4sim.lower import CompiledProgram
from p4sim.lower.codegen import fld
from p4sim.lower.rt import AssertFailed, ParserError
from p4sim.model import (
    NotFound,
    OutputPacket,
    P4SimError,
    QueuedPacket,
    TableEntry,
)
from p4sim.runtime.action_profile import Profile
from p4sim.runtime.instance import instantiate, load_program
from p4sim.runtime.pre import PRE
from p4sim.runtime.tables import Rec, Table

DROP_PORT = 511
NORMAL, I2E_CLONE, E2E_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6
PFC_ETHERTYPE = 0x8808
MAX_REINJECT = 16  # resubmit/recirculate passes per packet before we drop it (loop guard)


def resolve_name(name: str, names, what: str) -> str:
    """Full name, or a unique suffix at a '.' boundary (as p4c's STF runner resolves)."""
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        raise NotFound(f"no {what} named {name!r}")
    raise P4SimError(f"{what} name {name!r} is ambiguous: {', '.join(sorted(cands))}")


_new = object.__new__


class _Pkt(QueuedPacket):
    """Per-packet state carried from ingress to egress; it is also the `QueuedPacket` the
    traffic manager queues (`state` is the packet itself), one object per packet.
    `trunc`: clone session truncation (bytes), 0 = none; `in_port`: the port it came in on
    (kept across metadata resets, as BMv2)."""

    def __init__(self, hdr, meta, sm, payload: bytes, frame: bytes, passes: int = 0, in_port: int = 0,
                 trunc: int = 0):
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

    def __init__(self, program: CompiledProgram | str, *, include_dirs=(), cpu_port: int | None = None,
                 tm=None, pfc_rx: bool = True, seed: int = 0, drop_port: int = DROP_PORT):
        if isinstance(program, str):
            program = load_program(program, include_dirs)
        self.program = program
        self.model = program.model
        self.cpu_port = cpu_port
        self.pfc_rx = pfc_rx
        self.drop_port = drop_port
        self.rng = random.Random(seed)
        if tm is None:
            from p4sim.runtime.tm import TrafficManager

            tm = TrafficManager()
        self.tm = tm
        self._now = 0
        self._enq_seq = 0
        self.pre = PRE()
        self._out: list[OutputPacket] = []
        self._packet_in_cbs: list[Callable] = []
        self._digest_cbs: list[Callable] = []
        self.digests: list[tuple[str, dict]] = []  # kept when nobody listens (STF, tests)
        self.log: list[str] = []
        self.hash_algos = H.make_hash_algorithms()
        self.stats = {"rx": 0, "tx": 0, "drops": 0, "tm_drops": 0, "pfc_rx": 0}
        # per-pipeline-pass state read/written by the generated code (`_RT`)
        self.plen = 0
        self.payload = b""
        self.dm_color: dict[str, int] = {}
        self._reset_flags()
        ns = instantiate(program, self)
        self._ns = ns
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
        self._field_lists = {i: ns[f] for i, f in pl.field_lists.items()}
        self.tables: dict[str, Table] = {s.info.name: ns[s.py] for s in program.tables}
        self.counters: dict[str, CounterArray] = {}
        self.registers: dict[str, RegisterArray] = {}
        self.meters: dict[str, MeterArray] = {}
        self.direct_meter_tables: dict[str, str] = {}
        self.extern_objects: dict[str, object] = {}  # control-plane name -> runtime object
        self.action_profiles: dict[str, Profile] = {}  # action profiles/selectors, by name
        for ex in program.externs:
            self.extern_objects[ex.name] = ns[ex.py]
            registry.lookup(ex.kind).attach(self, ex, ns[ex.py])
        self.value_sets = {name: ns[py] for py, name, _ in program.value_sets}
        self._pkt_in_hdr = next((h for h in self.model.controller_headers.values()
                                 if h.kind == "packet_in"), None)
        self._pkt_out_hdr = next((h for h in self.model.controller_headers.values()
                                  if h.kind == "packet_out"), None)

    # ================================================================ `_RT` for generated code

    def _reset_flags(self) -> None:
        self.clone_req: tuple | None = None
        self.resub_req = None
        self.recirc_req = None
        self.trunc = 0
        self.cksum_err = False
        self.dm_color.clear()
        self._dirty = False  # set by any extern that leaves per-pass state behind

    def clone(self, ctype: int, session: int, fl) -> None:
        self.clone_req = (ctype, session, fl)
        self._dirty = True

    def resubmit(self, fl) -> None:
        self.resub_req = (fl,)
        self._dirty = True

    def recirculate(self, fl) -> None:
        self.recirc_req = (fl,)
        self._dirty = True

    def truncate(self, n: int) -> None:
        # BMv2 keeps the smallest length asked for
        self.trunc = n if not self.trunc else min(self.trunc, n)
        self._dirty = True

    def digest(self, name: str, values: dict) -> None:
        if self._digest_cbs:
            for cb in self._digest_cbs:
                cb(name, values)
        else:
            self.digests.append((name, values))

    def random(self, lo: int, hi: int) -> int:
        if hi < lo:
            return lo
        return self.rng.randint(lo, hi)

    def hash(self, algo: str, data: bytes, base: int, max_: int) -> int:
        fn = self.hash_algos.get(algo, KeyError)
        if fn is KeyError:
            raise P4SimError(f"hash algorithm {algo} is not supported")
        return H.hash_value(fn, data, base, max_, self.rng)

    @staticmethod
    def pack_valid(parts) -> bytes:
        ps = [p for p in parts if p is not None]
        return H.pack_bits([p[0] for p in ps], [p[1] for p in ps])

    def checksum_error(self) -> None:
        self.cksum_err = True
        self._dirty = True

    def log_msg(self, msg: str, values: tuple) -> None:
        for v in values:
            msg = msg.replace("{}", str(v), 1)
        self.log.append(msg)

    def meter(self, arr: MeterArray, idx: int) -> int:
        if not 0 <= idx < arr.size:
            return GREEN
        amount = 1 if arr.unit == "packets" else self.plen
        return arr.cells[idx].execute(amount, self._now)

    def direct_meter(self, table: Table, rec: Rec) -> int:
        self._dirty = True  # the caller stores the colour in dm_color
        if rec.meter is None:
            return GREEN
        unit = self.model.direct_meters[table.info.direct_meter].unit  # type: ignore[index]
        return rec.meter.execute(1 if unit == "packets" else self.plen, self._now)

    # ================================================================ packets

    def on_packet_in(self, callback) -> None:
        self._packet_in_cbs.append(callback)

    def on_digest(self, callback) -> None:
        self._digest_cbs.append(callback)

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
        self._ingress_pass(port, frame, NORMAL, None, None, 0)
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
            vals = [int(metadata.get(f.name, 0)) for f in self._pkt_out_hdr.fields]
            data = H.pack_bits(vals, [f.bitwidth for f in self._pkt_out_hdr.fields]) + data
        self.send(self.cpu_port, data)

    def _pfc(self, port: int, frame: bytes) -> None:
        opcode = int.from_bytes(frame[14:16], "big")
        if opcode == 0x0101 and len(frame) >= 34:
            cev = int.from_bytes(frame[16:18], "big") & 0xFF
            quanta = [int.from_bytes(frame[18 + 2 * i:20 + 2 * i], "big") for i in range(8)]
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
        if itype != RESUBMIT and itype != RECIRC:
            # simple_switch resets all metadata for a resubmitted or recirculated pass
            # (only the preserved fields come back): ingress_port and timestamp read 0 there
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
        except (IndexError, ZeroDivisionError, ValueError, OverflowError, AssertFailed) as e:
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

    def _ingress_pass(self, port: int, frame: bytes, itype: int, src_meta, fl, passes: int) -> None:
        # _fresh and _parse_into, inlined: this runs once per packet
        hdr = self._new_hdr()
        meta = self._new_meta()
        sm = self._new_sm()
        plen = len(frame)
        sm.f_packet_length = plen
        sm.f_instance_type = itype
        if itype != RESUBMIT and itype != RECIRC:
            sm.f_ingress_port = port
            sm.f_ingress_global_timestamp = (self._now // 1000) & 0xFFFFFFFFFFFF
        if self._dirty:
            self._reset_flags()
        self.plen = plen
        try:
            payload = frame[self._parse(frame, hdr, meta, sm):]
            self.payload = payload
            self._verify(hdr, meta)
        except (IndexError, ZeroDivisionError, ValueError, OverflowError, AssertFailed) as e:
            self._runtime_error("parser", e)
            return
        if self.cksum_err:
            sm.f_checksum_error = 1
        if fl is not None and src_meta is not None:
            fl(src_meta, meta)
        try:
            self._ingress(hdr, meta, sm)
        except AssertFailed as e:
            self.log.append(str(e))
            self.stats["drops"] += 1
            return
        except (IndexError, ZeroDivisionError, ValueError, OverflowError, ParserError) as e:
            self._runtime_error("ingress", e)
            return
        clone_req, resub_req = self.clone_req, self.resub_req
        # ingress-to-egress clone: the original frame, parsed again, with the preserved fields
        if clone_req is not None and clone_req[0] == I2E_CLONE:
            self._clone_i2e(port, frame, meta, clone_req, passes)
        if resub_req is not None:
            if passes >= MAX_REINJECT:
                self.stats["drops"] += 1
                return
            self._ingress_pass(port, frame, RESUBMIT, meta, resub_req[0], passes + 1)
            return
        # truncate() in ingress cuts the frame when it leaves
        if sm.f_mcast_grp:
            pkt = _Pkt(hdr, meta, sm, payload, frame, passes, port, self.trunc)
            reps = self.pre.replicas(sm.f_mcast_grp)
            for i, (eport, rid) in enumerate(reps):
                last = i == len(reps) - 1
                p = pkt if last else _Pkt(hdr.copy(), meta.copy(), sm.copy(), payload, frame, passes, port)
                p.trunc = pkt.trunc
                p.sm.f_egress_rid = rid
                p.sm.f_instance_type = REPLICATION
                self._enqueue(p, eport)
            if not reps:
                self.stats["drops"] += 1
            return
        if sm.f_egress_spec == self.drop_port:
            self.stats["drops"] += 1
            return
        sm.f_instance_type = NORMAL  # simple_switch: a unicast packet leaves ingress as NORMAL
        # _Pkt(...) and _enqueue, inlined (once per packet): the attributes in __init__'s order
        pkt = _new(_Pkt)
        pkt.hdr, pkt.meta, pkt.sm = hdr, meta, sm
        pkt.payload, pkt.frame, pkt.passes = payload, frame, passes
        pkt.trunc, pkt.in_port = self.trunc, port
        self._enq_seq += 1
        pkt.egress_port = sm.f_egress_spec
        pkt.priority = sm.f_priority
        pkt.length = sm.f_packet_length
        if not self.tm.enqueue(pkt, self._now):
            self.stats["tm_drops"] += 1

    def _clone_i2e(self, port: int, frame: bytes, meta, req: tuple, passes: int) -> None:
        sess = self.pre.session(req[1])
        if sess is None:
            return
        replicas, trunc = sess
        for eport, rid in replicas:
            h2, m2, s2 = self._fresh(port, frame, I2E_CLONE)
            saved = (self.clone_req, self.resub_req, self.recirc_req, self.trunc)
            payload = self._parse_into(frame, h2, m2, s2)
            self.clone_req, self.resub_req, self.recirc_req, self.trunc = saved
            self._dirty = True
            if payload is None:
                continue
            m2 = self._new_meta()
            if req[2] is not None:
                req[2](meta, m2)
            # simple_switch resets all metadata after the re-parse, standard_metadata too
            # (ingress_port, timestamps, parser/checksum errors read 0 in the clone's egress)
            s2 = self._new_sm()
            s2.f_packet_length = len(frame)
            s2.f_instance_type = I2E_CLONE
            s2.f_egress_rid = rid
            p = _Pkt(h2, m2, s2, payload, frame, passes, port)
            p.trunc = trunc
            self._enqueue(p, eport)

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
        sm.f_egress_port = qp.egress_port
        sm.f_egress_spec = 0
        sm.f_enq_timestamp = (qp.enq_timestamp // 1000) & 0xFFFFFFFF
        sm.f_enq_qdepth = qp.enq_qdepth & 0x7FFFF
        sm.f_deq_timedelta = (qp.deq_timedelta // 1000) & 0xFFFFFFFF
        sm.f_deq_qdepth = qp.deq_qdepth & 0x7FFFF
        sm.f_egress_global_timestamp = (start // 1000) & 0xFFFFFFFFFFFF
        if self._dirty:
            self._reset_flags()
        self.plen = sm.f_packet_length
        self.payload = p.payload
        hdr, meta = p.hdr, p.meta
        try:
            self._egress(hdr, meta, sm)
        except AssertFailed as e:
            self.log.append(str(e))
            self.stats["drops"] += 1
            return
        except (IndexError, ZeroDivisionError, ValueError, OverflowError, ParserError) as e:
            self._runtime_error("egress", e)
            return
        clone_req, recirc_req, trunc = self.clone_req, self.recirc_req, self.trunc
        if clone_req is not None and clone_req[0] == E2E_CLONE:
            sess = self.pre.session(clone_req[1])
            if sess is not None:
                for eport, rid in sess[0]:
                    m2 = self._new_meta()
                    if clone_req[2] is not None:
                        clone_req[2](meta, m2)
                    s2 = self._new_sm()  # BMv2 resets all metadata, standard_metadata too
                    s2.f_packet_length = sm.f_packet_length
                    s2.f_instance_type = E2E_CLONE
                    s2.f_egress_rid = rid
                    c = _Pkt(hdr.copy(), m2, s2, p.payload, p.frame, p.passes, p.in_port)
                    c.trunc = sess[1]
                    self._enqueue(c, eport)
        if sm.f_egress_spec == self.drop_port:
            self.stats["drops"] += 1
            return
        out: list[bytes] = []
        try:
            self._compute(hdr, meta)
            self._deparse(out, hdr)
        except (IndexError, ZeroDivisionError, ValueError, OverflowError, ParserError, struct.error) as e:
            self._runtime_error("deparser", e)
            return
        out.append(p.payload)
        data = b"".join(out)
        if trunc and len(data) > trunc:
            data = data[:trunc]
        n = p.trunc
        if n and len(data) > n:
            data = data[:n]
        if recirc_req is not None:
            if p.passes >= MAX_REINJECT:
                self.stats["drops"] += 1
                return
            self._ingress_pass(p.in_port, data, RECIRC, meta, recirc_req[0], p.passes + 1)
            return
        if self.cpu_port is not None and qp.egress_port == self.cpu_port and self._packet_in_cbs:
            md: dict[str, int] = {}
            if self._pkt_in_hdr is not None:
                nbits = sum(f.bitwidth for f in self._pkt_in_hdr.fields)
                nb = (nbits + 7) // 8
                v = int.from_bytes(data[:nb], "big") >> (nb * 8 - nbits)
                shift = nbits
                for f in self._pkt_in_hdr.fields:
                    shift -= f.bitwidth
                    md[f.name] = (v >> shift) & ((1 << f.bitwidth) - 1)
                data = data[nb:]
            for cb in self._packet_in_cbs:
                cb(data, md)
            self.stats["tx"] += 1
            return
        self.stats["tx"] += 1
        # the dataclass __init__ (frozen: one object.__setattr__ per field) costs more than
        # the rest of the egress bookkeeping; filling __dict__ builds the same object
        o = _new(OutputPacket)
        o.__dict__.update(port=qp.egress_port, data=data, time_ns=end)
        self._out.append(o)

    def receive(self) -> list[OutputPacket]:
        out, self._out = self._out, []
        return out

    def advance(self, dt_ns: int) -> None:
        if dt_ns < 0:
            raise P4SimError("time only moves forward")
        target = self._now + int(dt_ns)
        while True:
            nd = self.tm.next_departure()
            if nd is None or nd > target:
                break
            self._now = max(self._now, nd)
            self._service(self._now)
        self._now = target
        self._service(self._now)

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

    # ================================================================ externs

    def _counter(self, name: str) -> CounterArray:
        return self.counters[resolve_name(name, self.counters, "counter")]

    def counter_read(self, name: str, index: int | None):
        """(packets, bytes) of one cell; index None: a list over every cell."""
        c = self._counter(name)
        if index is None:
            return list(zip(c.pkts, c.bytes, strict=True))
        c.check(index)
        return c.pkts[index], c.bytes[index]

    def counter_write(self, name: str, index: int | None, packets: int, bytes_: int) -> None:
        c = self._counter(name)
        if index is None:
            c.pkts[:] = [int(packets)] * c.size
            c.bytes[:] = [int(bytes_)] * c.size
            return
        c.check(index)
        c.pkts[index], c.bytes[index] = int(packets), int(bytes_)

    def direct_counter_read(self, table: str, entry: TableEntry) -> tuple[int, int]:
        rec = self._table(table).find(entry)
        return rec.pkts, rec.bytes

    def direct_counter_write(self, table: str, entry: TableEntry, packets: int, bytes_: int) -> None:
        rec = self._table(table).find(entry)
        rec.pkts, rec.bytes = int(packets), int(bytes_)

    def _register(self, name: str) -> RegisterArray:
        return self.registers[resolve_name(name, self.registers, "register")]

    def register_read(self, name: str, index: int | None):
        """One cell's value; index None: a list of every cell."""
        r = self._register(name)
        if index is None:
            return list(r.cells)
        r.check(index)
        return r.cells[index]

    def register_write(self, name: str, index: int | None, value: int) -> None:
        r = self._register(name)
        if int(value) < 0 or int(value) > r.mask:
            raise P4SimError(f"register {r.name}: value {value:#x} does not fit in {r.width} bits")
        if index is None:
            r.cells[:] = [int(value)] * r.size
            return
        r.check(index)
        r.cells[index] = int(value)

    def register_reset(self, name: str) -> None:
        r = self._register(name)
        r.cells[:] = [0] * r.size

    def meter_set_rates(self, name: str, index: int, rates: list[tuple[float, int]]) -> None:
        m = self.meters[resolve_name(name, self.meters, "meter")]
        m.check(index)
        m.cells[index].set_rates(rates, self._now)

    def direct_meter_set_rates(self, table: str, entry: TableEntry, rates: list[tuple[float, int]]) -> None:
        rec = self._table(table).find(entry)
        if rec.meter is None:
            rec.meter = MeterState()
        rec.meter.set_rates(rates, self._now)

    def value_set_set(self, name: str, members: list[tuple[int, int]]) -> None:
        """Replace a parser value_set's members: (value, mask) pairs (mask all-ones = exact)."""
        vs = self.value_sets[resolve_name(name, self.value_sets, "value_set")]
        if len(members) > vs.size:
            raise P4SimError(f"value_set {vs.name} holds at most {vs.size} members")
        vs.members = [(int(v), int(m)) for v, m in members]

    def value_set_members(self, name: str) -> list[tuple[int, int]]:
        """A parser value_set's members, as (value, mask) pairs."""
        return list(self.value_sets[resolve_name(name, self.value_sets, "value_set")].members)

    def action_profile(self, name: str) -> Profile:
        """An action profile/selector: members, groups (see p4sim.runtime.action_profile)."""
        return self.action_profiles[resolve_name(name, self.action_profiles, "action profile")]

    # ================================================================ PRE

    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None:
        self.pre.group_set(group, replicas)

    def mc_group_delete(self, group: int) -> None:
        self.pre.group_delete(group)

    def clone_session_set(self, session: int, replicas: list[tuple[int, int]], truncate: int = 0) -> None:
        self.pre.session_set(session, replicas, truncate)

    def clone_session_delete(self, session: int) -> None:
        self.pre.session_delete(session)
