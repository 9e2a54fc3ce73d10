"""P4Runtime <-> p4sim conversions: ids to names (from P4Info), bytestrings to ints, entities.

Every request error is a `RequestError(code, message)` whose code is a gRPC status name;
the service turns it into a status (or a per-update `p4.v1.Error`).

Bytestrings follow P4Runtime 1.4 section 8.4: the server accepts canonical and padded
forms, refuses a value wider than the field (OUT_OF_RANGE), and answers in canonical form
(no leading zero bytes; zero is one zero byte).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4rtproto import p4data_pb2, p4info_pb2, p4runtime_pb2
from p4sim.model import (
    Exact,
    Lpm,
    Match,
    Optional_,
    ProgramModel,
    Range,
    TableEntry,
    Ternary,
)


@dataclass(slots=True)
class PlainEntry:
    """A TableEntry as plain Python values (what decode_table_entry checks)."""

    table_id: int = 0
    # (field_id, kind, a, b): exact (value, None), lpm (value, prefix_len),
    # ternary (value, mask), range (low, high), optional (value, None)
    matches: list = field(default_factory=list)
    action_id: int | None = None
    params: list = field(default_factory=list)  # [(param_id, value)]
    action_other: str | None = None  # an action profile form, refused by the codec
    priority: int = 0
    is_default: bool = False
    idle_timeout_ns: int = 0
    metadata: bytes = b""
    counter_data: tuple[int, int] | None = None  # (packets, bytes)


class RequestError(Exception):
    """A request the server refuses; `code` is a grpc.StatusCode name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> RequestError:
    return RequestError("INVALID_ARGUMENT", message)


# ---------------------------------------------------------------- bytestrings


def to_int(data: bytes, bitwidth: int, what: str) -> int:
    """A P4Runtime bytestring as an int, checked against its bitwidth."""
    if not data:
        raise invalid(f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise RequestError("OUT_OF_RANGE", f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits")
    return value


def to_bytes(value: int) -> bytes:
    """Canonical bytestring: the fewest bytes, zero is b'\\x00'."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


# ---------------------------------------------------------------- id maps


@dataclass
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    match_kind: str = ""


@dataclass
class TableMeta:
    id: int
    name: str
    fields: dict[int, FieldInfo]
    action_ids: dict[int, str]  # action id -> scope
    requires_priority: bool
    const_default: bool
    const_entries: bool
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    supports_idle_timeout: bool = False
    n_exact: int = 0

    @property
    def fields_by_name(self) -> dict[str, FieldInfo]:
        cached = self.__dict__.get("_by_name")
        if cached is None:
            cached = self.__dict__["_by_name"] = {f.name: f for f in self.fields.values()}
        return cached


@dataclass
class ActionMeta:
    id: int
    name: str
    params: dict[int, FieldInfo]

    @property
    def param_order(self) -> list[FieldInfo]:
        return sorted(self.params.values(), key=lambda p: p.id)


@dataclass
class ResourceMeta:
    id: int
    name: str
    size: int = 0
    bitwidth: int = 0  # registers
    table_id: int = 0  # direct resources
    unit: str = ""


@dataclass
class ControllerHeaderMeta:
    id: int
    name: str
    fields: list[FieldInfo]  # in header order

    def by_id(self) -> dict[int, FieldInfo]:
        return {f.id: f for f in self.fields}


@dataclass
class IdMaps:
    """Everything a P4Runtime request names by id, resolved once per pipeline."""

    p4info: p4info_pb2.P4Info
    tables: dict[int, TableMeta] = field(default_factory=dict)
    actions: dict[int, ActionMeta] = field(default_factory=dict)
    counters: dict[int, ResourceMeta] = field(default_factory=dict)
    direct_counters: dict[int, ResourceMeta] = field(default_factory=dict)
    meters: dict[int, ResourceMeta] = field(default_factory=dict)
    direct_meters: dict[int, ResourceMeta] = field(default_factory=dict)
    registers: dict[int, ResourceMeta] = field(default_factory=dict)
    digests: dict[int, ResourceMeta] = field(default_factory=dict)
    digest_fields: dict[int, list[FieldInfo]] = field(default_factory=dict)
    packet_in: ControllerHeaderMeta | None = None
    packet_out: ControllerHeaderMeta | None = None
    table_ids: dict[str, int] = field(default_factory=dict)
    action_ids: dict[str, int] = field(default_factory=dict)
    digest_ids: dict[str, int] = field(default_factory=dict)

    # -- lookups that raise the P4Runtime error for an unknown id
    def table(self, table_id: int) -> TableMeta:
        try:
            return self.tables[table_id]
        except KeyError:
            raise RequestError("NOT_FOUND", f"no table with id {table_id}") from None

    def action(self, action_id: int) -> ActionMeta:
        try:
            return self.actions[action_id]
        except KeyError:
            raise invalid(f"no action with id {action_id}") from None

    @staticmethod
    def _get(kind: str, table: dict[int, ResourceMeta], rid: int) -> ResourceMeta:
        try:
            return table[rid]
        except KeyError:
            raise RequestError("NOT_FOUND", f"no {kind} with id {rid}") from None

    def counter(self, rid: int) -> ResourceMeta:
        return self._get("counter", self.counters, rid)

    def meter(self, rid: int) -> ResourceMeta:
        return self._get("meter", self.meters, rid)

    def register(self, rid: int) -> ResourceMeta:
        return self._get("register", self.registers, rid)

    def digest(self, rid: int) -> ResourceMeta:
        return self._get("digest", self.digests, rid)


_MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}
_SCOPES = {0: "TABLE_AND_DEFAULT", 1: "TABLE_ONLY", 2: "DEFAULT_ONLY"}
_UNITS = {0: "", 1: "bytes", 2: "packets", 3: "packets_and_bytes"}


def _bitstring_width(spec: object) -> int:
    bs = spec.bitstring  # type: ignore[attr-defined]
    for kind in ("bit", "int", "varbit"):
        if bs.HasField(kind):
            sub = getattr(bs, kind)
            return sub.max_bitwidth if kind == "varbit" else sub.bitwidth
    return 0


def build_id_maps(p4info: p4info_pb2.P4Info, model: ProgramModel | None = None) -> IdMaps:
    maps = IdMaps(p4info=p4info)
    for a in p4info.actions:
        params = {p.id: FieldInfo(p.id, p.name, p.bitwidth) for p in a.params}
        maps.actions[a.preamble.id] = ActionMeta(a.preamble.id, a.preamble.name, params)
        maps.action_ids[a.preamble.name] = a.preamble.id
    direct_counter_of: dict[int, int] = {}
    direct_meter_of: dict[int, int] = {}
    for c in p4info.direct_counters:
        maps.direct_counters[c.preamble.id] = ResourceMeta(
            c.preamble.id, c.preamble.name, table_id=c.direct_table_id, unit=_UNITS.get(c.spec.unit, "")
        )
        direct_counter_of[c.direct_table_id] = c.preamble.id
    for m in p4info.direct_meters:
        maps.direct_meters[m.preamble.id] = ResourceMeta(m.preamble.id, m.preamble.name, table_id=m.direct_table_id)
        direct_meter_of[m.direct_table_id] = m.preamble.id
    for t in p4info.tables:
        fields = {}
        for mf in t.match_fields:
            kind = _MATCH_KINDS.get(mf.match_type, mf.other_match_type or "unknown")
            fields[mf.id] = FieldInfo(mf.id, mf.name, mf.bitwidth, kind)
        requires_priority = any(f.match_kind in ("ternary", "range", "optional") for f in fields.values())
        const_entries = t.is_const_table
        if model is not None and t.preamble.name in model.tables:
            const_entries = const_entries or model.tables[t.preamble.name].const_entries
        maps.tables[t.preamble.id] = TableMeta(
            id=t.preamble.id,
            name=t.preamble.name,
            fields=fields,
            action_ids={ar.id: _SCOPES.get(ar.scope, "TABLE_AND_DEFAULT") for ar in t.action_refs},
            requires_priority=requires_priority,
            const_default=bool(t.const_default_action_id),
            const_entries=const_entries,
            direct_counter_id=direct_counter_of.get(t.preamble.id, 0),
            direct_meter_id=direct_meter_of.get(t.preamble.id, 0),
            supports_idle_timeout=t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL,
            n_exact=sum(f.match_kind == "exact" for f in fields.values()),
        )
        maps.table_ids[t.preamble.name] = t.preamble.id
    for c in p4info.counters:
        maps.counters[c.preamble.id] = ResourceMeta(c.preamble.id, c.preamble.name, size=c.size, unit=_UNITS.get(c.spec.unit, ""))
    for m in p4info.meters:
        maps.meters[m.preamble.id] = ResourceMeta(m.preamble.id, m.preamble.name, size=m.size)
    for r in p4info.registers:
        maps.registers[r.preamble.id] = ResourceMeta(
            r.preamble.id, r.preamble.name, size=r.size, bitwidth=_bitstring_width(r.type_spec)
        )
    for d in p4info.digests:
        maps.digests[d.preamble.id] = ResourceMeta(d.preamble.id, d.preamble.name)
        maps.digest_ids[d.preamble.name] = d.preamble.id
        fields: list[FieldInfo] = []
        if model is not None and d.preamble.name in model.digests:
            fields = [FieldInfo(i + 1, n, w) for i, (n, w) in enumerate(model.digests[d.preamble.name].fields)]
        elif d.type_spec.HasField("struct"):
            struct = p4info.type_info.structs.get(d.type_spec.struct.name)
            if struct is not None:
                fields = [FieldInfo(i + 1, m.name, _bitstring_width(m.type_spec)) for i, m in enumerate(struct.members)]
        maps.digest_fields[d.preamble.id] = fields
    kinds = {}
    if model is not None:
        kinds = {h.name: h.kind for h in model.controller_headers.values()}
    for cpm in p4info.controller_packet_metadata:
        meta = ControllerHeaderMeta(
            cpm.preamble.id, cpm.preamble.name, [FieldInfo(m.id, m.name, m.bitwidth) for m in cpm.metadata]
        )
        # p4c names them after the annotation ("packet_in"); accept the header type name too
        kind = cpm.preamble.name if cpm.preamble.name in ("packet_in", "packet_out") else kinds.get(cpm.preamble.name)
        if kind == "packet_in":
            maps.packet_in = meta
        elif kind == "packet_out":
            maps.packet_out = meta
    return maps


def check_p4info_matches(client: p4info_pb2.P4Info, ours: p4info_pb2.P4Info) -> None:
    """The P4Info a client pushes must describe the program we compiled: same objects,
    same ids (so that ids in later requests mean what the client thinks)."""
    for kind in ("tables", "actions", "counters", "direct_counters", "meters", "direct_meters",
                 "registers", "digests", "controller_packet_metadata"):
        mine = {o.preamble.name: o.preamble.id for o in getattr(ours, kind)}
        for obj in getattr(client, kind):
            name, oid = obj.preamble.name, obj.preamble.id
            if name not in mine:
                raise invalid(f"P4Info does not match the program: {kind[:-1]} {name!r} is not in it")
            if mine[name] != oid:
                raise invalid(
                    f"P4Info does not match the program: {kind[:-1]} {name!r} has id {oid:#x}, "
                    f"the program gives it {mine[name]:#x}"
                )
    for t_client in client.tables:
        t_ours = next(t for t in ours.tables if t.preamble.name == t_client.preamble.name)
        ours_fields = {(f.id, f.name, f.bitwidth) for f in t_ours.match_fields}
        if {(f.id, f.name, f.bitwidth) for f in t_client.match_fields} != ours_fields:
            raise invalid(f"P4Info does not match the program: match fields of table {t_client.preamble.name!r} differ")


# ---------------------------------------------------------------- table entries


def entry_key(entry: TableEntry) -> tuple:
    """Identity of an entry (its match and priority), hashable."""
    return (entry.table, tuple(sorted(entry.match.items(), key=lambda kv: kv[0])), entry.priority)


def plain_from_proto(te: p4runtime_pb2.TableEntry) -> PlainEntry:
    """A TableEntry message as plain values."""
    out = PlainEntry(
        table_id=te.table_id, priority=te.priority, is_default=te.is_default_action,
        idle_timeout_ns=te.idle_timeout_ns, metadata=bytes(te.metadata),
    )
    for fm in te.match:
        kind = fm.WhichOneof("field_match_type")
        if kind == "exact":
            out.matches.append((fm.field_id, kind, fm.exact.value, None))
        elif kind == "lpm":
            out.matches.append((fm.field_id, kind, fm.lpm.value, fm.lpm.prefix_len))
        elif kind == "ternary":
            out.matches.append((fm.field_id, kind, fm.ternary.value, fm.ternary.mask))
        elif kind == "range":
            out.matches.append((fm.field_id, kind, fm.range.low, fm.range.high))
        elif kind == "optional":
            out.matches.append((fm.field_id, kind, fm.optional.value, None))
        else:
            out.matches.append((fm.field_id, kind or "unset", b"", None))
    if te.HasField("action"):
        which = te.action.WhichOneof("type")
        if which == "action":
            out.action_id = te.action.action.action_id
            out.params = [(p.param_id, p.value) for p in te.action.action.params]
        else:
            out.action_other = which or "unset"
    if te.HasField("counter_data"):
        out.counter_data = (te.counter_data.packet_count, te.counter_data.byte_count)
    return out


def decode_match(meta: TableMeta, matches: list) -> dict[str, Match]:
    out: dict[str, Match] = {}
    seen: set[int] = set()
    for field_id, kind, a, b in matches:
        finfo = meta.fields.get(field_id)
        if finfo is None:
            raise invalid(f"table {meta.name}: no match field with id {field_id}")
        if field_id in seen:
            raise invalid(f"table {meta.name}: match field {finfo.name!r} given twice")
        seen.add(field_id)
        what = f"table {meta.name}, field {finfo.name!r}"
        width = finfo.bitwidth
        if kind != finfo.match_kind:
            raise invalid(f"{what}: is a {finfo.match_kind} field, the request gives {kind}")
        if kind == "exact":
            out[finfo.name] = Exact(to_int(a, width, what))
        elif kind == "lpm":
            plen = b
            if plen == 0:
                raise invalid(f"{what}: a prefix length of 0 is a wildcard: omit the field")
            if plen < 0 or plen > width:
                raise invalid(f"{what}: prefix length {plen} is not in 1..{width}")
            value = to_int(a, width, what)
            if value & ((1 << (width - plen)) - 1):
                raise invalid(f"{what}: bits beyond the prefix length must be 0")
            out[finfo.name] = Lpm(value, plen)
        elif kind == "ternary":
            value = to_int(a, width, what)
            mask = to_int(b or b"", width, what + " mask")
            if mask == 0:
                raise invalid(f"{what}: an all-zero mask is a wildcard: omit the field")
            if value & ~mask:
                raise invalid(f"{what}: value has bits set outside the mask")
            out[finfo.name] = Ternary(value, mask)
        elif kind == "range":
            low = to_int(a, width, what + " low")
            high = to_int(b or b"", width, what + " high")
            if low > high:
                raise invalid(f"{what}: range low {low} > high {high}")
            if low == 0 and high == (1 << width) - 1:
                raise invalid(f"{what}: a full range is a wildcard: omit the field")
            out[finfo.name] = Range(low, high)
        elif kind == "optional":
            out[finfo.name] = Optional_(to_int(a, width, what))
        else:
            raise invalid(f"{what}: unsupported match type {kind}")
    if len(seen) < meta.n_exact:
        for finfo in meta.fields.values():
            if finfo.match_kind == "exact" and finfo.id not in seen:
                raise invalid(f"table {meta.name}: exact field {finfo.name!r} is missing")
    return out


def encode_match(meta: TableMeta, match: dict[str, Match]) -> list:
    out = []
    for finfo in sorted(meta.fields.values(), key=lambda f: f.id):
        m = match.get(finfo.name)
        if m is None:
            continue
        fm = p4runtime_pb2.FieldMatch(field_id=finfo.id)
        if isinstance(m, Exact):
            fm.exact.value = to_bytes(m.value)
        elif isinstance(m, Lpm):
            fm.lpm.value = to_bytes(m.value)
            fm.lpm.prefix_len = m.prefix_len
        elif isinstance(m, Ternary):
            fm.ternary.value = to_bytes(m.value)
            fm.ternary.mask = to_bytes(m.mask)
        elif isinstance(m, Range):
            fm.range.low = to_bytes(m.low)
            fm.range.high = to_bytes(m.high)
        elif isinstance(m, Optional_):
            fm.optional.value = to_bytes(m.value)
        out.append(fm)
    return out


def decode_action(maps: IdMaps, meta: TableMeta, action_id: int, params_in: list, default: bool) -> tuple[str, dict[str, int]]:
    ainfo = maps.action(action_id)
    scope = meta.action_ids.get(action_id)
    if scope is None:
        raise invalid(f"action {ainfo.name!r} is not an action of table {meta.name}")
    if default and scope == "TABLE_ONLY":
        raise invalid(f"action {ainfo.name!r} is @tableonly in {meta.name}: it cannot be the default")
    if not default and scope == "DEFAULT_ONLY":
        raise invalid(f"action {ainfo.name!r} is @defaultonly in {meta.name}: it cannot be in an entry")
    params: dict[str, int] = {}
    for param_id, value in params_in:
        pinfo = ainfo.params.get(param_id)
        if pinfo is None:
            raise invalid(f"action {ainfo.name!r} has no parameter with id {param_id}")
        if pinfo.name in params:
            raise invalid(f"action {ainfo.name!r}: parameter {pinfo.name!r} given twice")
        params[pinfo.name] = to_int(value, pinfo.bitwidth, f"action {ainfo.name!r}, parameter {pinfo.name!r}")
    if len(params) != len(ainfo.params):
        missing = [p.name for p in ainfo.params.values() if p.name not in params]
        raise invalid(f"action {ainfo.name!r}: missing parameter(s) {', '.join(missing)}")
    return ainfo.name, params


def encode_action(maps: IdMaps, action: str, params: dict[str, int]) -> p4runtime_pb2.Action:
    aid = maps.action_ids.get(action)
    if aid is None:
        raise RequestError("INTERNAL", f"action {action!r} is not in P4Info")
    out = p4runtime_pb2.Action(action_id=aid)
    for pinfo in sorted(maps.actions[aid].params.values(), key=lambda p: p.id):
        out.params.add(param_id=pinfo.id, value=to_bytes(params.get(pinfo.name, 0)))
    return out


def decode_table_entry(maps: IdMaps, te: PlainEntry | p4runtime_pb2.TableEntry, need_action: bool) -> tuple[TableMeta, TableEntry]:
    """A table entry (plain or message) as (table, p4sim TableEntry); checks what the spec asks."""
    if not isinstance(te, PlainEntry):
        te = plain_from_proto(te)
    meta = maps.table(te.table_id)
    if te.idle_timeout_ns and not meta.supports_idle_timeout:
        raise invalid(f"table {meta.name} does not support idle timeout (no @support_timeout): idle_timeout_ns must be 0")
    if te.is_default:
        if te.matches:
            raise invalid(f"table {meta.name}: the default entry has no match fields")
        match: dict[str, Match] = {}
    else:
        match = decode_match(meta, te.matches)
    if meta.requires_priority:
        if te.priority <= 0 and not te.is_default:
            raise invalid(f"table {meta.name} has ternary/range/optional fields: priority must be > 0")
    elif te.priority != 0:
        raise invalid(f"table {meta.name} has only exact/lpm fields: priority must be 0")
    if te.action_other is not None:
        raise RequestError("UNIMPLEMENTED", f"table {meta.name}: action profiles are not supported by p4sim ({te.action_other})")
    action, params = "", {}
    if te.action_id is not None:
        action, params = decode_action(maps, meta, te.action_id, te.params, default=te.is_default)
    elif need_action:
        raise invalid(f"table {meta.name}: the entry has no action")
    entry = TableEntry(table=meta.name, match=match, action=action, params=params, priority=te.priority)
    return meta, entry


def encode_table_entry(maps: IdMaps, meta: TableMeta, entry: TableEntry, metadata: bytes = b"",
                       counter: tuple[int, int] | None = None,
                       out: p4runtime_pb2.TableEntry | None = None) -> p4runtime_pb2.TableEntry:
    """The entry as P4Runtime sends it in a Read; `counter` (packets, bytes) fills counter_data.
    Filled into `out` when given (e.g. an Entity's table_entry: building in place saves the
    copy that nesting a finished message costs)."""
    te = p4runtime_pb2.TableEntry() if out is None else out
    te.table_id = meta.id
    if entry.priority:
        te.priority = entry.priority
    te.match.extend(encode_match(meta, entry.match))
    if entry.action:
        aid = maps.action_ids.get(entry.action)
        if aid is None:
            raise RequestError("INTERNAL", f"action {entry.action!r} is not in P4Info")
        act = te.action.action
        act.action_id = aid
        for pinfo in maps.actions[aid].param_order:
            act.params.add(param_id=pinfo.id, value=to_bytes(entry.params.get(pinfo.name, 0)))
    if metadata:
        te.metadata = metadata
    if meta.const_entries:
        te.is_const = True
    if counter is not None:
        te.counter_data.packet_count, te.counter_data.byte_count = counter
    return te


# ---------------------------------------------------------------- P4Data


def bitstring(value: int) -> p4data_pb2.P4Data:
    return p4data_pb2.P4Data(bitstring=to_bytes(value))


def from_p4data(data: p4data_pb2.P4Data, bitwidth: int, what: str) -> int:
    if data.WhichOneof("data") != "bitstring":
        raise invalid(f"{what}: expected a bitstring")
    return to_int(data.bitstring, bitwidth, what)


# ---------------------------------------------------------------- controller headers


def pack_header(fields: list[FieldInfo], values: dict[int, int]) -> bytes:
    """Fields MSB first, in header order; the total is whole bytes (a P4 header)."""
    acc, nbits = 0, 0
    for f in fields:
        acc = (acc << f.bitwidth) | values.get(f.id, 0)
        nbits += f.bitwidth
    if nbits % 8:
        raise RequestError("INTERNAL", f"controller header is {nbits} bits, not whole bytes")
    return acc.to_bytes(nbits // 8, "big")
