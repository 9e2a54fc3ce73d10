"""A P4Info, indexed: names <-> ids and what each object is (match kinds, bitwidths, sizes,
action scopes, direct resources, controller headers), resolved once per pipeline.

Both ends of the wire look things up here: the server by id (what a request names), the
controller by name. A name is the fully qualified P4Info name or a unique suffix of it
("l2_fwd" for "MyIngress.l2_fwd"), as p4runtime-shell and p4c's STF runner accept.
Unknown ids and names raise `P4RuntimeError` with the status code the server answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from p4rtproto import p4info_pb2
from p4rtproto.errors import P4RuntimeError, invalid


@dataclass
class FieldInfo:
    """A match field, action parameter, controller header field or digest member."""

    id: int
    name: str
    bitwidth: int
    match_kind: str = ""  # match fields only: exact | lpm | ternary | range | optional


@dataclass
class TableMeta:
    id: int
    name: str
    fields: dict[int, FieldInfo]
    action_ids: dict[int, str]  # action id -> scope (TABLE_AND_DEFAULT | TABLE_ONLY | DEFAULT_ONLY)
    requires_priority: bool
    const_default: bool
    const_entries: bool
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    supports_idle_timeout: bool = False
    n_exact: int = 0
    size: int = 0
    implementation_id: int = 0  # its action profile/selector (an indirect table), 0: none
    with_selector: bool = False  # that profile is a selector (entries may name a group)
    fields_by_name: dict[str, FieldInfo] = field(default_factory=dict)
    field_order: list[FieldInfo] = field(default_factory=list)  # by id: the order we encode in

    def __post_init__(self) -> None:
        self.fields_by_name = {f.name: f for f in self.fields.values()}
        self.field_order = sorted(self.fields.values(), key=lambda f: f.id)


@dataclass
class ActionProfileMeta:
    id: int
    name: str
    with_selector: bool
    size: int
    max_group_size: int
    table_ids: tuple[int, ...]


@dataclass
class ActionMeta:
    id: int
    name: str
    params: dict[int, FieldInfo]
    param_order: list[FieldInfo] = field(default_factory=list)
    params_by_name: dict[str, FieldInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.param_order = sorted(self.params.values(), key=lambda p: p.id)
        self.params_by_name = {p.name: p for p in self.params.values()}


@dataclass
class ResourceMeta:
    """A counter, meter, register or digest (and their direct forms)."""

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

    @property
    def by_name(self) -> dict[str, FieldInfo]:
        return {f.name: f for f in self.fields}


MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}
SCOPES = {0: "TABLE_AND_DEFAULT", 1: "TABLE_ONLY", 2: "DEFAULT_ONLY"}
UNITS = {0: "", 1: "bytes", 2: "packets", 3: "packets_and_bytes"}


def bitstring_width(spec: Any) -> int:
    """Width of a P4DataTypeSpec that is a bitstring (0 for anything else)."""
    bs = spec.bitstring
    for kind in ("bit", "int", "varbit"):
        if bs.HasField(kind):
            sub = getattr(bs, kind)
            return sub.max_bitwidth if kind == "varbit" else sub.bitwidth
    return 0


def _by_name(kind: str, objects: Mapping[str, Any], name: str) -> Any:
    hit = objects.get(name)
    if hit is not None:
        return hit
    hits = [v for k, v in objects.items() if k.endswith("." + name)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise P4RuntimeError("NOT_FOUND", f"no {kind} named {name!r} in P4Info")
    raise P4RuntimeError("INVALID_ARGUMENT", f"{kind} name {name!r} is ambiguous")


class Schema:
    """Everything a P4Runtime message names by id, for one P4Info.

    Hints a server knows from its compiled program and P4Info may not carry:
    `const_tables` (names of tables with `const entries`), `digest_fields` (digest name ->
    [(member name, bitwidth)]), `header_kinds` (controller header name -> "packet_in" |
    "packet_out", for P4Info that names them after the header type)."""

    def __init__(
        self,
        p4info: p4info_pb2.P4Info,
        *,
        const_tables: Iterable[str] = (),
        digest_fields: Mapping[str, Iterable[tuple[str, int]]] | None = None,
        header_kinds: Mapping[str, str] | None = None,
    ) -> None:
        self.p4info = p4info
        self.tables: dict[int, TableMeta] = {}
        self.actions: dict[int, ActionMeta] = {}
        self.counters: dict[int, ResourceMeta] = {}
        self.direct_counters: dict[int, ResourceMeta] = {}
        self.meters: dict[int, ResourceMeta] = {}
        self.direct_meters: dict[int, ResourceMeta] = {}
        self.registers: dict[int, ResourceMeta] = {}
        self.digests: dict[int, ResourceMeta] = {}
        self.action_profiles: dict[int, ActionProfileMeta] = {
            ap.preamble.id: ActionProfileMeta(
                ap.preamble.id,
                ap.preamble.name,
                ap.with_selector,
                ap.size,
                ap.max_group_size,
                tuple(ap.table_ids),
            )
            for ap in p4info.action_profiles
        }
        self.digest_fields: dict[int, list[FieldInfo]] = {}
        self.controller_headers: dict[str, ControllerHeaderMeta] = {}
        self.packet_in: ControllerHeaderMeta | None = None
        self.packet_out: ControllerHeaderMeta | None = None
        self.table_ids: dict[str, int] = {}
        self.action_ids: dict[str, int] = {}
        self.digest_ids: dict[str, int] = {}
        const = set(const_tables)

        for a in p4info.actions:
            params = {p.id: FieldInfo(p.id, p.name, p.bitwidth) for p in a.params}
            self.actions[a.preamble.id] = ActionMeta(a.preamble.id, a.preamble.name, params)
            self.action_ids[a.preamble.name] = a.preamble.id
        direct_counter_of: dict[int, int] = {}
        direct_meter_of: dict[int, int] = {}
        for c in p4info.direct_counters:
            self.direct_counters[c.preamble.id] = ResourceMeta(
                c.preamble.id,
                c.preamble.name,
                table_id=c.direct_table_id,
                unit=UNITS.get(c.spec.unit, ""),
            )
            direct_counter_of[c.direct_table_id] = c.preamble.id
        for m in p4info.direct_meters:
            self.direct_meters[m.preamble.id] = ResourceMeta(
                m.preamble.id, m.preamble.name, table_id=m.direct_table_id
            )
            direct_meter_of[m.direct_table_id] = m.preamble.id
        for t in p4info.tables:
            fields = {}
            for mf in t.match_fields:
                kind = MATCH_KINDS.get(mf.match_type, mf.other_match_type or "unknown")
                fields[mf.id] = FieldInfo(mf.id, mf.name, mf.bitwidth, kind)
            self.tables[t.preamble.id] = TableMeta(
                id=t.preamble.id,
                name=t.preamble.name,
                fields=fields,
                action_ids={
                    ar.id: SCOPES.get(ar.scope, "TABLE_AND_DEFAULT") for ar in t.action_refs
                },
                requires_priority=any(
                    f.match_kind in ("ternary", "range", "optional") for f in fields.values()
                ),
                const_default=bool(t.const_default_action_id),
                const_entries=t.is_const_table or t.preamble.name in const,
                direct_counter_id=direct_counter_of.get(t.preamble.id, 0),
                direct_meter_id=direct_meter_of.get(t.preamble.id, 0),
                supports_idle_timeout=t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL,
                n_exact=sum(f.match_kind == "exact" for f in fields.values()),
                size=t.size,
                implementation_id=t.implementation_id,
                with_selector=bool(
                    t.implementation_id
                    and t.implementation_id in self.action_profiles
                    and self.action_profiles[t.implementation_id].with_selector
                ),
            )
            self.table_ids[t.preamble.name] = t.preamble.id
        for c in p4info.counters:
            self.counters[c.preamble.id] = ResourceMeta(
                c.preamble.id, c.preamble.name, size=c.size, unit=UNITS.get(c.spec.unit, "")
            )
        for m in p4info.meters:
            self.meters[m.preamble.id] = ResourceMeta(
                m.preamble.id, m.preamble.name, size=m.size, unit=UNITS.get(m.spec.unit, "")
            )
        for r in p4info.registers:
            self.registers[r.preamble.id] = ResourceMeta(
                r.preamble.id, r.preamble.name, size=r.size, bitwidth=bitstring_width(r.type_spec)
            )
        for d in p4info.digests:
            name = d.preamble.name
            self.digests[d.preamble.id] = ResourceMeta(d.preamble.id, name)
            self.digest_ids[name] = d.preamble.id
            members: list[FieldInfo] = []
            if digest_fields is not None and name in digest_fields:
                members = [FieldInfo(i + 1, n, w) for i, (n, w) in enumerate(digest_fields[name])]
            elif d.type_spec.HasField("struct"):
                struct = p4info.type_info.structs.get(d.type_spec.struct.name)
                if struct is not None:
                    members = [
                        FieldInfo(i + 1, m.name, bitstring_width(m.type_spec))
                        for i, m in enumerate(struct.members)
                    ]
            self.digest_fields[d.preamble.id] = members
        for cpm in p4info.controller_packet_metadata:
            meta = ControllerHeaderMeta(
                cpm.preamble.id,
                cpm.preamble.name,
                [FieldInfo(m.id, m.name, m.bitwidth) for m in cpm.metadata],
            )
            self.controller_headers[cpm.preamble.name] = meta
            # p4c names them after the annotation ("packet_in"); a hint may name the header type
            kind = (
                cpm.preamble.name
                if cpm.preamble.name in ("packet_in", "packet_out")
                else (header_kinds or {}).get(cpm.preamble.name)
            )
            if kind == "packet_in":
                self.packet_in = meta
            elif kind == "packet_out":
                self.packet_out = meta
        self._names: dict[str, dict[str, Any]] = {
            "table": {t.name: t for t in self.tables.values()},
            "action": {a.name: a for a in self.actions.values()},
            "counter": {c.name: c for c in self.counters.values()},
            "direct counter": {c.name: c for c in self.direct_counters.values()},
            "meter": {m.name: m for m in self.meters.values()},
            "direct meter": {m.name: m for m in self.direct_meters.values()},
            "register": {r.name: r for r in self.registers.values()},
            "digest": {d.name: d for d in self.digests.values()},
            "action profile": {a.name: a for a in self.action_profiles.values()},
        }

    @classmethod
    def from_bytes(cls, data: bytes) -> Schema:
        msg = p4info_pb2.P4Info()
        msg.ParseFromString(data)
        return cls(msg)

    # -- lookups: an int is an id (what a request carries), a str a name (what a person types)
    def _get(
        self, kind: str, by_id: Mapping[int, Any], key: int | str, code: str = "NOT_FOUND"
    ) -> Any:
        if isinstance(key, str):
            return _by_name(kind, self._names[kind], key)
        hit = by_id.get(key)
        if hit is None:
            raise P4RuntimeError(code, f"no {kind} with id {key}")
        return hit

    def table(self, key: int | str) -> TableMeta:
        return self._get("table", self.tables, key)

    def action_profile(self, key: int | str) -> ActionProfileMeta:
        return self._get("action profile", self.action_profiles, key)

    def action(self, key: int | str) -> ActionMeta:
        # an unknown action id in an entry is a malformed entry (INVALID_ARGUMENT), as in PI
        return self._get("action", self.actions, key, "INVALID_ARGUMENT")

    def counter(self, key: int | str) -> ResourceMeta:
        return self._get("counter", self.counters, key)

    def direct_counter(self, key: int | str) -> ResourceMeta:
        return self._get("direct counter", self.direct_counters, key)

    def meter(self, key: int | str) -> ResourceMeta:
        return self._get("meter", self.meters, key)

    def direct_meter(self, key: int | str) -> ResourceMeta:
        return self._get("direct meter", self.direct_meters, key)

    def register(self, key: int | str) -> ResourceMeta:
        return self._get("register", self.registers, key)

    def digest(self, key: int | str) -> ResourceMeta:
        return self._get("digest", self.digests, key)

    def controller_header(self, kind: str) -> ControllerHeaderMeta | None:
        """The packet_in or packet_out header, if the program has one."""
        if kind == "packet_in":
            return self.packet_in
        if kind == "packet_out":
            return self.packet_out
        return self.controller_headers.get(kind)

    def name(self, obj_id: int) -> str:
        """The name of any table, action or resource id."""
        for group in (
            self.tables,
            self.actions,
            self.counters,
            self.direct_counters,
            self.meters,
            self.direct_meters,
            self.registers,
            self.digests,
        ):
            if obj_id in group:
                return group[obj_id].name
        raise P4RuntimeError("NOT_FOUND", f"no P4Info object with id {obj_id:#x}")

    def names(self) -> dict[str, list[str]]:
        """Names by kind, in P4Info order (what `rocelab` lists)."""
        return {
            "tables": [t.name for t in self.tables.values()],
            "actions": [a.name for a in self.actions.values()],
            "registers": [r.name for r in self.registers.values()],
            "counters": [c.name for c in self.counters.values()],
        }


def check_p4info_matches(client: p4info_pb2.P4Info, ours: p4info_pb2.P4Info) -> None:
    """The P4Info a client pushes must describe the program the server compiled: same
    objects, same ids (so that ids in later requests mean what the client thinks)."""
    for kind in (
        "tables",
        "actions",
        "counters",
        "direct_counters",
        "meters",
        "direct_meters",
        "registers",
        "digests",
        "controller_packet_metadata",
    ):
        mine = {o.preamble.name: o.preamble.id for o in getattr(ours, kind)}
        for obj in getattr(client, kind):
            name, oid = obj.preamble.name, obj.preamble.id
            if name not in mine:
                raise invalid(
                    f"P4Info does not match the program: {kind[:-1]} {name!r} is not in it"
                )
            if mine[name] != oid:
                raise invalid(
                    f"P4Info does not match the program: {kind[:-1]} {name!r} has id {oid:#x}, "
                    f"the program gives it {mine[name]:#x}"
                )
    for t_client in client.tables:
        t_ours = next(t for t in ours.tables if t.preamble.name == t_client.preamble.name)
        ours_fields = {(f.id, f.name, f.bitwidth) for f in t_ours.match_fields}
        if {(f.id, f.name, f.bitwidth) for f in t_client.match_fields} != ours_fields:
            raise invalid(
                f"P4Info does not match the program: match fields of table {t_client.preamble.name!r} differ"
            )
