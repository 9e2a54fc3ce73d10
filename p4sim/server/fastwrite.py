"""A Write fast path: table-entry updates decoded from the request bytes by shape.

Reading one TableEntry through upb's Python wrappers costs about 4-5 us (every
sub-message read builds a wrapper); the entries of a batch mostly share one layout and
differ only in their value bytes. So the server keeps the bytes of a WriteRequest, cuts
them into its Updates (`update_spans`), and recognises each Update by its *shape*: the
serialized bytes with the value bytestrings (match values, masks, bounds, action
parameter values) cut out. A known shape gives the update's type and its
`codec.PlainEntry` by slicing the values into a template: no protobuf call at all.

Why this is exact (the same PlainEntry as `codec.plain_from_proto` on the parsed
message): a shape is learned from a real Update only when its bytes are exactly what
upb serializes for the message it parses to, and when replacing each value by another
of the same length changes exactly that value's bytes in the serialization. The
serialization of a bytes field depends on its length only, so every message that differs
from the learned one only in value contents (same lengths) serializes to the skeleton
with those values in the slots; parsing such bytes gives that message back. Anything
else (another layout, a value of another length, unknown top-level fields) misses and
takes the reference path: the result is the same, only slower. Validation is not done
here: the PlainEntry goes through the same checks as the reference path's.

The learned shapes are bounded (SHAPE_LIMIT, cleared when full; SHAPES_PER_LENGTH per
serialized length, the oldest replaced, so a lookup tries a few at most), only Updates of up to
LEARN_MAX_BYTES are learned, and a request may only teach LEARN_PER_REQUEST new ones: a
client sending a new layout per update costs a few small serializations per request,
never unbounded memory or time.
"""

from __future__ import annotations

import re
import struct
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from p4rtproto import p4runtime_pb2
from p4rtproto.codec import PlainEntry, Schema, TableMeta, decode_table_entry, entry_key
from p4rtproto.entities import Exact, Lpm, Optional_, TableEntry, Ternary
from p4sim.runtime import tables as _tables

SHAPE_LIMIT = 512
SHAPES_PER_LENGTH = 8  # a lookup tries at most this many shapes
LEARN_PER_REQUEST = 8
LEARN_MAX_BYTES = 1024  # a bigger Update (a huge value: refused anyway) is never learned
_FLIP = bytes(range(255, -1, -1))  # b ^ 0xFF for every byte, for bytes.translate

# WriteRequest's top-level fields as their one-byte tags: device_id (1, varint),
# role_id (2, varint), election_id (3, message), updates (4, message), atomicity
# (5, varint), role (6, string)
_VARINT_TAGS = frozenset((0x08, 0x10, 0x28))
_LEN_TAGS = frozenset((0x1A, 0x32))
_UPDATE_TAG = 0x22

_MATCH_SLOTS = {  # FieldMatch kind -> (sub-message field for a, for b or None)
    "exact": ("value", None),
    "lpm": ("value", None),
    "ternary": ("value", "mask"),
    "range": ("low", "high"),
    "optional": ("value", None),
}


def _varint(data: bytes, i: int) -> tuple[int, int]:
    x = data[i]
    if x < 0x80:
        return x, i + 1
    value, shift = x & 0x7F, 7
    i += 1
    while True:
        x = data[i]
        value |= (x & 0x7F) << shift
        i += 1
        if x < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _lead(s: bytes, b: bytes) -> int:
    """How many of the first bytes of `s` are the byte `b` (one C call)."""
    return len(s) - len(s.lstrip(b))


_TAG = bytes((_UPDATE_TAG,))
_compiled = _tables.COMPILED  # the compiled write path's module, or None (p4sim/runtime/compiled_write.py)


def _column_run(data: bytes, r0: int, stride: int, kmax: int, checks: Sequence[tuple[int, bytes]]) -> int:
    """How many consecutive records of `stride` bytes from data[r0] (at most kmax) hold every
    (offset, byte) of `checks`. Each check's column is one strided slice (bytes.count says
    whether it all matches, lstrip where it first fails: lstrip calls memchr per byte), in
    windows of 64 records growing 8x: the work is at most 64 records plus 8x the run found,
    never kmax (a hostile request of many short runs costs linear time, not quadratic).
    With the compiled write path, one C loop that stops at the first failing record."""
    if _compiled is not None:
        got = _compiled.column_run(data, r0, stride, kmax, checks)
        if got is not None:
            return got
    return _column_run_py(data, r0, stride, kmax, checks)


def _column_run_py(data: bytes, r0: int, stride: int, kmax: int, checks: Sequence[tuple[int, bytes]]) -> int:
    """`_column_run` in Python (the reference)."""
    done, want = 0, min(kmax, 64)
    while True:
        n = want - done
        base = r0 + done * stride
        for off, b in checks:
            p = base + off
            col = data[p:p + n * stride:stride]  # this byte of records done..done+n-1
            if col.count(b) != n:
                n = _lead(col, b)
                if n == 0:
                    break
        done += n
        if done < want or done == kmax:
            return done
        want = min(kmax, want * 8)


def _same_length_run(data: bytes, i: int, ln: int) -> int:
    """How many consecutive records tag, length byte `ln`, then ln bytes, start at data[i]
    (a run of Updates of one length under 128, as a controller's batch is): the tag and
    length columns checked at once (`_column_run`), no Python step per record."""
    stride = ln + 2
    return _column_run(data, i, stride, (len(data) - i) // stride, ((0, _TAG), (1, bytes((ln,)))))


def update_runs(data: bytes, others: list[tuple[int, int]] | None = None) -> list[tuple[int, int, int, int]] | None:
    """The Updates of a serialized WriteRequest, in order, as runs: (start, length, k,
    stride) is k consecutive Updates of `length` bytes each, each behind the same tag and
    length bytes, the first one's bytes at data[start:start + length], the next ones
    `stride` bytes further each (no tuple per Update: a controller's batch is a few runs).
    None when the top level holds anything else than WriteRequest's fields (the caller
    then uses the parsed message only). With `others`, the (start, end) of every other
    top-level field, its tag included, is appended to it. `data` need not be valid:
    whatever does not cut into whole fields of known tags ending exactly at its end gives
    None."""
    runs = []
    i, n = 0, len(data)
    try:
        while i < n:
            tag = data[i]
            f0 = i
            i += 1
            if tag == _UPDATE_TAG:
                ln = data[i]
                if ln < 0x80:  # Updates under 128 bytes: the common case, a run of one length at once
                    k = _same_length_run(data, f0, ln)
                    if k == 0:
                        return None  # cut short
                    runs.append((i + 1, ln, k, ln + 2))
                    i = f0 + k * (ln + 2)
                    continue
                ln, i = _varint(data, i)
                stride = i - f0 + ln
                if f0 + stride > n:
                    return None  # cut short
                # the next Updates behind the same tag and length bytes (no Python step each)
                k = _column_run(data, f0, stride, (n - f0) // stride, _run_checks(data[f0:i], ()))
                runs.append((i, ln, k, stride))
                i = f0 + k * stride
            elif tag in _VARINT_TAGS:
                _, i = _varint(data, i)
                if others is not None:
                    others.append((f0, i))
            elif tag in _LEN_TAGS:
                ln, i = _varint(data, i)
                i += ln
                if others is not None:
                    others.append((f0, i))
            else:
                return None
    except (IndexError, ValueError):
        return None
    return runs if i == n else None


def update_spans(data: bytes, others: list[tuple[int, int]] | None = None) -> list[tuple[int, int]] | None:
    """(start, end) of every Update in a serialized WriteRequest, in order (`update_runs`,
    one tuple per Update), or None as `update_runs`."""
    runs = update_runs(data, others)
    if runs is None:
        return None
    return [(s, s + ln) for start, ln, k, stride in runs for s in range(start, start + k * stride, stride)]


class _Shape:
    """One learned layout: `fixed` are (offset, bytes) pieces the update must hold,
    `slots` the (offset, length) of each value, in the order the template takes them.
    `rx` is the same layout as one regular expression (the fixed pieces as literals, each
    value a group of exactly its length), `groups` the group of each slot: one C call
    checks an Update and cuts its values out. `checks` are the (offset, byte) of every
    fixed byte of `head` + the Update, for `run`."""

    __slots__ = ("fixed", "slots", "rx", "groups", "utype", "table_id", "matches", "action_id", "params", "priority",
                 "action_other", "bound", "head", "checks", "row")

    def __init__(self, fixed: tuple, slots: tuple, utype: int, plain: PlainEntry,
                 match_slots: list[tuple[int | None, int | None]], param_slots: list[int | None]) -> None:
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
        self.matches = tuple((fid, kind, (sa, a), (sb, b))
                             for (fid, kind, a, b), (sa, sb) in zip(plain.matches, match_slots, strict=True))
        self.params = tuple((pid, (sv, v)) for (pid, v), sv in zip(plain.params, param_slots, strict=True))
        self.bound: tuple[Any, Any] | None = None  # (weakref to the schema, bind()'s builder) of the last pipeline

    def plain(self, vals: Sequence[bytes]) -> PlainEntry:
        matches = [(fid, kind, a if sa is None else vals[sa], b if sb is None else vals[sb])
                   for fid, kind, (sa, a), (sb, b) in self.matches]
        params = [(pid, v if sv is None else vals[sv]) for pid, (sv, v) in self.params]
        return PlainEntry(self.table_id, matches, self.action_id, params, self.action_other, self.priority)


def _pattern(fixed: tuple, slots: tuple) -> tuple[re.Pattern[bytes], tuple[int, ...] | None]:
    """(regex, groups) of a layout: the regex fullmatches exactly the byte strings of the
    layout's length that hold every fixed piece at its offset (re.S: a value byte may be
    any byte); groups[j] is slot j's group number, None when the groups are in slot order."""
    pieces = sorted([(off, re.escape(piece)) for off, piece in fixed]
                    + [(off, b"(.{%d})" % n) for off, n in slots])
    by_offset = sorted(range(len(slots)), key=lambda j: slots[j][0])
    groups = [0] * len(slots)
    for g, j in enumerate(by_offset):
        groups[j] = g + 1
    return re.compile(b"".join(p for _, p in pieces), re.S), None if by_offset == sorted(by_offset) else tuple(groups)


def varint_bytes(n: int) -> bytes:
    """n as a protobuf base-128 varint (the server's hand-built messages use it too)."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _run_checks(head: bytes, fixed: tuple) -> tuple[tuple[int, bytes], ...]:
    """(offset, byte) of every byte a record `head` + Update of the layout must hold (the
    head's, then each fixed piece's): `run` checks each across a whole run at once."""
    h = len(head)
    return (tuple((j, head[j:j + 1]) for j in range(h))
            + tuple((h + off + j, piece[j:j + 1]) for off, piece in fixed for j in range(len(piece))))


def _row_struct(head: bytes, fixed: tuple, slots: tuple) -> struct.Struct:
    """A struct of one `head` + Update of the layout: its values (bytes) in offset order."""
    pieces = sorted([(off, b"%dx" % len(piece)) for off, piece in fixed] + [(off, b"%ds" % n) for off, n in slots])
    return struct.Struct(b">%dx" % len(head) + b"".join(p for _, p in pieces))


def _flip(value: bytes) -> bytes:
    return value.translate(_FLIP)


def _cut_rows(sh: _Shape, data: bytes, r0: int, stride: int, k: int) -> list[Sequence[bytes]]:
    """The value bytes (slot order) of the k records of `sh` from data[r0], `stride` apart."""
    rows: list = list(sh.row.iter_unpack(memoryview(data)[r0:r0 + k * stride]))
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

    def run(self, sh: _Shape, data: bytes, spans: Sequence[tuple[int, int]], i: int) -> list[Sequence[bytes]] | None:
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
        k = _column_run(data, r0, stride, min(len(spans) - i, (len(data) - r0) // stride), sh.checks)
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
        if update.type not in (_INSERT, _MODIFY, _DELETE) or update.entity.WhichOneof("entity") != "table_entry":
            return
        te = update.entity.table_entry
        if (te.is_default_action or te.metadata or te.idle_timeout_ns or te.HasField("counter_data")
                or te.HasField("meter_config") or te.HasField("meter_counter_data") or te.HasField("time_since_last_hit")):
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
            if diff != list(range(off, off + len(value))) or raw[off:off + len(value)] != value:
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

        shape = _Shape(tuple(fixed), tuple(offsets), update.type, plain_from_proto(te), match_slots, param_slots)
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

# A builder returns None (a value refused: the reference checks say why), (table, entry)
# for the apply stage, or DONE when it has stored the update itself through the table's
# pre-checked entry points (bind() with a pipeline)
DONE = True
Builder = Callable[[Sequence[bytes]], "tuple[TableMeta, TableEntry] | bool | None"]


def _bind_exact1(meta: TableMeta, spec: tuple, param: tuple | None, action: str, priority: int) -> Builder:
    """bind()'s builder for the commonest shape, one exact field and at most one
    parameter (an L2 table), without the loops: the same checks."""
    kname, _, kwidth, kslot, _ = spec
    table = meta.name
    from_bytes = int.from_bytes
    if param is None:
        def build0(vals: Sequence[bytes]) -> tuple[TableMeta, TableEntry] | None:
            v = from_bytes(vals[kslot], "big")
            if v >> kwidth:
                return None
            return meta, TableEntry(table, {kname: Exact(v)}, action, {}, priority)
        return build0
    pname, pwidth, pslot = param

    def build1(vals: Sequence[bytes]) -> tuple[TableMeta, TableEntry] | None:
        v = from_bytes(vals[kslot], "big")
        a = from_bytes(vals[pslot], "big")
        if v >> kwidth or a >> pwidth:
            return None
        return meta, TableEntry(table, {kname: Exact(v)}, action, {pname: a}, priority)
    return build1


def _checked_table(pipeline: Any, meta: TableMeta) -> Any:
    """The pipeline's runtime Table of `meta` when its pre-checked entry points stand for the
    reference's apply stage: p4sim's own Switch (its table_add/modify/delete only find the
    table) and a plain Table, not a subclass with behaviour of its own; else None."""
    from p4sim.runtime.switch import Switch
    from p4sim.runtime.tables import Table

    sw = getattr(pipeline, "switch", None)
    cls = type(sw)
    if not isinstance(sw, Switch) or any(getattr(cls, n) is not getattr(Switch, n)
                                         for n in ("_table", "table_add", "table_modify", "table_delete")):
        return None
    try:
        t = sw._table(meta.name)
    except Exception:
        return None
    if type(t) is not Table or t.name != meta.name or t.const_entries:
        return None
    return t


def _bind_checked(shape: _Shape, pipeline: Any, meta: TableMeta, ref: TableEntry, specs: list,
                  params: list, fallback: Builder) -> Builder | None:
    """A builder that stores the update itself, through the table's pre-checked entry
    points (`Table.insert_checked` and friends): it makes the value checks of `fallback`
    (the same), then builds the canonical key as `Table._canon` does and the action index
    and arguments as `Table._entry_action` does. Bound only when every check of those two
    that does not depend on the values passes for this shape (all key fields given, in
    the table's key order, with its kinds and widths; the action one of the table's,
    allowed in an entry, its parameters in order with their widths; a priority > 0 where
    the table needs one): the rest is the table's state (duplicate, missing, full,
    const), which the entry points check with `add`'s messages. After a MODIFY or DELETE
    the entry's metadata goes, as in the apply stage (`_drop_metadata`).
    The table and the pipeline are held weakly: a shape never keeps an old switch alive."""
    t = _checked_table(pipeline, meta)
    if t is None or shape.utype not in (_INSERT, _MODIFY, _DELETE):
        return None
    if (tuple(sp[0] for sp in specs) != t.key_names or tuple(sp[1] for sp in specs) != t.kinds
            or tuple(sp[2] for sp in specs) != t.widths):
        return None
    if t.needs_priority and shape.priority <= 0:
        return None
    prio = shape.priority if t.needs_priority else 0
    utype = shape.utype
    aid = 0
    if utype != _DELETE:
        found = t.action_index.get(ref.action)
        if found is None:
            return None
        spec = t.actions[found]
        if spec.scope == "DEFAULT_ONLY" or [(n, w) for n, w, _ in params] != list(spec.params):
            return None
        aid = found
    tref, pref = weakref.ref(t), weakref.ref(pipeline)
    from_bytes = int.from_bytes
    if len(specs) == 1 and specs[0][1] == "exact" and len(params) <= 1:
        _, _, kwidth, kslot, _ = specs[0]
        pwidth, pslot = (params[0][1], params[0][2]) if params else (0, None)
        compiled = _compiled

        def build_exact1(vals: Sequence[bytes]) -> tuple[TableMeta, TableEntry] | bool | None:
            v = from_bytes(vals[kslot], "big")
            if v >> kwidth:
                return None
            if pslot is None:
                args: tuple = ()
            else:
                a = from_bytes(vals[pslot], "big")
                if a >> pwidth:
                    return None
                args = (a,)
            table = tref()
            if table is None:
                return fallback(vals)
            if utype == _INSERT:
                table.insert_exact1_checked(v, aid, args)
                return DONE
            p = pref()
            md = p.entry_metadata if p is not None else None
            if utype == _DELETE:
                table.delete_checked((v,))
            else:
                table.modify_checked((v,), aid, args)
            if md:
                _drop_metadata(md, fallback(vals))
            return DONE

        def bulk_exact1(rows: Sequence[Sequence[bytes]]) -> bool:
            """A whole run of this shape's updates: True when all were stored, False when
            nothing was (a value or a state check would refuse one: one by one then)."""
            table = tref()
            if table is None:
                return False
            if compiled is not None:  # the same values, decoded in C (p4sim/runtime/_write.pyx)
                if type(rows) is RunRows:  # straight from the request's bytes: no rows cut
                    koff, klen = rows.slot(kslot)
                    poff, plen = rows.slot(pslot) if pslot is not None else (-1, 0)
                    got = compiled.exact1_run_values(rows.data, rows.r0, rows.stride, rows.k, koff, klen, kwidth,
                                                     poff, plen, pwidth)
                else:
                    got = compiled.exact1_values(rows, kslot, kwidth, -1 if pslot is None else pslot, pwidth)
                if got is None:
                    return False
                vs, args = got
            else:
                vs = [from_bytes(r[kslot], "big") for r in rows]
                if not _fits(vs, kwidth):
                    return False
                if pslot is None:
                    args = [()] * len(vs)
                else:
                    ps = [from_bytes(r[pslot], "big") for r in rows]
                    if not _fits(ps, pwidth):
                        return False
                    args = [(a,) for a in ps]
            if utype == _INSERT:
                return table.insert_exact1_many(vs, aid, args)
            done = table.delete_exact1_many(vs) if utype == _DELETE else table.modify_exact1_many(vs, aid, args)
            p = pref()
            md = p.entry_metadata if p is not None else None
            if done and md:  # as one by one: each entry's metadata goes (distinct keys: any order)
                for r in rows:
                    _drop_metadata(md, fallback(r))
            return done
        build_exact1.bulk = bulk_exact1  # type: ignore[attr-defined]
        return build_exact1
    from p4sim.runtime.tables import _mask

    # per key: (kind code, width, value slot, prefix mask or mask slot, full mask, prefix length)
    keys = []
    for _, kind, width, sa, b in specs:
        full = _mask(width)
        if kind == "lpm":
            keys.append((1, width, sa, _mask(b) << (width - b), full, b))
        else:
            keys.append(({"exact": 0, "ternary": 2, "optional": 3}[kind], width, sa, b, full, 0))

    def build(vals: Sequence[bytes]) -> tuple[TableMeta, TableEntry] | bool | None:
        canon: list = []
        tests = []
        for code, width, sa, b, full, plen in keys:
            v = from_bytes(vals[sa], "big")
            if v >> width:
                return None
            if code == 0 or code == 3:  # exact, optional
                canon.append(v)
                tests.append((0, v, full))
            elif code == 1:  # lpm: no bits beyond the prefix, so v is its own masked value
                if v & ~b:
                    return None
                canon.append((v, plen))
                tests.append((0, v, b))
            else:  # ternary
                mask = from_bytes(vals[b], "big")
                if mask >> width or mask == 0 or v & ~mask:
                    return None
                canon.append((v, mask))
                tests.append((0, v, mask))
        args = []
        for _, width, sv in params:
            a = from_bytes(vals[sv], "big")
            if a >> width:
                return None
            args.append(a)
        if prio:
            canon.append(prio)
        table = tref()
        if table is None:
            return fallback(vals)
        key = tuple(canon)
        if utype == _INSERT:
            table.insert_checked(key, tuple(tests), aid, tuple(args), prio)
            return DONE
        p = pref()
        md = p.entry_metadata if p is not None else None
        if utype == _DELETE:
            table.delete_checked(key)
        else:
            table.modify_checked(key, aid, tuple(args))
        if md:
            _drop_metadata(md, fallback(vals))
        return DONE
    return build


def _fits(values: list[int], width: int) -> bool:
    """Every (non-negative) value fits in `width` bits: the builders' `v >> width` check."""
    return not max(values) >> width


def _drop_metadata(metadata: dict, built: Any) -> None:
    """What the apply stage does after a MODIFY or DELETE without metadata: the entry's
    stored metadata goes (`built`: the request's (table, entry) as the reference decodes
    it, keyed as the apply stage keys it)."""
    metadata.pop(entry_key(built[1]), None)


def bind(shape: _Shape, schema: Schema, pipeline: Any = None) -> Builder | None:
    """A shape's decoder for one pipeline: value bytes -> (table, TableEntry), or None
    when a value would be refused (the caller then runs the reference checks on
    `shape.plain(values)`, which say why). Returns None (no fast decoder) when the shape
    fails a check that does not depend on the values, or is of a kind not handled here.

    The checks that do not depend on the values (ids, kinds, scopes, priority, every
    parameter given once...) are the reference's own: `codec.decode_table_entry` runs on
    the shape with stand-in values that pass every value check. What the builder checks
    are exactly `codec.decode_match`'s and `decode_action`'s value checks; a refused
    value is never decided here. With `pipeline` (the one `schema` belongs to) the
    builder stores the update itself where it can (`_bind_checked`)."""
    dummy = []
    mask_slots = {sb for _, kind, _, (sb, _) in shape.matches if kind == "ternary"}
    for j, (_, n) in enumerate(shape.slots):
        dummy.append(bytes(n - 1) + b"\x01" if j in mask_slots else bytes(n))
    for _, kind, (sa, _), (sb, _) in shape.matches:
        if kind not in ("exact", "lpm", "ternary", "optional") or sa is None or (kind == "ternary" and sb is None):
            return None  # ranges, and empty values (refused anyway): the reference path
    if any(sv is None for _, (sv, _) in shape.params):
        return None
    try:
        meta, ref = decode_table_entry(schema, shape.plain(dummy), need_action=shape.utype != _DELETE)
    except Exception:
        return None
    if meta.const_entries:
        return None
    fields = meta.fields
    specs = []  # (name, kind, width, value slot, prefix length or mask slot)
    for fid, kind, (sa, _), (sb, b) in shape.matches:
        f = fields[fid]
        specs.append((f.name, kind, f.bitwidth, sa, sb if kind == "ternary" else b))
    params = []
    if ref.action:
        ainfo = schema.action(shape.action_id)
        for pid, (sv, _) in shape.params:
            pinfo = ainfo.params[pid]
            params.append((pinfo.name, pinfo.bitwidth, sv))
    fallback = _bind_entry(meta, ref, specs, params, shape.priority)
    if pipeline is not None:
        checked = _bind_checked(shape, pipeline, meta, ref, specs, params, fallback)
        if checked is not None:
            return checked
    return fallback


def _bind_entry(meta: TableMeta, ref: TableEntry, specs: list, params: list, priority: int) -> Builder:
    """bind()'s builder that gives (table, TableEntry) to the apply stage."""
    table, action = meta.name, ref.action
    from_bytes = int.from_bytes
    if len(specs) == 1 and specs[0][1] == "exact" and len(params) <= 1:
        return _bind_exact1(meta, specs[0], params[0] if params else None, action, priority)

    def build(vals: Sequence[bytes]) -> tuple[TableMeta, TableEntry] | None:
        match: dict[str, Any] = {}
        for name, kind, width, sa, b in specs:
            v = from_bytes(vals[sa], "big")
            if v >> width:
                return None
            if kind == "exact":
                match[name] = Exact(v)
            elif kind == "lpm":
                if v & ((1 << (width - b)) - 1):
                    return None
                match[name] = Lpm(v, b)
            elif kind == "ternary":
                mask = from_bytes(vals[b], "big")
                if mask >> width or mask == 0 or v & ~mask:
                    return None
                match[name] = Ternary(v, mask)
            else:
                match[name] = Optional_(v)
        args: dict[str, int] = {}
        for name, width, sv in params:
            v = from_bytes(vals[sv], "big")
            if v >> width:
                return None
            args[name] = v
        return meta, TableEntry(table=table, match=match, action=action, params=args, priority=priority)
    return build
