"""The Write RPC: planning (a batch's updates cut into runs of one shape by the fast path,
fastwrite/, or decoded one by one) and applying them to the switch's tables, action
profiles and packet replication engine, with one p4.v1.Error per update on failure."""

from __future__ import annotations

import gc
import logging
import weakref
from collections.abc import Callable
from typing import Any

import grpc

from p4rtproto import codec, errors, p4runtime_pb2
from p4rtproto.errors import RequestError, invalid
from p4sim import externs
from p4sim.model import TableEntry
from p4sim.server import fastwrite
from p4sim.server.pipeline import Pipeline
from p4sim.server.wire import _error_of

log = logging.getLogger("p4sim.server")


_UPDATE = p4runtime_pb2.Update


_replica_port = codec.replica_port


_replicas = codec.replicas


class WriteService:
    """The Write RPC of P4RuntimeServer (its state lives in the server)."""

    GC_PAUSE_UPDATES = 64

    # Entity oneof name -> (its write handler, its read handler); extern entities
    # (counters, meters, registers, digests...) are served by their module in p4sim.externs
    _ENTITY_HANDLERS = {
        "table_entry": ("_write_table_entry", "_read_tables"),
        "packet_replication_engine_entry": ("_write_pre", "_read_pre"),
    }

    def _plan_write(self, data: bytes) -> Any:
        """`WriteScanner.plan` of a request's bytes, or None (parse it whole): run by the
        deserializer, outside the lock (it reads the learned shapes only)."""
        if not self.fast_write:
            return None
        try:
            return self._scanner.plan(data)
        except Exception:  # a bug here must never change an answer: it only costs speed
            log.exception("fast write: cutting a request failed")
            return None

    def Write(
        self,
        request: Any,
        context: grpc.ServicerContext,
        data: bytes | None = None,
        plan: tuple | None = None,
    ) -> Any:
        """`data`: the bytes `request` was parsed from, when the transport has them:
        plain table-entry updates are then decoded from the bytes by shape
        (fastwrite/), the rest from the message; both give the same PlainEntry to the
        same checks, and a learned shape is bound to the pipeline's own decoder.
        `plan`: (items, n) when every update was cut by shape (`_plan_write`); `request`
        then has the other fields only."""
        try:
            with self._lock:
                self._check_device(request.device_id)
                election = request.election_id
                self._check_primary_id(
                    request.role,
                    (election.high << 64) | election.low
                    if request.HasField("election_id")
                    else None,
                )
                p = self._need_pipeline()
                if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                    raise RequestError(
                        "UNIMPLEMENTED", "p4sim supports only CONTINUE_ON_ERROR atomicity"
                    )
                # the batch is applied whole under the lock: a Read sees all of it or none. A
                # big batch holds the collector off until it is done: its new entries are
                # then looked at once, not once per 700 objects (~0.3 us per update)
                n = plan[1] if plan is not None else len(request.updates)
                pause = n >= self.GC_PAUSE_UPDATES and gc.isenabled()
                if pause:
                    gc.disable()
                try:
                    if plan is not None:
                        results, failed = self._write_planned(p, plan[0], n)
                    else:
                        results, failed = self._write_updates(p, request, data)
                finally:
                    if pause:
                        gc.enable()
        except Exception as exc:
            self._abort(context, _error_of(exc))
            return None
        if failed:
            self._abort_batch(context, results)
        return p4runtime_pb2.WriteResponse()

    def _write_updates(self, p: Pipeline, request: Any, data: bytes | None) -> tuple[list, bool]:
        """Every update of a checked WriteRequest in order, each with its own result
        (CONTINUE_ON_ERROR): (results, whether one failed)."""
        updates = request.updates
        n = len(updates)
        results: list[RequestError | None] = [None] * n
        failed = False
        spans = fastwrite.update_spans(data) if data is not None and self.fast_write else None
        if spans is not None and len(spans) != n:
            spans = None
        scanner, learn = self._scanner, fastwrite.LEARN_PER_REQUEST
        write_plain, apply, plain = self._write_plain, self._apply_update, codec.plain_from_proto
        write_shaped = self._write_shaped
        i = -1
        while i < n - 1:
            i += 1
            try:
                if spans is not None:
                    start, end = spans[i]
                    hit = scanner.lookup(data, start, end)  # type: ignore[arg-type]
                    if hit is not None:
                        shape, vals = hit
                        rows = scanner.run(shape, data, spans, i) if i < n - 1 else None  # type: ignore[arg-type]
                        if rows is None:
                            write_shaped(p, shape, self._bound(p, shape), vals)
                            continue
                        if self._write_run(p, shape, rows, i, results):
                            failed = True
                        i += len(rows) - 1
                        continue
                    if learn:
                        learn -= 1
                        self._learn(updates[i], data[start:end])  # type: ignore[index]
                update = updates[i]
                entity = update.entity
                utype = update.type
                if utype and entity.WhichOneof("entity") == "table_entry":  # the bulk of a batch
                    write_plain(p, utype, plain(entity.table_entry))
                else:
                    apply(p, update)
            except Exception as exc:
                results[i] = _error_of(exc)
                failed = True
        return results, failed

    def _write_planned(self, p: Pipeline, items: list, n: int) -> tuple[list, bool]:
        """`_write_updates` of a request cut by shape (`WriteScanner.plan`): the same
        steps, in the same order, without the parsed updates."""
        results: list[RequestError | None] = [None] * n
        failed = False
        write_shaped, bound = self._write_shaped, self._bound
        for i, shape, rows, vals in items:
            try:
                if rows is None:
                    write_shaped(p, shape, bound(p, shape), vals)
                elif self._write_run(p, shape, rows, i, results):
                    failed = True
            except Exception as exc:
                results[i] = _error_of(exc)
                failed = True
        return results, failed

    @staticmethod
    def _bound(p: Pipeline, shape: Any) -> Any:
        """The shape's builder for this pipeline (bound on first use)."""
        bound = shape.bound
        if bound is None or bound[0]() is not p.maps:  # weak: no old pipeline kept
            bound = shape.bound = (weakref.ref(p.maps), fastwrite.bind(shape, p.maps, p))
        return bound[1]

    def _write_run(self, p: Pipeline, shape: Any, rows: list, i: int, results: list) -> bool:
        """Updates i, i+1, ... of one shape (`rows`: their values): in bulk when the
        builder can and none would fail, else one by one, each with its own result in
        `results`; True when one failed."""
        build = self._bound(p, shape)
        bulk = getattr(build, "bulk", None)
        if bulk is not None and bulk(rows):
            return False
        failed = False
        for j, row in enumerate(rows, i):
            try:
                self._write_shaped(p, shape, build, row)
            except Exception as exc:
                results[j] = _error_of(exc)
                failed = True
        return failed

    def _write_shaped(self, p: Pipeline, shape: Any, build: Any, vals: Any) -> None:
        """One update decoded by shape (fastwrite/): stored by its bound builder, or
        through the reference checks (not a bound shape, or a value refused: they say why)."""
        built = build(vals) if build is not None else None
        if built is None:
            self._write_plain(p, shape.utype, shape.plain(vals))
        elif built is not fastwrite.DONE:  # DONE: stored by the table's pre-checked path
            self._apply_entry(p, shape.utype, built[0], built[1], b"", None)

    def _learn(self, update: Any, raw: bytes) -> None:
        try:
            self._scanner.learn(update, raw)
        except Exception:  # a learning bug must never change an answer: it only costs speed
            log.exception("fast write: learning a shape failed")

    def _abort_batch(
        self, context: grpc.ServicerContext, results: list[RequestError | None]
    ) -> None:
        status = errors.write_status(results)
        context.set_trailing_metadata(((errors.STATUS_DETAILS_KEY, status.SerializeToString()),))
        context.abort(grpc.StatusCode.UNKNOWN, status.message)

    def _entity_handler(self, which: str | None, slot: int, doing: str) -> Callable[..., Any]:
        names = self._ENTITY_HANDLERS.get(which or "")
        if names is not None:
            return getattr(self, names[slot])
        ext = externs.by_entity(which) if which else None
        if ext is None:
            raise RequestError(
                "UNIMPLEMENTED", f"p4sim does not support {doing} {which or 'an empty entity'}"
            )
        if slot == 0:
            return lambda p, utype, msg: ext.write(self, p, utype, which, msg)
        return lambda p, req: ext.read(self, p, which, req)

    def _apply_update(self, p: Pipeline, update: Any) -> None:
        utype = update.type
        if utype == _UPDATE.UNSPECIFIED:
            raise invalid("update type is UNSPECIFIED")
        entity = update.entity
        which = entity.WhichOneof("entity")
        handler = self._entity_handler(which, 0, "writing")
        handler(p, utype, getattr(entity, which))

    def _write_table_entry(self, p: Pipeline, utype: int, te: Any) -> None:
        self._write_plain(p, utype, codec.plain_from_proto(te))

    def _write_plain(self, p: Pipeline, utype: int, te: codec.PlainEntry) -> None:
        sw, maps = p.switch, p.maps
        if te.is_default:
            meta = maps.table(te.table_id)
            if utype != _UPDATE.MODIFY:
                raise invalid(f"table {meta.name}: the default entry can only be MODIFYed")
            if te.matches or te.priority:
                raise invalid(f"table {meta.name}: the default entry has no match and no priority")
            if meta.const_default:
                raise RequestError(
                    "PERMISSION_DENIED", f"table {meta.name}: the default action is const"
                )
            if te.action_id is not None or te.action_other is not None:
                _, entry = codec.decode_table_entry(maps, te, need_action=True)
                sw.table_set_default(meta.name, entry.action, entry.params)
            else:  # no action: back to the program's default (spec 9.1.3)
                tinfo = p.compiled.model.tables[meta.name]
                action = tinfo.default_action or "NoAction"
                ainfo = p.compiled.model.actions.get(action)
                names = [prm.name for prm in ainfo.params] if ainfo else []
                sw.table_set_default(
                    meta.name, action, dict(zip(names, tinfo.default_params, strict=False))
                )
            return
        meta, entry = codec.decode_table_entry(maps, te, need_action=utype != _UPDATE.DELETE)
        if meta.const_entries:
            raise RequestError(
                "PERMISSION_DENIED", f"table {meta.name} has const entries: it cannot be written"
            )
        self._apply_entry(p, utype, meta, entry, te.metadata, te.counter_data)

    def _apply_entry(
        self,
        p: Pipeline,
        utype: int,
        meta: codec.TableMeta,
        entry: TableEntry,
        metadata: bytes,
        counter_data: tuple[int, int] | None,
    ) -> None:
        """A decoded, checked entry into the table (both Write paths end here)."""
        sw = p.switch
        if utype == _UPDATE.INSERT:
            sw.table_add(entry)
        elif utype == _UPDATE.MODIFY:
            sw.table_modify(entry)
        elif utype == _UPDATE.DELETE:
            sw.table_delete(entry)
            if p.entry_metadata:
                p.entry_metadata.pop(codec.entry_key(entry), None)
            return
        else:
            raise invalid(f"unknown update type {utype}")
        if metadata or (utype == _UPDATE.MODIFY and p.entry_metadata):
            key = codec.entry_key(entry)
            if metadata:
                p.entry_metadata[key] = metadata
            else:
                p.entry_metadata.pop(key, None)
        if counter_data is not None and meta.direct_counter_id:
            sw.direct_counter_write(meta.name, entry, counter_data[0], counter_data[1])

    def _write_pre(self, p: Pipeline, utype: int, pre: Any) -> None:
        kind = pre.WhichOneof("type")
        sw = p.switch
        if kind == "multicast_group_entry":
            msg: Any = pre.multicast_group_entry
            key, store, name = (
                msg.multicast_group_id,
                p.mc_groups,
                f"multicast group {msg.multicast_group_id}",
            )
        elif kind == "clone_session_entry":
            msg = pre.clone_session_entry
            key, store, name = msg.session_id, p.clone_sessions, f"clone session {msg.session_id}"
        else:
            raise invalid("packet replication engine entry is empty")
        if key == 0:
            raise invalid(f"{name}: id 0 is not valid")
        if utype == _UPDATE.INSERT and key in store:
            raise RequestError("ALREADY_EXISTS", f"{name} already exists")
        if utype in (_UPDATE.MODIFY, _UPDATE.DELETE) and key not in store:
            raise RequestError("NOT_FOUND", f"{name} does not exist")
        if utype == _UPDATE.DELETE:
            if kind == "multicast_group_entry":
                sw.mc_group_delete(key)
            else:
                sw.clone_session_delete(key)
            del store[key]
            return
        self._check_replicas(msg.replicas, name)
        if kind == "multicast_group_entry":
            sw.mc_group_set(key, _replicas(msg))
        else:
            sw.clone_session_set(key, _replicas(msg), msg.packet_length_bytes)
        copy = type(msg)()
        copy.CopyFrom(msg)
        store[key] = copy

    @staticmethod
    def _check_replicas(replicas: Any, what: str) -> None:
        seen = set()
        for r in replicas:
            port = _replica_port(r)
            if (port, r.instance) in seen:
                raise invalid(f"{what}: replica (port {port}, instance {r.instance}) given twice")
            seen.add((port, r.instance))
