"""A target reached over P4Runtime: p4sim-switch, BMv2 simple_switch_grpc, or hardware.

Packets: with a port map (switch port -> Linux interface, e.g. veths into a namespace
where BMv2 runs, or NICs cabled to a hardware switch) frames go in and out through
AF_PACKET sockets; without one, `send` is a PacketOut asking the program to emit the frame
on that port (its packet_out header's egress port field) and `receive` returns PacketIns
(frames the program punted to the CPU), reported on the CPU port.

Time is the wall clock: `advance(dt)` waits dt while collecting frames.
"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterable, Mapping
from typing import Any

from controller.p4rt import Connection, P4RuntimeError, decode_int, encode
from p4rtproto import p4runtime_pb2

from .afpacket import AfPacketPorts
from .base import (
    CloneSession,
    CounterCell,
    CounterQuery,
    DefaultAction,
    Entity,
    MeterRates,
    MulticastGroup,
    OutputPacket,
    PacketIn,
    Program,
    Query,
    RegisterCell,
    RegisterQuery,
    TableEntry,
    TableQuery,
    Target,
    TargetError,
)


class P4RuntimeTarget(Target):
    name = "p4runtime"
    virtual_time = False

    def __init__(self, addr: str, device_id: int = 0, election_id: int = 1,
                 port_map: Mapping[int, str] | None = None, cpu_port: int = 255,
                 packet_out_port_field: str = "egress_port",
                 credentials: Any = None, connect_timeout_s: float | None = None):
        try:
            self.conn = Connection(addr, device_id, election_id, credentials=credentials,
                                   connect_timeout_s=connect_timeout_s)
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None
        self.name = f"p4runtime:{addr}"
        self.cpu_port = cpu_port
        self.packet_out_port_field = packet_out_port_field
        self.ports = AfPacketPorts(port_map) if port_map else None
        self._rx: list[OutputPacket] = []
        self._pins: list[PacketIn] = []

    # -- pipeline
    def push(self, program: Program) -> None:
        try:
            self.conn.set_pipeline(program.p4info, program.device_config)
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None

    def _info(self):
        if self.conn.p4info is None:
            try:
                self.conn.fetch_pipeline()
            except P4RuntimeError as exc:
                raise TargetError(f"no pipeline on the device: {exc}", exc.code) from None
        return self.conn.p4info

    # -- entities
    def _entity(self, e: Entity) -> tuple[p4runtime_pb2.Entity, int]:
        """The protobuf entity and the update type that installs it."""
        info = self._info()
        ent = p4runtime_pb2.Entity()
        up = p4runtime_pb2.Update
        if isinstance(e, TableEntry):
            ent.table_entry.CopyFrom(info.table_entry(e))
            return ent, up.INSERT
        if isinstance(e, DefaultAction):
            t = info.table(e.table)
            ent.table_entry.table_id = t.preamble.id
            ent.table_entry.is_default_action = True
            ent.table_entry.action.action.CopyFrom(info.action_msg(e.action, e.params))
            return ent, up.MODIFY
        if isinstance(e, CounterCell):
            c = info.counter(e.name)
            ent.counter_entry.counter_id = c.preamble.id
            ent.counter_entry.index.index = e.index
            ent.counter_entry.data.packet_count = e.packets
            ent.counter_entry.data.byte_count = e.bytes
            return ent, up.MODIFY
        if isinstance(e, RegisterCell):
            r = info.register(e.name)
            ent.register_entry.register_id = r.preamble.id
            ent.register_entry.index.index = e.index
            ent.register_entry.data.bitstring = encode(e.value, r.type_spec.bitstring.bit.bitwidth)
            return ent, up.MODIFY
        if isinstance(e, CloneSession):
            cs = ent.packet_replication_engine_entry.clone_session_entry
            cs.session_id = e.session
            cs.packet_length_bytes = e.truncate
            for port in e.ports:
                cs.replicas.add(egress_port=port, instance=0)
            return ent, up.INSERT
        if isinstance(e, MulticastGroup):
            mg = ent.packet_replication_engine_entry.multicast_group_entry
            mg.multicast_group_id = e.group
            for i, port in enumerate(e.ports):
                mg.replicas.add(egress_port=port, instance=i)
            return ent, up.INSERT
        if isinstance(e, MeterRates):
            raise TargetError("meter configuration over P4Runtime is not implemented here",
                              "UNIMPLEMENTED")
        raise TargetError(f"unknown entity {e!r}", "INVALID_ARGUMENT")

    def write(self, entities: Iterable[Entity], modify_existing: bool = False) -> None:
        updates = []
        for e in entities:
            ent, kind = self._entity(e)
            updates.append(p4runtime_pb2.Update(type=kind, entity=ent))
        try:
            self.conn.write(updates)
        except P4RuntimeError as exc:
            if not modify_existing or len(exc.updates) != len(updates):
                raise TargetError(str(exc), exc.code) from None
            # The others were applied (CONTINUE_ON_ERROR): MODIFY the ones that exist.
            exists = [u for u, (code, _) in zip(updates, exc.updates, strict=True)
                      if code == "ALREADY_EXISTS" and u.type == p4runtime_pb2.Update.INSERT]
            other = [f"{code}: {msg}" for code, msg in exc.updates
                     if code not in ("OK", "ALREADY_EXISTS")]
            for u in exists:
                u.type = p4runtime_pb2.Update.MODIFY
            try:
                self.conn.write(exists)
            except P4RuntimeError as exc2:
                raise TargetError(str(exc2), exc2.code) from None
            if other:
                codes = {o.split(":", 1)[0] for o in other}
                raise TargetError(f"P4Runtime write failed for some updates [{'; '.join(other)}]",
                                  codes.pop() if len(codes) == 1 else "UNKNOWN") from None

    def delete(self, entities: Iterable[Entity]) -> None:
        updates = []
        for e in entities:
            ent, _ = self._entity(e)
            updates.append(p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE, entity=ent))
        try:
            self.conn.write(updates)
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None

    def read(self, query: Query) -> list:
        info = self._info()
        ent = p4runtime_pb2.Entity()
        try:
            if isinstance(query, TableQuery):
                ent.table_entry.table_id = info.table(query.table).preamble.id
                return [info.from_table_entry(r.table_entry) for r in self.conn.read([ent])]
            if isinstance(query, CounterQuery):
                c = info.counter(query.name)
                ent.counter_entry.counter_id = c.preamble.id
                if query.index is not None:
                    ent.counter_entry.index.index = query.index
                return [CounterCell(c.preamble.name, index, packets, nbytes)
                        for _, index, packets, nbytes in self.conn.read_counters([ent])]
            if isinstance(query, RegisterQuery):
                r = info.register(query.name)
                ent.register_entry.register_id = r.preamble.id
                if query.index is not None:
                    ent.register_entry.index.index = query.index
                return [RegisterCell(r.preamble.name, x.register_entry.index.index,
                                     decode_int(x.register_entry.data.bitstring))
                        for x in self.conn.read([ent])]
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None
        raise TargetError(f"unknown query {query!r}", "INVALID_ARGUMENT")

    def counter_names(self) -> list[tuple[str, int]]:
        info = self._info()
        return [(c.preamble.name, c.size) for c in info.info.counters]

    def counters(self) -> dict[str, list[tuple[int, int]]]:
        """Every counter in one Read (one wildcard entity per counter), parsed by protobuf's
        upb runtime (bench/p4runtime.py gives the figure for roce_switch.p4's 37,888 cells)."""
        counters = self._info().info.counters
        ents = []
        for c in counters:
            ent = p4runtime_pb2.Entity()
            ent.counter_entry.counter_id = c.preamble.id
            ents.append(ent)
        try:
            cells = self.conn.read_counters(ents)
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None
        out = {c.preamble.name: [(0, 0)] * c.size for c in counters}
        by_id = {c.preamble.id: out[c.preamble.name] for c in counters}
        for cid, index, packets, nbytes in cells:
            row = by_id.get(cid)
            if row is not None and 0 <= index < len(row):
                row[index] = (packets, nbytes)
        return out

    def entity_names(self) -> dict[str, list[str]]:
        i = self._info().info
        return {"tables": [t.preamble.name for t in i.tables],
                "actions": [a.preamble.name for a in i.actions],
                "registers": [r.preamble.name for r in i.registers],
                "counters": [c.preamble.name for c in i.counters]}

    # -- packets
    def send(self, port: int, frame: bytes) -> None:
        if self.ports is not None:
            self.ports.send(port, frame)
        else:
            self.packet_out(frame, {self.packet_out_port_field: port})

    def packet_out(self, frame: bytes, metadata: dict[str, int]) -> None:
        self._info()
        try:
            self.conn.packet_out(frame, metadata)
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None

    def _drain_packet_ins(self) -> None:
        while True:
            try:
                pkt = self.conn.packet_ins.get_nowait()
            except queue.Empty:  # drained; anything else is a bug worth seeing
                return
            meta = self.conn.packet_in_metadata(pkt)
            self._pins.append(PacketIn(bytes(pkt.payload), meta))
            if self.ports is None:
                self._rx.append(OutputPacket(self.cpu_port, bytes(pkt.payload), self.now()))

    def packet_in(self) -> list[PacketIn]:
        self._drain_packet_ins()
        out, self._pins = self._pins, []
        return out

    def receive(self) -> list[OutputPacket]:
        if self.ports is not None:
            for port, data in self.ports.poll(0):
                self._rx.append(OutputPacket(port, data, self.now()))
        self._drain_packet_ins()
        out, self._rx = self._rx, []
        return out

    # -- time
    def now(self) -> int:
        return time.monotonic_ns()

    def advance(self, dt_ns: int) -> None:
        end = time.monotonic() + dt_ns / 1e9
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            if self.ports is not None:
                for port, data in self.ports.poll(min(left, 0.05)):
                    self._rx.append(OutputPacket(port, data, self.now()))
            else:
                time.sleep(min(left, 0.05))

    def close(self) -> None:
        if self.ports is not None:
            self.ports.close()
        self.conn.close()


def is_root() -> bool:
    return os.geteuid() == 0
