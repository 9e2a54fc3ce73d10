"""ProgramModel -> P4Info (p4runtime 1.4), with the ids p4c would assign.

Ids follow p4c's control-plane symbol table:
- `@id(N)` wins; if N has no 8-bit resource prefix, the prefix is added; a wrong prefix
  or an id used twice is an error.
- otherwise, per resource type, names are taken in sorted order and get
  `(prefix << 24) | (jenkins_one_at_a_time(name) & 0xffffff)`; on a collision the hash
  value is incremented (linear probing) until the id is free.
- names are hashed without a leading dot; the alias is the shortest dot-separated suffix
  that is unique among all symbols of the program.
- controller headers: `ControllerHeaderInfo.name` is the header TYPE's name (it gives the
  id); the preamble's name and alias are its kind ("packet_in" / "packet_out").
- digests: `DigestInfo.name` is the digested struct type's name (p4c names the digest
  after it); its fields go to type_info.structs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from google.protobuf import json_format, text_format

from p4rtproto import p4info_pb2
from p4sim import externs as registry

from .model import (
    ActionInfo,
    Annotated,
    ControllerHeaderInfo,
    P4SimError,
    ProgramModel,
    TableInfo,
)

PREFIX = {name: value for name, value in p4info_pb2.P4Ids.Prefix.items()}
MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_SCOPE = {
    "TABLE_AND_DEFAULT": (p4info_pb2.ActionRef.TABLE_AND_DEFAULT, None),
    "TABLE_ONLY": (p4info_pb2.ActionRef.TABLE_ONLY, "@tableonly"),
    "DEFAULT_ONLY": (p4info_pb2.ActionRef.DEFAULT_ONLY, "@defaultonly"),
}
# Annotations that P4Info expresses by other means (p4c's addAnnotations,
# control-plane/p4RuntimeArchHandler.h, drops only @name and @id there: an action's own
# @tableonly / @defaultonly stay in its preamble; p4rtproto's sample fastwrite_kinds).
_SKIP_ANNOTATIONS = ("@name", "@id", "@controller_header")


class P4InfoError(P4SimError):
    """The program's control-plane description cannot be turned into P4Info."""


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash on 32-bit unsigned arithmetic."""
    h = 0
    for byte in data:
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def _plain(name: str) -> str:
    return name[1:] if name.startswith(".") else name


class IdAllocator:
    """Assigns P4Info ids the way p4c does (see the module docstring)."""

    def __init__(self) -> None:
        self.assigned: set[int] = set()
        self.ids: dict[tuple[str, str], int] = {}  # (resource type, name) -> id
        self._pending: dict[str, list[str]] = {}

    def add(self, kind: str, name: str, user_id: int | None) -> None:
        """Register a symbol; kind is a P4Ids.Prefix name (ACTION, TABLE, ...)."""
        name = _plain(name)
        key = (kind, name)
        if key in self.ids or name in self._pending.get(kind, ()):
            return  # the same symbol twice is fine (p4c too)
        if user_id is None:
            self._pending.setdefault(kind, []).append(name)
            return
        prefix = PREFIX[kind] << 24
        if user_id & 0xFF000000 and (user_id & 0xFF000000) != prefix:
            raise P4InfoError(
                f"{name}: @id 0x{user_id:08x} has the wrong 8-bit prefix "
                f"for a {kind.lower().replace('_', ' ')} (0x{PREFIX[kind]:02x})"
            )
        uid = user_id | prefix
        if uid in self.assigned:
            raise P4InfoError(f"@id 0x{uid:08x} is assigned to multiple declarations ({name})")
        self.assigned.add(uid)
        self.ids[key] = uid

    def compute(self) -> None:
        """Give every symbol without @id its hash-based id (sorted names, linear probing)."""
        for kind, names in self._pending.items():
            prefix = PREFIX[kind] << 24
            for name in sorted(set(names), key=lambda n: n.encode()):
                start = jenkins_one_at_a_time(name.encode())
                value = start
                while True:
                    uid = prefix | (value & 0xFFFFFF)
                    if uid not in self.assigned:
                        break
                    value = (value + 1) & 0xFFFFFFFF
                    if value == start:
                        raise P4InfoError(f"no id left to represent {name} in P4Runtime")
                self.assigned.add(uid)
                self.ids[(kind, name)] = uid
        self._pending.clear()

    def get(self, kind: str, name: str) -> int:
        try:
            return self.ids[(kind, _plain(name))]
        except KeyError:
            raise P4InfoError(f"unknown {kind.lower().replace('_', ' ')} '{name}'") from None


def shortest_unique_suffixes(names: Iterable[str]) -> dict[str, str]:
    """For each dotted name, the shortest suffix (whole components) no other name shares."""
    names = sorted({_plain(n) for n in names})
    counts: dict[tuple[str, ...], int] = {}
    for n in names:
        parts = n.split(".")
        for k in range(1, len(parts) + 1):
            suffix = tuple(parts[-k:])
            counts[suffix] = counts.get(suffix, 0) + 1
    result: dict[str, str] = {}
    for n in names:
        parts = n.split(".")
        for k in range(1, len(parts) + 1):
            if counts[tuple(parts[-k:])] < 2:
                result[n] = ".".join(parts[-k:])
                break
        else:
            result[n] = n
    return result


_ANN_NAME = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)")
_ANN_STRING = re.compile(r'@\w+\(\s*"((?:[^"\\]|\\.)*)"\s*\)$')


def _ann_name(text: str) -> str:
    m = _ANN_NAME.match(text)
    return m.group(1) if m else ""


def _hidden(info: Annotated) -> bool:
    """@hidden objects get an id (p4c's symbol table has them) but are not in P4Info."""
    return any(_ann_name(a) == "hidden" for a in info.annotations)


def _preamble(pre: p4info_pb2.Preamble, info: Annotated, uid: int, alias: str) -> None:
    pre.id = uid
    pre.name = _plain(info.name)
    pre.alias = alias
    for a in info.annotations:
        name = _ann_name(a)
        if name in ("brief", "description"):
            # p4c's addDocumentation: these fill `doc`, not `annotations`
            m = _ANN_STRING.match(a)
            if m:
                setattr(pre.doc, name, m.group(1).encode().decode("unicode_escape"))
            continue
        if not a.startswith(_SKIP_ANNOTATIONS):
            pre.annotations.append(a)


def p4info_from_model(model: ProgramModel) -> p4info_pb2.P4Info:
    """Build the P4Info message describing `model`, with p4c-compatible ids."""
    alloc = IdAllocator()
    externs = list(registry.with_model())  # each extern module writes its own P4Info entries
    groups: list[tuple[str, dict[str, Annotated]]] = [
        ("ACTION", model.actions),
        ("TABLE", model.tables),
        *((ext.p4info_prefix, ext.objects(model)) for ext in externs),
        ("CONTROLLER_HEADER", model.controller_headers),
    ]
    # @id first (p4c assigns user ids while collecting, hash ids afterwards)
    for kind, objs in groups:
        for info in objs.values():
            if info.id is not None:
                alloc.add(kind, info.name, info.id)
    for kind, objs in groups:
        for info in objs.values():
            if info.id is None:
                alloc.add(kind, info.name, None)
    alloc.compute()
    aliases = shortest_unique_suffixes(info.name for _, objs in groups for info in objs.values())

    p4info = p4info_pb2.P4Info()
    # p4c sets only the arch here (P4RuntimeAnalyzer::addPkgInfo: name, version... come
    # from a @pkginfo annotation on `main`, which p4sim does not read), not the file name
    p4info.pkg_info.arch = model.arch

    def pre(msg, kind: str, info: Annotated) -> None:
        _preamble(msg.preamble, info, alloc.get(kind, info.name), aliases[_plain(info.name)])

    for table in _sorted(model.tables):
        _table(p4info.tables.add(), table, model, alloc, pre)
    for action in _sorted(model.actions):
        _action(p4info.actions.add(), action, pre)
    for ext in externs:
        for info in _sorted(ext.objects(model)):
            ext.p4info(p4info, info, pre, alloc.get)
    for h in _sorted(model.controller_headers):
        _controller_header(p4info.controller_packet_metadata.add(), h, pre)
    if _touches_type_info(model, externs):
        p4info.type_info.SetInParent()
    return p4info


def _touches_type_info(model: ProgramModel, externs: list) -> bool:
    """p4c 1.2.5.16 writes `type_info {}` (empty or not) once anything asks for it: a table,
    an action parameter, a controller header, an extern instance or an extern function
    called in a control (control-plane/p4RuntimeSerializer.cpp: addTable, addAction,
    addControllerHeader, analyzeControl; p4RuntimeArchStandard: addExternInstance); a value
    set does not (addValueSet)."""
    return bool(
        model.tables
        or any(a.params for a in model.actions.values())
        or model.controller_headers
        or any(ext.objects(model) for ext in externs if ext.touches_type_info)
        or model.calls_extern_function
    )


def _sorted(objs: dict[str, Annotated]) -> list:
    # p4c emits each kind in the order its symbols were collected; we use name order,
    # which makes the output stable (P4Runtime clients look objects up by id or name).
    return [objs[k] for k in sorted(objs, key=lambda n: _plain(n).encode()) if not _hidden(objs[k])]


def _table(
    msg: p4info_pb2.Table, t: TableInfo, model: ProgramModel, alloc: IdAllocator, pre
) -> None:
    pre(msg, "TABLE", t)
    for k in t.keys:
        mf = msg.match_fields.add()
        mf.id = k.id
        mf.name = k.name
        mf.bitwidth = k.bitwidth
        if k.match_kind in MATCH_TYPES:
            mf.match_type = MATCH_TYPES[k.match_kind]
        else:
            mf.other_match_type = k.match_kind
    for ref in t.actions:
        if ref.name not in model.actions and _plain(ref.name) not in {
            _plain(n) for n in model.actions
        }:
            raise P4InfoError(f"table {t.name}: action '{ref.name}' is not in the program model")
        ar = msg.action_refs.add()
        ar.id = alloc.get("ACTION", ref.name)
        scope, annotation = _SCOPE.get(ref.scope, (None, None))
        if scope is None:
            raise P4InfoError(f"table {t.name}: unknown action scope '{ref.scope}'")
        ar.scope = scope
        if annotation:
            ar.annotations.append(annotation)
    if t.const_default_action and t.default_action is not None:
        msg.const_default_action_id = alloc.get("ACTION", t.default_action)
    if t.default_action is not None:
        # p4runtime 1.4: the default action the program starts with
        msg.initial_default_action.action_id = alloc.get("ACTION", t.default_action)
        action = _find(model.actions, t.default_action)
        for param, value in zip(action.params if action else (), t.default_params, strict=False):
            arg = msg.initial_default_action.arguments.add()
            arg.param_id = param.id
            # p4c 1.2.5.16 writes these at the parameter's width in bytes (other values
            # elsewhere in P4Runtime are the shortest string)
            arg.value = value.to_bytes((param.bitwidth + 7) // 8, "big")
    if t.implementation is not None:  # p4c addTableProperties: the profile's id
        msg.implementation_id = alloc.get("ACTION_PROFILE", t.implementation)
    if t.direct_counter is not None:
        msg.direct_resource_ids.append(alloc.get("DIRECT_COUNTER", t.direct_counter))
    if t.direct_meter is not None:
        msg.direct_resource_ids.append(alloc.get("DIRECT_METER", t.direct_meter))
    msg.size = t.size
    # p4c getConstTable (the `const entries` property, even empty) and
    # getHasInitialEntries (`entries` or `const entries` with at least one entry)
    msg.is_const_table = t.const_entries
    msg.has_initial_entries = t.initial_entries


def _find(objs: dict, name: str):
    if name in objs:
        return objs[name]
    plain = _plain(name)
    for k, v in objs.items():
        if _plain(k) == plain:
            return v
    return None


def _bytes(value: int) -> bytes:
    """P4Runtime canonical bytestring: big-endian, shortest form (at least one byte)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _action(msg: p4info_pb2.Action, a: ActionInfo, pre) -> None:
    pre(msg, "ACTION", a)
    for p in a.params:
        pm = msg.params.add()
        pm.id = p.id
        pm.name = p.name
        pm.bitwidth = p.bitwidth


def _controller_header(
    msg: p4info_pb2.ControllerPacketMetadata, h: ControllerHeaderInfo, pre
) -> None:
    # As p4c: the id comes from the header type's name (h.name), while the preamble's name
    # and alias are the annotation's value ("packet_in" / "packet_out").
    pre(msg, "CONTROLLER_HEADER", h)
    kind = h.kind or _plain(h.name)
    msg.preamble.name = kind
    msg.preamble.alias = kind
    msg.preamble.annotations.insert(0, f'@controller_header("{kind}")')
    for f in h.fields:
        md = msg.metadata.add()
        md.id = f.id
        md.name = f.name
        md.bitwidth = f.bitwidth


build_p4info = p4info_from_model  # the name p4sim.cli uses


def write_p4info(model: ProgramModel, path: str, fmt: str = "text") -> p4info_pb2.P4Info:
    """Write P4Info for `model` to `path` as 'text' (protobuf text), 'binary' or 'json'."""
    p4info = p4info_from_model(model)
    if fmt == "text":
        data = text_format.MessageToString(p4info).encode()
    elif fmt == "binary":
        data = p4info.SerializeToString()
    elif fmt == "json":
        data = json_format.MessageToJson(p4info).encode()
    else:
        raise ValueError(f"unknown P4Info format '{fmt}' (text, binary or json)")
    with open(path, "wb") as f:
        f.write(data)
    return p4info


def read_p4info(path: str, fmt: str | None = None) -> p4info_pb2.P4Info:
    """Read P4Info written by p4c or `write_p4info` (format from the extension if not given)."""
    if fmt is None:
        ext = os.path.splitext(path)[1].lower()
        fmt = {
            ".txt": "text",
            ".txtpb": "text",
            ".pb": "binary",
            ".bin": "binary",
            ".json": "json",
        }.get(ext, "text")
    p4info = p4info_pb2.P4Info()
    with open(path, "rb") as f:
        data = f.read()
    if fmt == "binary":
        p4info.ParseFromString(data)
    elif fmt == "json":
        json_format.Parse(data.decode(), p4info)
    else:
        text_format.Parse(data.decode(), p4info)
    return p4info


__all__ = [
    "IdAllocator",
    "P4InfoError",
    "build_p4info",
    "jenkins_one_at_a_time",
    "p4info_from_model",
    "read_p4info",
    "shortest_unique_suffixes",
    "write_p4info",
]
