"""The Read RPC: table entries (with their counters and meters), counters in chunks,
registers, action profiles and the packet replication engine, streamed as ReadResponses."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import grpc

from p4rtproto import codec, p4runtime_pb2
from p4rtproto.errors import RequestError, invalid
from p4sim.model import TableEntry
from p4sim.server.pipeline import Pipeline
from p4sim.server.wire import _error_of


class ReadService:
    """The Read RPC of P4RuntimeServer (its state lives in the server)."""

    READ_CHUNK_BYTES = 256 << 10  # one ReadResponse; the switch lock is held while it is built

    # an upper bound of one counter cell in a ReadResponse: entity tag + length (3), the
    # Entity's counter_entry tag + length (2), counter_id (1 + 5), index (2 + 1 + 10), data
    # (2 + 2 * (1 + 10)): chunks of READ_CHUNK_BYTES // 48 cells stay within the bound
    _COUNTER_CELL_MAX_BYTES = 48
    _ZERO_CELL = (0, 0)

    def Read(self, request: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
        """Entities are streamed in ReadResponses of about READ_CHUNK_BYTES, each built
        under the lock and serialized after it. The lock is taken per chunk, not for
        the whole answer, so a wildcard Read of every counter never stalls
        the data plane or other RPCs; and a client that stops reading stops the Read
        (gRPC flow control), it does not make the server build the rest."""
        try:
            with self._lock:
                self._check_device(request.device_id)
                p = self._need_pipeline()
                readers = []
                for ent in request.entities:  # every request error comes before any data
                    it = self._read_entity(p, ent)
                    first = next(it, None)
                    readers.append(it if first is None else itertools.chain((first,), it))
        except Exception as exc:
            self._abort(context, _error_of(exc))
            return
        items = itertools.chain.from_iterable(readers)
        sent = False
        while True:
            resp = p4runtime_pb2.ReadResponse()
            size = 0
            ready = None  # a reader's own serialized chunk (counter arrays), sent after resp
            done = True
            try:
                with self._lock:
                    for e in items:
                        if type(e) is bytes:
                            ready, done = e, False
                            break
                        resp.entities.append(e)
                        size += e.ByteSize() + 4  # + the field's tag and length
                        if size >= self.READ_CHUNK_BYTES:
                            done = False
                            break
            except Exception as exc:
                self._abort(context, _error_of(exc))
                return
            if resp.entities or (not sent and ready is None):
                yield resp.SerializeToString()
                sent = True
            if ready is not None:
                yield ready
                sent = True
            if done or not context.is_active():
                return

    def _read_entity(self, p: Pipeline, ent: Any) -> Iterator[Any]:
        which = ent.WhichOneof("entity")
        reader = self._entity_handler(which, 1, "reading")
        return reader(p, getattr(ent, which))

    def _table_entries(
        self, p: Pipeline, req: Any
    ) -> list[tuple[codec.TableMeta, TableEntry | None]]:
        """The entries a (possibly wildcard) TableEntry selects; None stands for the default."""
        metas = [p.maps.table(req.table_id)] if req.table_id else list(p.maps.tables.values())
        out: list[tuple[codec.TableMeta, TableEntry | None]] = []
        for meta in metas:
            if req.is_default_action:
                out.append((meta, None))
                continue
            entries = p.switch.table_entries(meta.name)
            if req.table_id and len(req.match):
                _, want = codec.decode_table_entry(p.maps, req, need_action=False)
                wkey = codec.entry_key(want)
                entries = [e for e in entries if codec.entry_key(e) == wkey]
            elif req.table_id and req.priority:
                entries = [e for e in entries if e.priority == req.priority]
            out.extend((meta, e) for e in entries)
        return out

    def _encode_entry(
        self, p: Pipeline, meta: codec.TableMeta, e: TableEntry | None, with_counter: bool
    ) -> Any:
        if e is None:
            action, params = p.switch.table_default(meta.name)
            te = p4runtime_pb2.TableEntry(table_id=meta.id, is_default_action=True)
            if action:
                te.action.action.CopyFrom(codec.encode_action(p.maps, action, params))
            return p4runtime_pb2.Entity(table_entry=te)
        counter = None
        if with_counter and meta.direct_counter_id:
            counter = p.switch.direct_counter_read(meta.name, e)
        metadata = p.entry_metadata.get(codec.entry_key(e), b"") if p.entry_metadata else b""
        ent = p4runtime_pb2.Entity()
        codec.encode_table_entry(p.maps, meta, e, metadata, counter, out=ent.table_entry)
        return ent

    def _read_tables(self, p: Pipeline, req: Any) -> Iterator[Any]:
        with_counter = req.HasField("counter_data")
        for meta, e in self._table_entries(p, req):
            yield self._encode_entry(p, meta, e, with_counter)

    def counter_chunks(self, p: Pipeline, info: Any) -> Iterator[bytes]:
        """Every cell of one counter array as serialized ReadResponses of at most
        READ_CHUNK_BYTES. The cells are copied under the lock in one go (a list copy, far
        cheaper than encoding them), then encoded outside it. Most cells of a telemetry
        array are zero: a chunk of zeros is answered with its cached encoding (built once
        by protobuf, see Pipeline.zero_counter_chunk); a chunk with live cells is that
        encoding parsed, its live cells set, and serialized again: C work, not a Python
        loop over every cell. The Read loop sends these bytes as they are."""
        with self._lock:
            cells = p.switch.counter_read(info.name, None)
        step = max(1, self.READ_CHUNK_BYTES // self._COUNTER_CELL_MAX_BYTES)
        zero = self._ZERO_CELL
        for start in range(0, info.size, step):
            part = cells[start : start + step]
            if part.count(zero) == len(part):  # all zero: C compares, no Python loop
                yield p.zero_counter_chunk(info.id, start, len(part))
                continue
            live = [j for j, c in enumerate(part) if c != zero]
            resp = p4runtime_pb2.ReadResponse.FromString(
                p.zero_counter_chunk(info.id, start, len(part))
            )
            ents = resp.entities
            for j in live:
                d = ents[j].counter_entry.data
                d.packet_count, d.byte_count = part[j]
            yield resp.SerializeToString()

    def _read_pre(self, p: Pipeline, req: Any) -> Iterator[Any]:
        kind = req.WhichOneof("type")
        if kind == "multicast_group_entry":
            gid = req.multicast_group_entry.multicast_group_id
            if gid and gid not in p.mc_groups:
                raise RequestError("NOT_FOUND", f"multicast group {gid} does not exist")
            for k in [gid] if gid else sorted(p.mc_groups):
                e = p4runtime_pb2.Entity()
                e.packet_replication_engine_entry.multicast_group_entry.CopyFrom(p.mc_groups[k])
                yield (e)
        elif kind == "clone_session_entry":
            sid = req.clone_session_entry.session_id
            if sid and sid not in p.clone_sessions:
                raise RequestError("NOT_FOUND", f"clone session {sid} does not exist")
            for k in [sid] if sid else sorted(p.clone_sessions):
                e = p4runtime_pb2.Entity()
                e.packet_replication_engine_entry.clone_session_entry.CopyFrom(p.clone_sessions[k])
                yield (e)
        else:
            raise invalid("packet replication engine entry is empty")
