"""P4Runtime messages <-> the shared entities (`p4rtproto.entities`), both directions, for
both ends of the wire: the controller encodes what it writes and decodes what it reads; the
server decodes what it is asked and encodes what it answers, with the same functions.

Bytestrings follow P4Runtime 1.4 section 8.4: a receiver accepts the canonical and the
zero-padded forms, refuses a value wider than its field (OUT_OF_RANGE) and an empty string
(INVALID_ARGUMENT); a sender sends the canonical form (no leading zero bytes; zero is one
zero byte). Decoding checks what the spec asks of a request (section 9.1: match kinds,
don't-care fields omitted, priorities, action scopes, every parameter given once), so a
server can hand a decoded entry straight to its tables.

Errors are `P4RuntimeError(code, message)` with the code the server answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from p4rtproto import p4data_pb2, p4runtime_pb2
from p4rtproto.entities import (
    CloneSession,
    CounterCell,
    DefaultAction,
    Entity,
    Exact,
    Lpm,
    Match,
    MeterRates,
    MulticastGroup,
    Optional_,
    Range,
    RegisterCell,
    TableEntry,
    Ternary,
)
from p4rtproto.errors import P4RuntimeError, invalid
from p4rtproto.schema import (  # noqa: F401  (re-exported: the codec's vocabulary)
    ActionMeta,
    ControllerHeaderMeta,
    FieldInfo,
    ResourceMeta,
    Schema,
    TableMeta,
)

_UPDATE = p4runtime_pb2.Update

# ---------------------------------------------------------------- bytestrings


def to_int(data: bytes, bitwidth: int, what: str) -> int:
    """A received bytestring as an int, checked against its field's bitwidth."""
    if not data:
        raise invalid(f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise P4RuntimeError(
            "OUT_OF_RANGE", f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits"
        )
    return value


def to_bytes(value: int) -> bytes:
    """Canonical bytestring of a value known to fit: the fewest bytes, zero is b'\\x00'."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode(value: int, bitwidth: int, what: str = "value") -> bytes:
    """Canonical bytestring of a value to send, checked against its field's bitwidth."""
    if value < 0 or (bitwidth and value >> bitwidth):
        raise P4RuntimeError(
            "OUT_OF_RANGE", f"{what}: value {value} does not fit in {bitwidth} bits"
        )
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode_int(data: bytes) -> int:
    """A bytestring from a trusted peer as an int (no width to check against)."""
    return int.from_bytes(data, "big")


# ---------------------------------------------------------------- table entries


@dataclass(slots=True)
class PlainEntry:
    """A TableEntry message as plain Python values (what decode_table_entry checks)."""

    table_id: int = 0
    # (field_id, kind, a, b): exact (value, None), lpm (value, prefix_len),
    # ternary (value, mask), range (low, high), optional (value, None)
    matches: list = field(default_factory=list)
    action_id: int | None = None
    params: list = field(default_factory=list)  # [(param_id, value)]
    action_other: str | None = None  # an action profile form (member, group, action set)
    priority: int = 0
    is_default: bool = False
    idle_timeout_ns: int = 0
    metadata: bytes = b""
    counter_data: tuple[int, int] | None = None  # (packets, bytes)
    member_id: int | None = None  # action_profile_member_id
    group_id: int | None = None  # action_profile_group_id


def plain_from_proto(te: p4runtime_pb2.TableEntry) -> PlainEntry:
    """A TableEntry message as plain values (each sub-message read once: this runs once
    per update of every Write)."""
    matches = []
    for fm in te.match:
        kind = fm.WhichOneof("field_match_type")
        if kind == "exact":
            matches.append((fm.field_id, kind, fm.exact.value, None))
        elif kind == "lpm":
            m = fm.lpm
            matches.append((fm.field_id, kind, m.value, m.prefix_len))
        elif kind == "ternary":
            m = fm.ternary
            matches.append((fm.field_id, kind, m.value, m.mask))
        elif kind == "range":
            m = fm.range
            matches.append((fm.field_id, kind, m.low, m.high))
        elif kind == "optional":
            matches.append((fm.field_id, kind, fm.optional.value, None))
        else:
            matches.append((fm.field_id, kind or "unset", b"", None))
    out = PlainEntry(
        te.table_id,
        matches,
        None,
        [],
        None,
        te.priority,
        te.is_default_action,
        te.idle_timeout_ns,
        te.metadata,
    )
    if te.HasField("action"):
        act = te.action
        which = act.WhichOneof("type")
        if which == "action":
            a = act.action
            out.action_id = a.action_id
            out.params = [(prm.param_id, prm.value) for prm in a.params]
        else:
            out.action_other = which or "unset"
            if which == "action_profile_member_id":
                out.member_id = act.action_profile_member_id
            elif which == "action_profile_group_id":
                out.group_id = act.action_profile_group_id
    if te.HasField("counter_data"):
        cd = te.counter_data
        out.counter_data = (cd.packet_count, cd.byte_count)
    return out


def entry_key(entry: TableEntry) -> tuple:
    """Identity of an entry (its match and priority), hashable."""
    return (entry.table, tuple(sorted(entry.match.items(), key=lambda kv: kv[0])), entry.priority)


def _field_what(meta: TableMeta, finfo: FieldInfo) -> str:
    return f"table {meta.name}, field {finfo.name!r}"


def _match_int(data: bytes, width: int, meta: TableMeta, finfo: FieldInfo, suffix: str = "") -> int:
    """to_int for a match value; the message is only built when the value is refused."""
    value = int.from_bytes(data, "big")
    if not data or value >> width:
        to_int(data, width, _field_what(meta, finfo) + suffix)  # raises with its message
    return value


def decode_match(meta: TableMeta, matches: list) -> dict[str, Match]:
    out: dict[str, Match] = {}
    seen: set[int] = set()
    fields = meta.fields
    for field_id, kind, a, b in matches:
        finfo = fields.get(field_id)
        if finfo is None:
            raise invalid(f"table {meta.name}: no match field with id {field_id}")
        if field_id in seen:
            raise invalid(f"table {meta.name}: match field {finfo.name!r} given twice")
        seen.add(field_id)
        width = finfo.bitwidth
        if kind != finfo.match_kind:
            raise invalid(
                f"{_field_what(meta, finfo)}: is a {finfo.match_kind} field, the request gives {kind}"
            )
        if kind == "exact":
            out[finfo.name] = Exact(_match_int(a, width, meta, finfo))
        elif kind == "lpm":
            plen = b
            if plen == 0:
                raise invalid(
                    f"{_field_what(meta, finfo)}: a prefix length of 0 is a wildcard: omit the field"
                )
            if plen < 0 or plen > width:
                raise invalid(
                    f"{_field_what(meta, finfo)}: prefix length {plen} is not in 1..{width}"
                )
            value = _match_int(a, width, meta, finfo)
            if value & ((1 << (width - plen)) - 1):
                raise invalid(
                    f"{_field_what(meta, finfo)}: bits beyond the prefix length must be 0"
                )
            out[finfo.name] = Lpm(value, plen)
        elif kind == "ternary":
            value = _match_int(a, width, meta, finfo)
            mask = _match_int(b or b"", width, meta, finfo, " mask")
            if mask == 0:
                raise invalid(
                    f"{_field_what(meta, finfo)}: an all-zero mask is a wildcard: omit the field"
                )
            if value & ~mask:
                raise invalid(f"{_field_what(meta, finfo)}: value has bits set outside the mask")
            out[finfo.name] = Ternary(value, mask)
        elif kind == "range":
            low = _match_int(a, width, meta, finfo, " low")
            high = _match_int(b or b"", width, meta, finfo, " high")
            if low > high:
                raise invalid(f"{_field_what(meta, finfo)}: range low {low} > high {high}")
            if low == 0 and high == (1 << width) - 1:
                raise invalid(
                    f"{_field_what(meta, finfo)}: a full range is a wildcard: omit the field"
                )
            out[finfo.name] = Range(low, high)
        elif kind == "optional":
            out[finfo.name] = Optional_(_match_int(a, width, meta, finfo))
        else:
            raise invalid(f"{_field_what(meta, finfo)}: unsupported match type {kind}")
    if len(seen) < meta.n_exact:
        for finfo in meta.fields.values():
            if finfo.match_kind == "exact" and finfo.id not in seen:
                raise invalid(f"table {meta.name}: exact field {finfo.name!r} is missing")
    return out


def encode_match(meta: TableMeta, match: Mapping[str, Match]) -> list[p4runtime_pb2.FieldMatch]:
    """FieldMatches in field-id order; a ternary value goes out masked (spec 9.1.1)."""
    out = []
    for finfo in meta.field_order:
        m = match.get(finfo.name)
        if m is None:
            continue
        fm = p4runtime_pb2.FieldMatch(field_id=finfo.id)
        w, what = finfo.bitwidth, f"table {meta.name}, field {finfo.name!r}"
        if isinstance(m, Exact):
            fm.exact.value = encode(m.value, w, what)
        elif isinstance(m, Lpm):
            fm.lpm.value = encode(m.value, w, what)
            fm.lpm.prefix_len = m.prefix_len
        elif isinstance(m, Ternary):
            fm.ternary.value = encode(m.value & m.mask, w, what)
            fm.ternary.mask = encode(m.mask, w, what + " mask")
        elif isinstance(m, Range):
            fm.range.low = encode(m.low, w, what + " low")
            fm.range.high = encode(m.high, w, what + " high")
        elif isinstance(m, Optional_):
            fm.optional.value = encode(m.value, w, what)
        else:
            raise invalid(f"{what}: {m!r} is not a match value")
        out.append(fm)
    if len(out) != len(match):
        unknown = [k for k in match if k not in meta.fields_by_name]
        raise P4RuntimeError(
            "NOT_FOUND",
            f"table {meta.name} has no key field {unknown[0]!r} "
            f"(has {', '.join(meta.fields_by_name) or 'none'})",
        )
    return out


def decode_action(
    schema: Schema, meta: TableMeta, action_id: int, params_in: list, default: bool
) -> tuple[str, dict[str, int]]:
    ainfo = schema.action(action_id)
    scope = meta.action_ids.get(action_id)
    if scope is None:
        raise invalid(f"action {ainfo.name!r} is not an action of table {meta.name}")
    if default and scope == "TABLE_ONLY":
        raise invalid(
            f"action {ainfo.name!r} is @tableonly in {meta.name}: it cannot be the default"
        )
    if not default and scope == "DEFAULT_ONLY":
        raise invalid(
            f"action {ainfo.name!r} is @defaultonly in {meta.name}: it cannot be in an entry"
        )
    params: dict[str, int] = {}
    for param_id, value in params_in:
        pinfo = ainfo.params.get(param_id)
        if pinfo is None:
            raise invalid(f"action {ainfo.name!r} has no parameter with id {param_id}")
        if pinfo.name in params:
            raise invalid(f"action {ainfo.name!r}: parameter {pinfo.name!r} given twice")
        v = int.from_bytes(value, "big")
        if not value or v >> pinfo.bitwidth:  # refused: to_int raises with the message
            to_int(value, pinfo.bitwidth, f"action {ainfo.name!r}, parameter {pinfo.name!r}")
        params[pinfo.name] = v
    if len(params) != len(ainfo.params):
        missing = [p.name for p in ainfo.params.values() if p.name not in params]
        raise invalid(f"action {ainfo.name!r}: missing parameter(s) {', '.join(missing)}")
    return ainfo.name, params


def _action_meta(schema: Schema, action: str) -> ActionMeta:
    aid = schema.action_ids.get(action)  # the exact name: the server's path, no search
    return schema.actions[aid] if aid is not None else schema.action(action)


def fill_action(
    out: p4runtime_pb2.Action, schema: Schema, action: str, params: Mapping[str, int]
) -> None:
    """Fill `out` with an action and its parameters (in id order, every one, each checked
    against its bitwidth; an unknown name is NOT_FOUND, a missing one INVALID_ARGUMENT)."""
    ainfo = _action_meta(schema, action)
    out.action_id = ainfo.id
    for pinfo in ainfo.param_order:
        value = params.get(pinfo.name)
        if value is None:
            missing = [p.name for p in ainfo.param_order if p.name not in params]
            raise invalid(f"action {ainfo.name!r}: missing parameter(s) {', '.join(missing)}")
        out.params.add(
            param_id=pinfo.id,
            value=encode(value, pinfo.bitwidth, f"action {ainfo.name!r}, parameter {pinfo.name!r}"),
        )
    if len(params) > len(ainfo.param_order):
        unknown = [k for k in params if k not in ainfo.params_by_name]
        raise P4RuntimeError(
            "NOT_FOUND",
            f"action {ainfo.name} has no parameter {unknown[0]!r} "
            f"(has {', '.join(ainfo.params_by_name) or 'none'})",
        )


def encode_action(schema: Schema, action: str, params: Mapping[str, int]) -> p4runtime_pb2.Action:
    out = p4runtime_pb2.Action()
    fill_action(out, schema, action, params)
    return out


def decode_table_entry(
    schema: Schema, te: PlainEntry | p4runtime_pb2.TableEntry, need_action: bool
) -> tuple[TableMeta, TableEntry]:
    """A table entry (plain or message) as (table, TableEntry); checks what the spec asks.
    The entry's direct counter data, if any, is in the result's counter fields."""
    if not isinstance(te, PlainEntry):
        te = plain_from_proto(te)
    meta = schema.table(te.table_id)
    if te.idle_timeout_ns and not meta.supports_idle_timeout:
        raise invalid(
            f"table {meta.name} does not support idle timeout (no @support_timeout): idle_timeout_ns must be 0"
        )
    if te.is_default:
        if te.matches:
            raise invalid(f"table {meta.name}: the default entry has no match fields")
        match: dict[str, Match] = {}
    else:
        match = decode_match(meta, te.matches)
    if meta.requires_priority:
        if te.priority <= 0 and not te.is_default:
            raise invalid(
                f"table {meta.name} has ternary/range/optional fields: priority must be > 0"
            )
    elif te.priority != 0:
        raise invalid(f"table {meta.name} has only exact/lpm fields: priority must be 0")
    member = group = None
    if te.action_other is not None:
        member, group = _indirect_target(meta, te)
    elif te.action_id is not None and meta.implementation_id:
        raise invalid(
            f"table {meta.name} is indirect (action profile): an entry names a member or a group,"
            " not an action"
        )
    action, params = "", {}
    if te.action_id is not None:
        action, params = decode_action(schema, meta, te.action_id, te.params, default=te.is_default)
    elif need_action and member is None and group is None:
        raise invalid(f"table {meta.name}: the entry has no action")
    entry = TableEntry(
        table=meta.name,
        match=match,
        action=action,
        params=params,
        priority=te.priority,
        member=member,
        group=group,
    )
    if te.counter_data is not None:
        entry.counter_packets, entry.counter_bytes = te.counter_data
    return meta, entry


def _indirect_target(meta: TableMeta, te: PlainEntry) -> tuple[int | None, int | None]:
    """(member, group) of an entry of an indirect table (P4Runtime spec, "Action Profiles")."""
    if te.member_id is None and te.group_id is None:
        if te.action_other == "action_profile_action_set":
            raise P4RuntimeError(
                "UNIMPLEMENTED",
                f"table {meta.name}: p4sim does not take action_profile_action_set"
                " (one-shot groups): write members and a group",
            )
        raise invalid(f"table {meta.name}: the entry's action is empty")
    if not meta.implementation_id:
        raise invalid(
            f"table {meta.name} is direct (no action profile): an entry names an action,"
            " not a member or a group"
        )
    if te.is_default:
        raise P4RuntimeError(
            "UNIMPLEMENTED",
            f"table {meta.name}: p4sim keeps the program's default action"
            " of an indirect table (no default member or group)",
        )
    if te.group_id is not None and not meta.with_selector:
        raise invalid(
            f"table {meta.name}: its action profile has no selector, so an entry cannot name a group"
        )
    return te.member_id, te.group_id


def encode_table_entry(
    schema: Schema,
    meta: TableMeta | None,
    entry: TableEntry,
    metadata: bytes = b"",
    counter: tuple[int, int] | None = None,
    out: p4runtime_pb2.TableEntry | None = None,
) -> p4runtime_pb2.TableEntry:
    """The entry as a message (`meta`: its table, looked up by name when None); `counter`
    (packets, bytes) fills counter_data. Filled into `out` when given (e.g. an Entity's
    table_entry: building in place saves the copy that nesting a finished message costs)."""
    if meta is None:
        meta = schema.table(entry.table)
    te = p4runtime_pb2.TableEntry() if out is None else out
    te.table_id = meta.id
    if entry.priority:
        te.priority = entry.priority
    te.match.extend(encode_match(meta, entry.match))
    if entry.member is not None:
        te.action.action_profile_member_id = entry.member
    elif entry.group is not None:
        te.action.action_profile_group_id = entry.group
    elif entry.action:
        fill_action(te.action.action, schema, entry.action, entry.params)
    if metadata:
        te.metadata = metadata
    if meta.const_entries:
        te.is_const = True
    if counter is not None:
        te.counter_data.packet_count, te.counter_data.byte_count = counter
    return te


def encode_default_entry(
    schema: Schema, table: str | int, action: str, params: Mapping[str, int]
) -> p4runtime_pb2.TableEntry:
    """The default entry of a table (MODIFY it to set the default action, spec 9.1.3);
    no action: the program's default."""
    meta = schema.table(table)
    te = p4runtime_pb2.TableEntry(table_id=meta.id, is_default_action=True)
    if action:
        fill_action(te.action.action, schema, action, params)
    return te


# ---------------------------------------------------------------- P4Data


def bitstring(value: int) -> p4data_pb2.P4Data:
    return p4data_pb2.P4Data(bitstring=to_bytes(value))


def from_p4data(data: p4data_pb2.P4Data, bitwidth: int, what: str) -> int:
    if data.WhichOneof("data") != "bitstring":
        raise invalid(f"{what}: expected a bitstring")
    return to_int(data.bitstring, bitwidth, what)


# ---------------------------------------------------------------- controller headers


def encode_packet_metadata(
    hdr: ControllerHeaderMeta | None,
    values: Mapping[str, int],
    what: str = "packet_out",
    complete: bool = True,
) -> list[tuple[int, bytes]]:
    """(metadata id, bytestring) for a PacketOut or PacketIn, in header order. `complete`:
    every field (the spec wants all; a missing one, e.g. padding, goes out as 0); else
    only the fields in `values`. An unknown field name is NOT_FOUND."""
    if hdr is None:
        if values:
            raise P4RuntimeError(
                "FAILED_PRECONDITION", f'the program has no @controller_header("{what}")'
            )
        return []
    fields = hdr.by_name
    for name in values:
        if name not in fields:
            raise P4RuntimeError(
                "NOT_FOUND", f"{what} has no field {name!r} (has {', '.join(fields)})"
            )
    out = []
    for f in hdr.fields:
        value = values.get(f.name)
        if value is None:
            if not complete:
                continue
            value = 0
        out.append((f.id, encode(value, f.bitwidth, f"{what} metadata {f.name!r}")))
    return out


def decode_packet_metadata(
    hdr: ControllerHeaderMeta | None,
    metadata: Iterable[tuple[int, bytes]],
    what: str = "packet_out",
    strict: bool = True,
) -> dict[str, int]:
    """(metadata id, bytestring) pairs of a PacketOut or PacketIn as {field name: value}. `strict` (a server reading a
    PacketOut): an unknown or repeated id, a value too wide, a missing field, or metadata
    for a program without the header are INVALID_ARGUMENT (OUT_OF_RANGE for the width).
    Not strict (a client reading a PacketIn): unknown ids keep their number as the name."""
    items = list(metadata)
    if hdr is None:
        if items and strict:
            raise invalid(f"the program has no {what} controller header")
        return {str(mid): decode_int(v) for mid, v in items}
    fields = hdr.by_id()
    out: dict[str, int] = {}
    for mid, mval in items:
        f = fields.get(mid)
        if f is None:
            if strict:
                raise invalid(f"{what} has no metadata id {mid}")
            out[str(mid)] = decode_int(mval)
            continue
        if strict:
            if f.name in out:
                raise invalid(f"{what} metadata {f.name!r} given twice")
            out[f.name] = to_int(mval, f.bitwidth, f"{what} metadata {f.name!r}")
        else:
            out[f.name] = decode_int(mval)
    if strict:
        missing = [f.name for f in hdr.fields if f.name not in out]
        if missing:  # the spec wants every field (BMv2 zero-fills them; PI marks that a TODO)
            raise invalid(f"{what} metadata missing: {', '.join(missing)}")
    return out


def pack_header(fields: Sequence[FieldInfo], values: Mapping[str, int]) -> bytes:
    """A controller header's bytes: fields MSB first, in header order; whole bytes."""
    acc, nbits = 0, 0
    for f in fields:
        acc = (acc << f.bitwidth) | values.get(f.name, 0)
        nbits += f.bitwidth
    if nbits % 8:
        raise P4RuntimeError("INTERNAL", f"controller header is {nbits} bits, not whole bytes")
    return acc.to_bytes(nbits // 8, "big")


# ---------------------------------------------------------------- counters, meters, registers


def fill_counter_entry(
    out: p4runtime_pb2.CounterEntry,
    counter_id: int,
    index: int | None,
    packets: int = 0,
    bytes_: int = 0,
) -> p4runtime_pb2.CounterEntry:
    """A CounterEntry (index None: every cell, for a wildcard read)."""
    out.counter_id = counter_id
    if index is not None:
        out.index.index = index
    out.data.packet_count = packets
    out.data.byte_count = bytes_
    return out


def decode_counter_entry(schema: Schema, ce: p4runtime_pb2.CounterEntry) -> CounterCell:
    info = schema.counter(ce.counter_id)
    return CounterCell(info.name, ce.index.index, ce.data.packet_count, ce.data.byte_count)


def fill_register_entry(
    out: p4runtime_pb2.RegisterEntry,
    info: ResourceMeta,
    index: int | None,
    value: int | None = None,
) -> p4runtime_pb2.RegisterEntry:
    out.register_id = info.id
    if index is not None:
        out.index.index = index
    if value is not None:
        out.data.bitstring = encode(value, info.bitwidth, f"register {info.name}")
    return out


def decode_register_entry(schema: Schema, re_: p4runtime_pb2.RegisterEntry) -> RegisterCell:
    info = schema.register(re_.register_id)
    return RegisterCell(
        info.name, re_.index.index, from_p4data(re_.data, info.bitwidth, f"register {info.name}")
    )


def meter_rates(config: p4runtime_pb2.MeterConfig) -> list[tuple[float, int]]:
    """A MeterConfig (units per second) as BMv2's rates (units per microsecond)."""
    return [(config.cir / 1e6, config.cburst), (config.pir / 1e6, config.pburst)]


def meter_config(rates: Sequence[tuple[float, int]]) -> p4runtime_pb2.MeterConfig:
    """BMv2's [(committed/us, burst), (peak/us, burst)] as a MeterConfig."""
    if len(rates) != 2:
        raise invalid(f"meter rates: expected (committed, peak), got {len(rates)} rate(s)")
    (cir, cburst), (pir, pburst) = rates
    return p4runtime_pb2.MeterConfig(
        cir=round(cir * 1e6), cburst=cburst, pir=round(pir * 1e6), pburst=pburst
    )


# ---------------------------------------------------------------- the packet replication engine


def replica_port(r: Any) -> int:
    """A Replica's port: `port` (bytes, P4Runtime 1.4) or the older `egress_port`."""
    if r.WhichOneof("port_kind") == "port":
        return int.from_bytes(r.port, "big") if r.port else 0
    return r.egress_port


def replicas(entry: Any) -> list[tuple[int, int]]:
    """(port, instance) of each replica of a multicast group or clone session."""
    return [(replica_port(r), r.instance) for r in entry.replicas]


# ---------------------------------------------------------------- entities by name


def encode_entity(schema: Schema, e: Entity) -> tuple[p4runtime_pb2.Entity, int]:
    """A shared entity as the P4Runtime Entity and the update type that installs it."""
    ent = p4runtime_pb2.Entity()
    if isinstance(e, TableEntry):
        encode_table_entry(schema, None, e, out=ent.table_entry)
        return ent, _UPDATE.INSERT
    if isinstance(e, DefaultAction):
        ent.table_entry.CopyFrom(encode_default_entry(schema, e.table, e.action, e.params))
        return ent, _UPDATE.MODIFY
    if isinstance(e, CounterCell):
        c = schema.counter(e.name)
        fill_counter_entry(ent.counter_entry, c.id, e.index, e.packets, e.bytes)
        return ent, _UPDATE.MODIFY
    if isinstance(e, RegisterCell):
        fill_register_entry(ent.register_entry, schema.register(e.name), e.index, e.value)
        return ent, _UPDATE.MODIFY
    if isinstance(e, CloneSession):
        cs = ent.packet_replication_engine_entry.clone_session_entry
        cs.session_id = e.session
        cs.packet_length_bytes = e.truncate
        for port in e.ports:
            cs.replicas.add(egress_port=port, instance=0)
        return ent, _UPDATE.INSERT
    if isinstance(e, MulticastGroup):
        mg = ent.packet_replication_engine_entry.multicast_group_entry
        mg.multicast_group_id = e.group
        for i, port in enumerate(e.ports):
            mg.replicas.add(egress_port=port, instance=i)
        return ent, _UPDATE.INSERT
    if isinstance(e, MeterRates):
        m = schema.meter(e.name)
        ent.meter_entry.meter_id = m.id
        ent.meter_entry.index.index = e.index
        if e.rates:  # no rates: unmetered (a MeterEntry without config)
            ent.meter_entry.config.CopyFrom(meter_config(e.rates))
        return ent, _UPDATE.MODIFY
    raise invalid(f"unknown entity {e!r}")


def decode_entity(schema: Schema, ent: p4runtime_pb2.Entity) -> Entity:
    """A P4Runtime Entity (as a Read answers it) as the shared entity."""
    which = ent.WhichOneof("entity")
    if which == "table_entry":
        te = ent.table_entry
        if te.is_default_action:
            meta = schema.table(te.table_id)
            action, params = "", {}
            if te.action.HasField("action"):
                action, params = decode_action(
                    schema,
                    meta,
                    te.action.action.action_id,
                    [(p.param_id, p.value) for p in te.action.action.params],
                    True,
                )
            return DefaultAction(meta.name, action, params)
        return decode_table_entry(schema, te, need_action=False)[1]
    if which == "counter_entry":
        return decode_counter_entry(schema, ent.counter_entry)
    if which == "register_entry":
        return decode_register_entry(schema, ent.register_entry)
    if which == "meter_entry":
        me = ent.meter_entry
        info = schema.meter(me.meter_id)
        return MeterRates(
            info.name,
            me.index.index,
            tuple(meter_rates(me.config)) if me.HasField("config") else (),
        )
    if which == "packet_replication_engine_entry":
        pre = ent.packet_replication_engine_entry
        if pre.HasField("clone_session_entry"):
            cs = pre.clone_session_entry
            return CloneSession(
                cs.session_id, tuple(p for p, _ in replicas(cs)), cs.packet_length_bytes
            )
        if pre.HasField("multicast_group_entry"):
            mg = pre.multicast_group_entry
            return MulticastGroup(mg.multicast_group_id, tuple(p for p, _ in replicas(mg)))
    raise P4RuntimeError("UNIMPLEMENTED", f"cannot decode a {which or 'empty'} entity")
