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

from p4rtproto import codec, p4runtime_pb2
from p4rtproto.client import Connection
from p4rtproto.errors import P4RuntimeError
from p4rtproto.schema import Schema

from .afpacket import AfPacketPorts
from .base import (
    CounterCell,
    CounterQuery,
    Entity,
    OutputPacket,
    PacketIn,
    Program,
    Query,
    RegisterQuery,
    TableQuery,
    Target,
    TargetError,
)


class P4RuntimeTarget(Target):
    name = "p4runtime"
    virtual_time = False

    def __init__(
        self,
        addr: str,
        device_id: int = 0,
        election_id: int = 1,
        port_map: Mapping[int, str] | None = None,
        cpu_port: int = 255,
        packet_out_port_field: str = "egress_port",
        credentials: Any = None,
        connect_timeout_s: float | None = None,
    ):
        try:
            self.conn = Connection(
                addr,
                device_id,
                election_id,
                credentials=credentials,
                connect_timeout_s=connect_timeout_s,
            )
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

    def _info(self) -> Schema:
        if self.conn.schema is None:
            try:
                self.conn.fetch_pipeline()
            except P4RuntimeError as exc:
                raise TargetError(f"no pipeline on the device: {exc}", exc.code) from None
        assert self.conn.schema is not None
        return self.conn.schema

    # -- entities
    def _entity(self, e: Entity) -> tuple[p4runtime_pb2.Entity, int]:
        """The protobuf entity and the update type that installs it."""
        try:
            return codec.encode_entity(self._info(), e)
        except P4RuntimeError as exc:
            raise TargetError(exc.message, exc.code) from None

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
            exists = [
                u
                for u, (code, _) in zip(updates, exc.updates, strict=True)
                if code == "ALREADY_EXISTS" and u.type == p4runtime_pb2.Update.INSERT
            ]
            other = [
                f"{code}: {msg}"
                for code, msg in exc.updates
                if code not in ("OK", "ALREADY_EXISTS")
            ]
            for u in exists:
                u.type = p4runtime_pb2.Update.MODIFY
            try:
                self.conn.write(exists)
            except P4RuntimeError as exc2:
                raise TargetError(str(exc2), exc2.code) from None
            if other:
                codes = {o.split(":", 1)[0] for o in other}
                raise TargetError(
                    f"P4Runtime write failed for some updates [{'; '.join(other)}]",
                    codes.pop() if len(codes) == 1 else "UNKNOWN",
                ) from None

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
                ent.table_entry.table_id = info.table(query.table).id
                return [codec.decode_entity(info, r) for r in self.conn.read([ent])]
            if isinstance(query, CounterQuery):
                c = info.counter(query.name)
                codec.fill_counter_entry(ent.counter_entry, c.id, query.index)
                return [
                    CounterCell(c.name, index, packets, nbytes)
                    for _, index, packets, nbytes in self.conn.read_counters([ent])
                ]
            if isinstance(query, RegisterQuery):
                codec.fill_register_entry(
                    ent.register_entry, info.register(query.name), query.index
                )
                return [codec.decode_entity(info, x) for x in self.conn.read([ent])]
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None
        raise TargetError(f"unknown query {query!r}", "INVALID_ARGUMENT")

    def counter_names(self) -> list[tuple[str, int]]:
        return [(c.name, c.size) for c in self._info().counters.values()]

    def counters(self) -> dict[str, list[tuple[int, int]]]:
        """Every counter in one Read (one wildcard entity per counter), parsed by protobuf's
        upb runtime (bench/p4runtime.py gives the figure for roce_switch.p4's 37,888 cells)."""
        counters = list(self._info().counters.values())
        ents = []
        for c in counters:
            ent = p4runtime_pb2.Entity()
            ent.counter_entry.counter_id = c.id
            ents.append(ent)
        try:
            cells = self.conn.read_counters(ents, nonzero_only=True)  # `out` starts at zero
        except P4RuntimeError as exc:
            raise TargetError(str(exc), exc.code) from None
        out = {c.name: [(0, 0)] * c.size for c in counters}
        by_id = {c.id: out[c.name] for c in counters}
        for cid, index, packets, nbytes in cells:
            row = by_id.get(cid)
            if row is not None and 0 <= index < len(row):
                row[index] = (packets, nbytes)
        return out

    def entity_names(self) -> dict[str, list[str]]:
        return self._info().names()

    # -- packets
    @property
    def min_frame(self) -> int | None:  # type: ignore[override]
        # ports on wires (AF_PACKET); a PacketOut carries any length
        return AfPacketPorts.MIN_FRAME if self.ports is not None else None

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
