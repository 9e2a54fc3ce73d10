"""Protobuf wire format for the P4Runtime hot paths (table writes, PacketOut, PacketIn).

The protobuf runtime pinned with p4runtime-shell (3.20) is pure Python on Python 3.11:
parsing one table-entry update costs about 200 us. These readers decode exactly the
messages that matter for throughput straight from the bytes (field numbers from
p4runtime.proto 1.4), and answer None for anything outside that subset so the caller
falls back to the generated classes: same semantics, only faster.
"""

from __future__ import annotations

from dataclasses import dataclass


class WireError(ValueError):
    """Bytes that are not a valid protobuf encoding."""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    if i >= len(buf):
        raise WireError("truncated varint")
    b = buf[i]
    if b < 0x80:
        return b, i + 1
    value, shift = b & 0x7F, 7
    while True:
        i += 1
        if i >= len(buf) or shift > 63:
            raise WireError("truncated varint")
        b = buf[i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i + 1
        shift += 7


def fields(buf: bytes, start: int = 0, end: int | None = None) -> list[tuple[int, int, object]]:
    """(field number, wire type, value): an int for varints, (start, end) for
    length-delimited fields, the raw bytes for fixed32/fixed64."""
    end = len(buf) if end is None else end
    out: list[tuple[int, int, object]] = []
    i = start
    while i < end:
        key, i = _varint(buf, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
            out.append((fn, 0, v))
        elif wt == 2:
            n, i = _varint(buf, i)
            if i + n > end:
                raise WireError("length-delimited field runs past the message")
            out.append((fn, 2, (i, i + n)))
            i += n
        elif wt == 1:
            out.append((fn, 1, buf[i : i + 8]))
            i += 8
        elif wt == 5:
            out.append((fn, 5, buf[i : i + 4]))
            i += 4
        else:
            raise WireError(f"unsupported wire type {wt}")
    if i != end:
        raise WireError("message runs past its end")
    return out


def _int32(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


@dataclass(slots=True)
class PlainEntry:
    """A TableEntry as plain Python values (what codec.decode_table_entry checks)."""

    table_id: int = 0
    # (field_id, kind, a, b): exact (value, None), lpm (value, prefix_len),
    # ternary (value, mask), range (low, high), optional (value, None)
    matches: list = None  # type: ignore[assignment]
    action_id: int | None = None
    params: list = None  # type: ignore[assignment]  # [(param_id, value)]
    action_other: str | None = None  # an action profile form, refused by the codec
    priority: int = 0
    is_default: bool = False
    idle_timeout_ns: int = 0
    metadata: bytes = b""
    counter_data: tuple[int, int] | None = None  # (packets, bytes)

    def __post_init__(self) -> None:
        if self.matches is None:
            self.matches = []
        if self.params is None:
            self.params = []


_MATCH_KINDS = {2: "exact", 3: "ternary", 4: "lpm", 6: "range", 7: "optional"}
# TableEntry fields the fast path understands; any other one sends the update to protobuf
_FAST_TE_FIELDS = {1, 2, 3, 4, 8, 9, 11}


def _bytes_field(buf: bytes, span: object) -> bytes:
    s, e = span  # type: ignore[misc]
    return buf[s:e]


def table_entry(buf: bytes, start: int, end: int) -> PlainEntry | None:
    te = PlainEntry()
    for fn, wt, v in fields(buf, start, end):
        if fn not in _FAST_TE_FIELDS:
            return None
        if fn == 1 and wt == 0:
            te.table_id = v  # type: ignore[assignment]
        elif fn == 2 and wt == 2:
            fid, kind, a, b = 0, None, b"", None
            s, e = v  # type: ignore[misc]
            for mfn, mwt, mv in fields(buf, s, e):
                if mfn == 1 and mwt == 0:
                    fid = mv  # type: ignore[assignment]
                elif mfn in _MATCH_KINDS and mwt == 2:
                    kind = _MATCH_KINDS[mfn]
                    ms, me = mv  # type: ignore[misc]
                    for kfn, kwt, kv in fields(buf, ms, me):
                        if kfn == 1 and kwt == 2:
                            a = _bytes_field(buf, kv)
                        elif kfn == 2 and kwt == 2:
                            b = _bytes_field(buf, kv)
                        elif kfn == 2 and kwt == 0 and kind == "lpm":
                            b = _int32(kv)  # type: ignore[arg-type]
                        else:
                            return None
                else:
                    return None
            if kind is None:
                return None
            if kind == "lpm" and b is None:
                b = 0
            te.matches.append((fid, kind, a, b))
        elif fn == 3 and wt == 2:
            s, e = v  # type: ignore[misc]
            for afn, awt, av in fields(buf, s, e):
                if afn == 1 and awt == 2:
                    te.action_id = 0
                    as_, ae = av  # type: ignore[misc]
                    for pfn, pwt, pv in fields(buf, as_, ae):
                        if pfn == 1 and pwt == 0:
                            te.action_id = pv  # type: ignore[assignment]
                        elif pfn == 4 and pwt == 2:
                            pid, pval = 0, b""
                            ps, pe = pv  # type: ignore[misc]
                            for qfn, qwt, qv in fields(buf, ps, pe):
                                if qfn == 2 and qwt == 0:
                                    pid = qv  # type: ignore[assignment]
                                elif qfn == 3 and qwt == 2:
                                    pval = _bytes_field(buf, qv)
                                else:
                                    return None
                            te.params.append((pid, pval))
                        else:
                            return None
                else:
                    return None
        elif fn == 4 and wt == 0:
            te.priority = _int32(v)  # type: ignore[arg-type]
        elif fn == 8 and wt == 0:
            te.is_default = bool(v)
        elif fn == 9 and wt == 0:
            te.idle_timeout_ns = _int32(v)  # type: ignore[arg-type]
        elif fn == 11 and wt == 2:
            te.metadata = _bytes_field(buf, v)
        else:
            return None
    return te


@dataclass(slots=True)
class WriteHeader:
    device_id: int = 0
    role: str = ""
    election_id: int | None = None
    atomicity: int = 0


def write_request(buf: bytes) -> tuple[WriteHeader, list[tuple[int, int, int]]]:
    """The request's header and its updates as (type, start, end) spans of `buf`."""
    head = WriteHeader()
    updates: list[tuple[int, int, int]] = []
    for fn, wt, v in fields(buf):
        if fn == 1 and wt == 0:
            head.device_id = v  # type: ignore[assignment]
        elif fn == 6 and wt == 2:
            head.role = _bytes_field(buf, v).decode("utf-8")  # UnicodeDecodeError: INVALID_ARGUMENT
        elif fn == 3 and wt == 2:
            s, e = v  # type: ignore[misc]
            high = low = 0
            for efn, ewt, ev in fields(buf, s, e):
                if efn == 1 and ewt == 0:
                    high = ev  # type: ignore[assignment]
                elif efn == 2 and ewt == 0:
                    low = ev  # type: ignore[assignment]
            head.election_id = (high << 64) | low
        elif fn == 4 and wt == 2:
            s, e = v  # type: ignore[misc]
            updates.append((0, s, e))
        elif fn == 5 and wt == 0:
            head.atomicity = v  # type: ignore[assignment]
    return head, updates


def update(buf: bytes, start: int, end: int) -> tuple[int, PlainEntry | None]:
    """(update type, the table entry) when the update is a plain table entry, else (type, None)."""
    utype = 0
    entity: tuple[int, int] | None = None
    for fn, wt, v in fields(buf, start, end):
        if fn == 1 and wt == 0:
            utype = v  # type: ignore[assignment]
        elif fn == 2 and wt == 2:
            entity = v  # type: ignore[assignment]
    if entity is None:
        return utype, None
    es, ee = entity
    ent_fields = fields(buf, es, ee)
    if len(ent_fields) != 1 or ent_fields[0][0] != 2 or ent_fields[0][1] != 2:
        return utype, None
    ts, te_ = ent_fields[0][2]  # type: ignore[misc]
    return utype, table_entry(buf, ts, te_)


def packet_out(buf: bytes) -> tuple[bytes, list[tuple[int, bytes]]] | None:
    """(payload, [(metadata_id, value)]) when the stream message is a PacketOut, else None.
    Walks the bytes directly (the per-packet path) rather than through fields()."""
    if buf[:1] != b"\x12":  # StreamMessageRequest.packet (field 2, length-delimited)
        return None
    n, i = _varint(buf, 1)
    end = i + n
    if end != len(buf):
        return None  # another field follows, or truncated: let protobuf judge it
    payload = b""
    metadata: list[tuple[int, bytes]] = []
    while i < end:
        key, i = _varint(buf, i)
        if key & 7 != 2:
            return None
        n, i = _varint(buf, i)
        j = i + n
        if j > end:
            raise WireError("length-delimited field runs past the message")
        if key == 0x0A:
            payload = buf[i:j]
        elif key == 0x12:
            mid, mval = 0, b""
            for mfn, mwt, mv in fields(buf, i, j):
                if mfn == 1 and mwt == 0:
                    mid = mv  # type: ignore[assignment]
                elif mfn == 2 and mwt == 2:
                    mval = _bytes_field(buf, mv)
            metadata.append((mid, mval))
        else:
            return None
        i = j
    return payload, metadata


def _put_varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _put_bytes(out: bytearray, fn: int, data: bytes) -> None:
    _put_varint(out, (fn << 3) | 2)
    _put_varint(out, len(data))
    out += data


def _varint_bytes(v: int) -> bytes:
    if v < 0x80:
        return _SMALL_VARINTS[v]
    out = bytearray()
    _put_varint(out, v)
    return bytes(out)


_SMALL_VARINTS = [bytes([v]) for v in range(0x80)]


def _length_delimited(tag: bytes, data: bytes) -> bytes:
    return tag + _varint_bytes(len(data)) + data


def packet_in(payload: bytes, metadata: list[tuple[int, bytes]]) -> bytes:
    """A serialized StreamMessageResponse carrying one PacketIn (on the per-packet path:
    plain bytes concatenation, no bytearray building)."""
    parts = [_length_delimited(b"\x0a", payload)]
    for mid, value in metadata:
        parts.append(_length_delimited(b"\x12", b"\x08" + _varint_bytes(mid) + _length_delimited(b"\x12", value)))
    return _length_delimited(b"\x12", b"".join(parts))


def _put_uint(out: bytearray, fn: int, v: int) -> None:
    if v:
        _put_varint(out, fn << 3)
        _put_varint(out, v)


def _msg(fn: int, body: bytes | bytearray) -> bytes:
    out = bytearray()
    _put_bytes(out, fn, bytes(body))
    return bytes(out)


def _counter_data(packets: int, bytes_: int) -> bytes:
    """A serialized CounterData{byte_count, packet_count}."""
    data = bytearray()
    _put_uint(data, 1, bytes_)
    _put_uint(data, 2, packets)
    return bytes(data)


def counter_entity(counter_id: int, index: int, packets: int, bytes_: int) -> bytes:
    """A serialized Entity{counter_entry{counter_id, index, data}} (reads of big counters)."""
    idx = bytearray()
    _put_uint(idx, 1, index)
    ce = bytearray()
    _put_uint(ce, 1, counter_id)
    _put_bytes(ce, 2, bytes(idx))
    _put_bytes(ce, 3, _counter_data(packets, bytes_))
    return _msg(7, ce)


def register_entity(register_id: int, index: int, value: bytes) -> bytes:
    """A serialized Entity{register_entry{register_id, index, data{bitstring}}}."""
    idx = bytearray()
    _put_uint(idx, 1, index)
    data = bytearray()
    _put_bytes(data, 1, value)
    re_ = bytearray()
    _put_uint(re_, 1, register_id)
    _put_bytes(re_, 2, bytes(idx))
    _put_bytes(re_, 3, bytes(data))
    return _msg(11, re_)


def entity_field(entity: bytes) -> bytes:
    """One serialized Entity as the `entities` field (1) of a ReadResponse."""
    out = bytearray()
    _put_bytes(out, 1, entity)
    return bytes(out)


def table_entry_body(table_id: int, matches: list[tuple[int, str, bytes, object]], action_id: int | None,
                     params: list[tuple[int, bytes]], priority: int, metadata: bytes = b"", is_const: bool = False,
                     counter: tuple[int, int] | None = None) -> bytes:
    """A serialized TableEntry. matches: (field_id, kind, a, b) as in PlainEntry, where b
    is the mask/high bytes or the prefix length."""
    out = bytearray()
    _put_uint(out, 1, table_id)
    for fid, kind, a, b in matches:
        inner = bytearray()
        _put_bytes(inner, 1, a)
        if kind == "lpm":
            _put_uint(inner, 2, b)  # type: ignore[arg-type]
        elif kind in ("ternary", "range"):
            _put_bytes(inner, 2, b)  # type: ignore[arg-type]
        fm = bytearray()
        _put_uint(fm, 1, fid)
        _put_bytes(fm, {"exact": 2, "ternary": 3, "lpm": 4, "range": 6, "optional": 7}[kind], bytes(inner))
        _put_bytes(out, 2, bytes(fm))
    if action_id is not None:
        act = bytearray()
        _put_uint(act, 1, action_id)
        for pid, value in params:
            prm = bytearray()
            _put_uint(prm, 2, pid)
            _put_bytes(prm, 3, value)
            _put_bytes(act, 4, bytes(prm))
        _put_bytes(out, 3, _msg(1, act))
    if priority:
        _put_varint(out, 4 << 3)
        _put_varint(out, priority & ((1 << 64) - 1))
    if counter is not None:
        _put_bytes(out, 7, _counter_data(*counter))
    if metadata:
        _put_bytes(out, 11, metadata)
    if is_const:
        _put_uint(out, 13, 1)
    return bytes(out)


def table_entity(body: bytes) -> bytes:
    """Entity{table_entry}."""
    return _msg(2, body)


def direct_counter_entity(table_entry: bytes, packets: int, bytes_: int) -> bytes:
    """Entity{direct_counter_entry{table_entry, data}}."""
    body = bytearray()
    _put_bytes(body, 1, table_entry)
    _put_bytes(body, 2, _counter_data(packets, bytes_))
    return _msg(8, body)
