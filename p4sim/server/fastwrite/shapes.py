"""Write's fast path, step 2: the learned shapes of Updates (the module docstring of
p4sim.server.fastwrite says why a shape decodes exactly), looked up by serialized length, a
run of one shape cut from a request at once, and `WriteScanner.plan` of a whole request."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator, Sequence
from typing import Any

from p4rtproto import p4runtime_pb2
from p4rtproto.codec import PlainEntry
from p4sim.server.fastwrite.scan import (
    _UPDATE_TAG,
    _column_run,
    _compiled,
    _run_checks,
    update_runs,
    varint_bytes,
)

SHAPE_LIMIT = 512
SHAPES_PER_LENGTH = 8  # a lookup tries at most this many shapes
LEARN_PER_REQUEST = 8
LEARN_MAX_BYTES = 1024  # a bigger Update (a huge value: refused anyway) is never learned
_FLIP = bytes(range(255, -1, -1))  # b ^ 0xFF for every byte, for bytes.translate

_MATCH_SLOTS = {  # FieldMatch kind -> (sub-message field for a, for b or None)
    "exact": ("value", None),
    "lpm": ("value", None),
    "ternary": ("value", "mask"),
    "range": ("low", "high"),
    "optional": ("value", None),
}


class _Shape:
    """One learned layout: `fixed` are (offset, bytes) pieces the update must hold,
    `slots` the (offset, length) of each value, in the order the template takes them.
    `rx` is the same layout as one regular expression (the fixed pieces as literals, each
    value a group of exactly its length), `groups` the group of each slot: one C call
    checks an Update and cuts its values out. `checks` are the (offset, byte) of every
    fixed byte of `head` + the Update, for `run`."""

    __slots__ = (
        "fixed",
        "slots",
        "rx",
        "groups",
        "utype",
        "table_id",
        "matches",
        "action_id",
        "params",
        "priority",
        "action_other",
        "bound",
        "head",
        "checks",
        "row",
    )

    def __init__(
        self,
        fixed: tuple,
        slots: tuple,
        utype: int,
        plain: PlainEntry,
        match_slots: list[tuple[int | None, int | None]],
        param_slots: list[int | None],
    ) -> None:
        self.fixed = fixed
        self.slots = slots
        self.rx, self.groups = _pattern(fixed, slots)
        # a run of such Updates in a WriteRequest, each with its tag and length (`run`)
        length = max(off + len(piece) for off, piece in fixed) if fixed else 0
        length = max([length] + [off + n for off, n in slots])
        self.head = bytes([_UPDATE_TAG]) + varint_bytes(length)
        self.checks = _run_checks(self.head, fixed)
        self.row = _row_struct(self.head, fixed, slots)
        self.utype = utype
        self.table_id = plain.table_id
        self.priority = plain.priority
        self.action_id = plain.action_id
        self.action_other = plain.action_other
        # templates: a slot index where a value goes, else the learned constant
        self.matches = tuple(
            (fid, kind, (sa, a), (sb, b))
            for (fid, kind, a, b), (sa, sb) in zip(plain.matches, match_slots, strict=True)
        )
        self.params = tuple(
            (pid, (sv, v)) for (pid, v), sv in zip(plain.params, param_slots, strict=True)
        )
        self.bound: tuple[Any, Any] | None = (
            None  # (weakref to the schema, bind()'s builder) of the last pipeline
        )

    def plain(self, vals: Sequence[bytes]) -> PlainEntry:
        matches = [
            (fid, kind, a if sa is None else vals[sa], b if sb is None else vals[sb])
            for fid, kind, (sa, a), (sb, b) in self.matches
        ]
        params = [(pid, v if sv is None else vals[sv]) for pid, (sv, v) in self.params]
        return PlainEntry(
            self.table_id, matches, self.action_id, params, self.action_other, self.priority
        )


def _pattern(fixed: tuple, slots: tuple) -> tuple[re.Pattern[bytes], tuple[int, ...] | None]:
    """(regex, groups) of a layout: the regex fullmatches exactly the byte strings of the
    layout's length that hold every fixed piece at its offset (re.S: a value byte may be
    any byte); groups[j] is slot j's group number, None when the groups are in slot order."""
    pieces = sorted(
        [(off, re.escape(piece)) for off, piece in fixed]
        + [(off, b"(.{%d})" % n) for off, n in slots]
    )
    by_offset = sorted(range(len(slots)), key=lambda j: slots[j][0])
    groups = [0] * len(slots)
    for g, j in enumerate(by_offset):
        groups[j] = g + 1
    return re.compile(b"".join(p for _, p in pieces), re.S), None if by_offset == sorted(
        by_offset
    ) else tuple(groups)


def _row_struct(head: bytes, fixed: tuple, slots: tuple) -> struct.Struct:
    """A struct of one `head` + Update of the layout: its values (bytes) in offset order."""
    pieces = sorted(
        [(off, b"%dx" % len(piece)) for off, piece in fixed]
        + [(off, b"%ds" % n) for off, n in slots]
    )
    return struct.Struct(b">%dx" % len(head) + b"".join(p for _, p in pieces))


def _flip(value: bytes) -> bytes:
    return value.translate(_FLIP)


def _cut_rows(sh: _Shape, data: bytes, r0: int, stride: int, k: int) -> list[Sequence[bytes]]:
    """The value bytes (slot order) of the k records of `sh` from data[r0], `stride` apart."""
    rows: list = list(sh.row.iter_unpack(memoryview(data)[r0 : r0 + k * stride]))
    g = sh.groups
    if g is not None:
        rows = [[r[j - 1] for j in g] for r in rows]
    return rows


class RunRows:
    """A run's rows as `WriteScanner.run` gives them on the compiled write path: where
    they lie in the request, cut into value bytes (`_cut_rows`) only when a step needs
    them (one by one, metadata); a bulk write reads the values from `data` in C
    (`bulk_exact1`: `_write.exact1_run_values`), with `slot` giving each value's place."""

    __slots__ = ("sh", "data", "r0", "stride", "k", "_rows")

    def __init__(self, sh: _Shape, data: bytes, r0: int, stride: int, k: int) -> None:
        self.sh, self.data, self.r0, self.stride, self.k = sh, data, r0, stride, k
        self._rows: list[Sequence[bytes]] | None = None

    def slot(self, j: int) -> tuple[int, int]:
        """(offset in a record, length) of value slot j."""
        off, n = self.sh.slots[j]
        return len(self.sh.head) + off, n

    def rows(self) -> list[Sequence[bytes]]:
        if self._rows is None:
            self._rows = _cut_rows(self.sh, self.data, self.r0, self.stride, self.k)
        return self._rows

    def __len__(self) -> int:
        return self.k

    def __iter__(self) -> Iterator[Sequence[bytes]]:
        return iter(self.rows())

    def __getitem__(self, j: int) -> Sequence[bytes]:
        return self.rows()[j]


class WriteScanner:
    """Learned Update shapes, by serialized length (a few shapes per length at most)."""

    def __init__(self) -> None:
        self.shapes: dict[int, list[_Shape]] = {}
        self.count = 0
        self.hits = 0  # updates decoded by shape (what the tests check the path is taken by)

    def lookup(self, data: bytes, start: int, end: int) -> tuple[_Shape, Sequence[bytes]] | None:
        """(shape, value bytes in slot order) of the Update at data[start:end], or None.
        `shape.plain(values)` is its PlainEntry."""
        for sh in self.shapes.get(end - start, ()):
            m = sh.rx.fullmatch(data, start, end)
            if m is not None:
                self.hits += 1
                g = sh.groups
                return sh, m.groups() if g is None else [m.group(k) for k in g]
        return None

    def run(
        self, sh: _Shape, data: bytes, spans: Sequence[tuple[int, int]], i: int
    ) -> list[Sequence[bytes]] | None:
        """The value bytes (slot order) of updates i, i+1, ... of `spans` while they have
        shape `sh` (update i has it: `lookup` found it), at least two; else None. The run
        is the longest one of records of `sh`'s stride from update i in which every fixed
        byte is there: each fixed byte's column of the run is a strided slice of `data`
        (`_column_run`), so a run costs a few C calls per fixed byte, not a step per update; one struct call
        per update cuts its values. Why these are spans i..i+k-1: the top level was read in
        order by `update_spans`; each record starts with the tag and length of an Update of
        `sh`'s length, right where the Update before it ends, so it is the next Update."""
        start, end = spans[i]
        h = len(sh.head)
        stride = h + end - start
        r0 = start - h
        k = _column_run(
            data, r0, stride, min(len(spans) - i, (len(data) - r0) // stride), sh.checks
        )
        if k < 2 or spans[i + k - 1] != (r0 + (k - 1) * stride + h, r0 + k * stride):
            return None
        self.hits += k - 1
        if _compiled is not None:  # the compiled bulk reads the values from `data` itself
            return RunRows(sh, data, r0, stride, k)
        return _cut_rows(sh, data, r0, stride, k)

    def run_at(self, sh: _Shape, data: bytes, start: int, stride: int, kmax: int) -> Any:
        """`run` within a run of `update_runs`: the Update at data[start:] has shape `sh`
        (`lookup` found it) and is followed by kmax - 1 more behind the same tag and
        length bytes, `stride` apart; the value bytes of the longest run of them, from it,
        that has every fixed byte of `sh`, at least two; else None."""
        r0 = start - len(sh.head)
        if r0 < 0 or data[r0:start] != sh.head:  # (another length encoding than the shape's)
            return None
        k = _column_run(data, r0, stride, kmax, sh.checks)
        if k < 2:
            return None
        self.hits += k - 1
        if _compiled is not None:  # the compiled bulk reads the values from `data` itself
            return RunRows(sh, data, r0, stride, k)
        return _cut_rows(sh, data, r0, stride, k)

    def plan(self, data: bytes) -> tuple[list[tuple[int, _Shape, Any, Any]], int, bytes] | None:
        """A serialized WriteRequest whose every Update has a learned shape, cut without
        parsing it: (items, number of updates, the other top-level fields' bytes), where
        an item is (index of its first update, shape, rows of value bytes of a run as
        `run` gives them, or None, and the values of a lone update, or None). None when
        an Update has no shape or the top level cannot be cut (the caller parses it).

        Why a request cut here parses as upb parses it whole: the top level is read field
        by field as upb reads it (`update_spans`: known tags only, lengths ending exactly
        at the end); each Update's bytes are a learned shape's, which parse to that
        shape's message with these values (module docstring), a repeated message field's
        element being parsed on its own; so the request is valid exactly when the other
        fields, in their order, parse as a WriteRequest (the caller's upb call), and then
        it is that message plus these updates."""
        others: list[tuple[int, int]] = []
        runs = update_runs(data, others)
        if runs is None:
            return None
        hits0 = self.hits
        items: list[tuple[int, _Shape, Any, Any]] = []
        n = 0
        lookup, run_at = self.lookup, self.run_at
        for start, ln, k, stride in runs:
            j = 0
            while j < k:
                s = start + j * stride
                hit = lookup(data, s, s + ln)
                if hit is None:
                    self.hits = hits0  # (the counter says which updates were decoded by shape)
                    return None
                sh, vals = hit
                rows = run_at(sh, data, s, stride, k - j) if j < k - 1 else None
                if rows is None:
                    items.append((n + j, sh, None, vals))
                    j += 1
                else:
                    items.append((n + j, sh, rows, None))
                    j += len(rows)
            n += k
        return items, n, b"".join([data[a:b] for a, b in others])

    def learn(self, update: Any, raw: bytes) -> None:
        """Learn the shape of `update` (a parsed Update whose bytes are `raw`) if it is a
        plain table-entry write: INSERT/MODIFY/DELETE of a non-default entry, no metadata,
        no counter data, no idle timeout (those take the reference path)."""
        if len(raw) > LEARN_MAX_BYTES:
            return
        if (
            update.type not in (_INSERT, _MODIFY, _DELETE)
            or update.entity.WhichOneof("entity") != "table_entry"
        ):
            return
        te = update.entity.table_entry
        if (
            te.is_default_action
            or te.metadata
            or te.idle_timeout_ns
            or te.HasField("counter_data")
            or te.HasField("meter_config")
            or te.HasField("meter_counter_data")
            or te.HasField("time_since_last_hit")
        ):
            return
        if update.SerializeToString() != raw:
            return  # not upb's own layout (order, unknown fields, duplicates): no shape
        # every value field, as a path into a copy of the message
        fields: list[tuple[tuple, bytes]] = []  # (locator, value)
        match_slots: list[tuple[int | None, int | None]] = []
        for k, fm in enumerate(te.match):
            kind = fm.WhichOneof("field_match_type")
            names = _MATCH_SLOTS.get(kind or "")
            if names is None:
                return
            pair: list[int | None] = []
            for name in names:
                value = getattr(getattr(fm, kind), name) if name else b""
                if name and value:
                    pair.append(len(fields))
                    fields.append((("m", k, kind, name), value))
                else:
                    pair.append(None)
            match_slots.append((pair[0], pair[1]))
        param_slots: list[int | None] = []
        which = te.action.WhichOneof("type") if te.HasField("action") else None
        if which == "action":
            for k, prm in enumerate(te.action.action.params):
                if prm.value:
                    param_slots.append(len(fields))
                    fields.append((("p", k), prm.value))
                else:
                    param_slots.append(None)
        elif which is not None:
            return  # action profile forms: the reference path refuses them
        offsets: list[tuple[int, int]] = []
        for loc, value in fields:
            other = _UPDATE()
            other.CopyFrom(update)
            ote = other.entity.table_entry
            if loc[0] == "m":
                setattr(getattr(ote.match[loc[1]], loc[2]), loc[3], _flip(value))
            else:
                ote.action.action.params[loc[1]].value = _flip(value)
            alt = other.SerializeToString()
            if len(alt) != len(raw):
                return
            diff = [i for i in range(len(raw)) if raw[i] != alt[i]]
            off = diff[0]
            if diff != list(range(off, off + len(value))) or raw[off : off + len(value)] != value:
                return
            offsets.append((off, len(value)))
        order = sorted(range(len(offsets)), key=lambda j: offsets[j][0])
        fixed, pos = [], 0
        for j in order:
            off, ln = offsets[j]
            if off < pos:
                return
            if off > pos:
                fixed.append((pos, raw[pos:off]))
            pos = off + ln
        if pos < len(raw):
            fixed.append((pos, raw[pos:]))
        from p4rtproto.codec import plain_from_proto

        shape = _Shape(
            tuple(fixed),
            tuple(offsets),
            update.type,
            plain_from_proto(te),
            match_slots,
            param_slots,
        )
        if self.count >= SHAPE_LIMIT:
            self.shapes.clear()
            self.count = 0
        same = self.shapes.setdefault(len(raw), [])
        if len(same) >= SHAPES_PER_LENGTH:  # the oldest of this length makes room
            same.pop(0)
            self.count -= 1
        same.append(shape)
        self.count += 1


_UPDATE = p4runtime_pb2.Update
_INSERT, _MODIFY, _DELETE = _UPDATE.INSERT, _UPDATE.MODIFY, _UPDATE.DELETE
