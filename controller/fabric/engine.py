"""Many switches and hosts in one virtual-time loop.

Each switch is its own in-process p4sim `Target` running roce_switch.p4, programmed only
through the Target interface (entities from `controller.fabric.routing`). Hosts are
`controller.hosts.host.Host` NICs. A frame that leaves a node at t (its last bit) reaches
the node at the other end of the cable at t + delay; a switch receives it with
`target.send` at that instant.

Time: like `controller.scenarios.engine.Engine`, but every switch advances in lock step.
Whatever a switch emits while moving from t to t' (t' - t <= the smallest cable delay,
the lookahead) reaches its peer no earlier than t + delay >= t', so running all switches
to t' before handling the events due by t' never delivers anything late.

The port layer (`rx_filter`) sees every frame before a switch's MAC takes it: the PFC
watchdog (`controller.fabric.watchdog`) uses it to ignore pause frames for a queue in the
storm state, as a switch ASIC masks a queue's pause state.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from controller.hosts.dcqcn import DcqcnParams
from controller.hosts.host import Host, HostSpec
from controller.packets.build import pfc_frame
from controller.targets import open_target
from controller.targets.base import Program
from controller.targets.p4sim import P4SimTarget, compile_program
from controller.targets.program import DEFAULT_PROGRAM

from .routing import compile_switch, compute_routes, program_switch
from .topology import Topology

QPN_BASE = 0x100

_COMPILED: dict[str, object] = {}


def default_program() -> Program:
    """roce_switch.p4, compiled once per process and shared by every switch (a compiled
    program holds no state: each `Switch` instantiates its own tables and registers)."""
    key = str(DEFAULT_PROGRAM)
    if key not in _COMPILED:
        _COMPILED[key] = compile_program(key)
    prog = Program(DEFAULT_PROGRAM.stem, source=DEFAULT_PROGRAM)
    prog.compiled = _COMPILED[key]  # type: ignore[attr-defined]
    return prog


@dataclass
class Flow:
    name: str
    src: str
    dst: str
    qpn: int
    peer_qpn: int
    nbytes: int
    start_ns: int


@dataclass
class _Wire:
    kind: str  # "host" | "switch"
    prop_ns: int
    host: Host | None = None
    switch: str = ""
    port: int = 0


class Fabric:
    """A topology brought up: switches programmed, hosts attached, flows to start."""

    def __init__(
        self,
        topo: Topology,
        policy: dict,
        *,
        only: set[tuple[str, str]] | None = None,
        seed: int = 0,
        dcqcn: DcqcnParams | None = None,
        nic: dict | None = None,
    ):
        self.topo = topo
        self._now = 0
        # (time, seq, fn, args): fn(*args) then; a frame's delivery is (host.receive,
        # (frame,)) or (_to_switch, (sw, port, frame)): no closure made per frame
        self._heap: list[tuple[int, int, Callable, tuple]] = []
        self._seq = itertools.count()
        self.rx_filter: Callable[[str, int, bytes], bytes | None] | None = None
        # (switch, port, frame) -> False to discard a frame leaving a switch port
        self.tx_filter: Callable[[str, int, bytes], bool] | None = None
        self.frames_to_switches = 0
        self.frames_to_hosts = 0
        self.unattached = 0
        prog = default_program()
        routes = compute_routes(topo, only)
        self.routes = routes
        self.targets: dict[str, P4SimTarget] = {}
        self.programs = {}
        for sw in topo.switches.values():
            tgt = open_target("p4sim", program=prog, seed=seed * 1009 + sw.index)
            from controller.config import names_from_target

            sp = compile_switch(topo, sw.name, routes[sw.name], policy, names_from_target(tgt))
            program_switch(tgt, sp)
            self.targets[sw.name] = tgt
            self.programs[sw.name] = sp
        self.cfg_any = next(iter(self.programs.values())).config
        nic = dict(nic or {})
        self.hosts: dict[str, Host] = {}
        self._wires: dict[tuple[str, int], _Wire] = {}
        cfg = self.cfg_any
        for h in topo.hosts.values():
            lk = topo.peer(h.switch, h.port)
            assert lk is not None
            link = lk[2]
            spec = HostSpec(
                h.name,
                h.mac,
                h.ip,
                h.port,
                link_bps=link.bps,
                prop_ns=link.delay_ns,
                mtu=cfg.roce_mtu,
                dscp=int(nic.get("dscp", 26)),
                pcp=3,
                cnp_dscp=cfg.cnp_dscp,
                cnp_pcp=cfg.cnp_class,
                data_priority=int(nic.get("priority", 3)),
                np_enabled=cfg.cnp_mode == "host",
                rp_enabled=bool(nic.get("rp", True)),
                window=int(nic.get("window", 256)),
                timeout_ns=int(float(nic.get("timeout_us", 1000)) * 1000),
                ack_every=int(nic.get("ack_every", 16)),
                transport=str(nic.get("transport", "gbn")),
                gateway_mac=topo.switches[h.switch].router_mac,
            )
            host = Host(spec, self, dcqcn or DcqcnParams())
            self.hosts[h.name] = host
            self._wires[(h.switch, h.port)] = _Wire("host", link.delay_ns, host=host)

            def transmit(
                frame: bytes, t_end: int, _sw=h.switch, _p=h.port, _d=link.delay_ns
            ) -> None:  # (t_end >= now: at()'s clamp is moot)
                heapq.heappush(
                    self._heap, (t_end + _d, next(self._seq), self._to_switch, (_sw, _p, frame))
                )

            host.transmit = transmit
        for lk in topo.links:
            (a, pa), (b, pb) = lk.a, lk.b
            if a in topo.switches and b in topo.switches:
                self._wires[(a, pa)] = _Wire("switch", lk.delay_ns, switch=b, port=pb)
                self._wires[(b, pb)] = _Wire("switch", lk.delay_ns, switch=a, port=pa)
        self.lookahead = max(1, topo.min_delay_ns)
        self.flows: list[Flow] = []
        self._names = list(self.targets)
        self._index = {sw: i for i, sw in enumerate(self._names)}
        self._tms = {sw: tgt.switch.tm for sw, tgt in self.targets.items()}
        # the p4sim switches themselves, called directly per frame (P4SimTarget's send,
        # advance, receive and now only wrap them: an error class, a copy to bytes)
        self._sws = {sw: tgt.switch for sw, tgt in self.targets.items()}
        # per switch: port -> (prop_ns, host) or (prop_ns, None, peer switch, its port)
        self._out_wires: dict[str, dict[int, tuple]] = {sw: {} for sw in self._names}
        for (sw, port), w in self._wires.items():
            self._out_wires[sw][port] = (
                (w.prop_ns, w.host) if w.kind == "host" else (w.prop_ns, None, w.switch, w.port)
            )
        self._touched: set[str] = set()  # switches that may have output to deliver
        self._due: dict[str, int | None] = {}  # each switch's next departure
        self._dueheap: list[tuple[int, int]] = []  # (next departure, switch index), lazy

    # -- the Scheduler the hosts use
    def now(self) -> int:
        return self._now

    def at(self, t_ns: int, fn: Callable[[], None]) -> None:
        heapq.heappush(
            self._heap, (t_ns if t_ns > self._now else self._now, next(self._seq), fn, ())
        )

    def every(self, period_ns: int, fn: Callable[[], None], start_ns: int | None = None) -> None:
        """Call fn every period_ns of virtual time (samplers, the watchdog's poll)."""
        if period_ns < 1:
            raise ValueError("period must be >= 1 ns")

        def tick() -> None:
            fn()
            self.at(self._now + period_ns, tick)

        self.at(self._now + period_ns if start_ns is None else start_ns, tick)

    # -- traffic
    def add_flow(
        self,
        src: str,
        dst: str,
        nbytes: int,
        start_ns: int = 0,
        op: str = "WRITE",
        message: int = 1 << 20,
        name: str | None = None,
    ) -> Flow:
        if src not in self.hosts or dst not in self.hosts or src == dst:
            raise ValueError(f"flow {src}->{dst}: two different hosts of the topology")
        i = len(self.flows)
        f = Flow(
            name or f"{src}->{dst}",
            src,
            dst,
            QPN_BASE + 2 * i,
            QPN_BASE + 2 * i + 1,
            nbytes,
            start_ns,
        )
        s, d = self.hosts[src], self.hosts[dst]
        s.add_qp(f.qpn, f.peer_qpn, d.spec.ip, d.spec.mac)
        d.add_qp(f.peer_qpn, f.qpn, s.spec.ip, s.spec.mac)

        def post() -> None:
            left = nbytes
            while left > 0:
                n = min(message, left)
                s.qps[f.qpn].requester.post(op, n, self._now)
                left -= n
            s.kick()

        self.at(start_ns, post)
        self.flows.append(f)
        return f

    def spray(self, f: Flow, switch: str) -> None:
        """Spray the flow's packets round robin over `switch`'s ECMP group toward its
        destination (roce_switch.p4's spray_qp table: meant for WRITE-only QPs)."""
        from controller.config import names_from_target
        from controller.targets.base import Exact, TableEntry

        tgt = self.targets[switch]
        n = names_from_target(tgt)
        ip = int.from_bytes(bytes(int(x) for x in self.hosts[f.dst].spec.ip.split(".")), "big")
        tgt.write(
            [
                TableEntry(
                    n.table("spray_qp"),
                    {"meta.ip_dst": Exact(ip), "hdr.bth.dqpn": Exact(f.peer_qpn)},
                    n.action("spray"),
                )
            ]
        )

    def delivered(self, f: Flow) -> int:
        """In-order payload bytes the flow's receiver has taken so far."""
        return self.hosts[f.dst].qps[f.peer_qpn].responder.stats.bytes_received

    def stuck_nic(
        self,
        host: str,
        start_ns: int,
        period_ns: int = 20_000,
        tc: int = 3,
        quanta: int = 0xFFFF,
        stop_ns: int | None = None,
    ) -> None:
        """From start_ns on (until stop_ns, if given), `host`'s NIC sends XOFF for class tc
        every period_ns and never XON (a NIC whose receive path hung: the pause storm)."""
        h = self.topo.hosts[host]
        frame = pfc_frame(h.mac, {tc: quanta})
        prop = self._wires[(h.switch, h.port)].prop_ns

        def send() -> None:
            if stop_ns is not None and self._now >= stop_ns:
                return
            self.at(self._now + prop, lambda: self._to_switch(h.switch, h.port, frame))
            self.at(self._now + period_ns, send)

        self.at(start_ns, send)

    # -- frames
    def _to_switch(self, sw: str, port: int, frame: bytes) -> None:
        if self.rx_filter is not None:
            f2 = self.rx_filter(sw, port, frame)
            if f2 is None:
                return
            frame = f2
        self.frames_to_switches += 1
        # send_raw, inlined (once per frame)
        s = self._sws[sw]
        dt = self._now - s.now()
        if dt > 0:
            s.advance(dt)
        s.send(port, frame)
        self._touched.add(sw)

    def send_raw(self, sw: str, port: int, frame: bytes) -> None:
        """A frame into switch `sw`'s port now, past the port layer (the watchdog's XON)."""
        s = self._sws[sw]
        dt = self._now - s.now()
        if dt > 0:  # an idle switch is not advanced every step (run): catch it up first
            s.advance(dt)
        s.send(port, frame)
        self._touched.add(sw)

    def _deliver(self) -> None:
        touched = self._touched
        if not touched:
            return
        self._touched = set()
        heap, seq, now = self._heap, self._seq, self._now
        tx_filter = self.tx_filter
        push = heapq.heappush
        # in the targets' order: events at one instant keep their order (sorting the few
        # touched switches, not scanning all of them: a 128-host fat-tree has 80)
        tms, due, dueheap, index = self._tms, self._due, self._dueheap, self._index
        for sw in sorted(touched, key=index.__getitem__) if len(touched) > 1 else touched:
            # _set_due, inlined (once per touched switch per step)
            nd = tms[sw].next_departure()
            due[sw] = nd
            if nd is not None:
                push(dueheap, (nd, index[sw]))
            wires = self._out_wires[sw]
            for out in self._sws[sw].receive():
                w = wires.get(out.port)
                if w is None:
                    self.unattached += 1
                    continue
                t = out.time_ns + w[0]
                data = out.data
                if tx_filter is not None and not tx_filter(sw, out.port, data):
                    continue
                if t < now:  # (at()'s clamp)
                    t = now
                if w[1] is not None:
                    self.frames_to_hosts += 1
                    push(heap, (t, next(seq), w[1].receive, (data,)))
                else:
                    push(heap, (t, next(seq), self._to_switch, (w[2], w[3], data)))

    # -- the loop
    def _set_due(self, sw: str) -> None:
        """Note when switch `sw` next has a departure (after it was advanced or sent to,
        the only calls that change its traffic manager)."""
        nd = self._tms[sw].next_departure()
        self._due[sw] = nd
        if nd is not None:
            heapq.heappush(self._dueheap, (nd, self._index[sw]))

    def run(self, until_ns: int) -> None:
        """Lock step. A switch is advanced only when its traffic manager has a departure due
        by the step's end (a heap of next departures, refreshed whenever a switch is advanced
        or sent to); otherwise advancing it would only move its clock, which `send_raw` does
        before the next frame reaches it. The same departures happen at the same instants as
        when every switch is advanced every step."""
        heap = self._heap
        names = self._names
        look = self.lookahead
        self._dueheap = dueheap = []
        for sw in names:  # whatever was done to the switches between runs
            self._set_due(sw)
        due = self._due
        sws = self._sws
        heappop = heapq.heappop
        while True:
            t_next = heap[0][0] if heap else until_ns
            step_to = min(t_next, self._now + look, until_ns)
            while dueheap and dueheap[0][0] <= step_to:
                nd, i = heapq.heappop(dueheap)
                sw = names[i]
                if due[sw] != nd:  # stale: the switch moved on since
                    continue
                due[sw] = None  # _deliver notes its next one
                s = sws[sw]
                dt = step_to - s.now()
                if dt > 0:
                    s.advance(dt)
                self._touched.add(sw)
            if step_to > self._now:
                self._now = step_to
            now = self._now
            if self._touched:
                self._deliver()
            while heap and heap[0][0] <= now:
                _, _, fn, args = heappop(heap)
                fn(*args)
            if self._touched:
                self._deliver()  # what the events made the switches emit at once
            if self._now >= until_ns:
                for tgt in self.targets.values():  # every switch's clock at the fabric's
                    dt = self._now - tgt.now()
                    if dt > 0:
                        tgt.advance(dt)
                return

    def run_for(self, dt_ns: int) -> float:
        """Run dt_ns of virtual time; the wall seconds it took."""
        t0 = time.perf_counter()
        self.run(self._now + dt_ns)
        return time.perf_counter() - t0

    # -- observation
    def queue(self, sw: str, port: int, tc: int) -> int:
        return self.targets[sw].queue_depth(port, tc) or 0

    def switch_port_to(self, sw: str, peer: str) -> int:
        for port, (node, _pp, _lk) in self.topo.switch_ports(sw).items():
            if node == peer:
                return port
        raise KeyError(f"{sw} has no cable to {peer}")
