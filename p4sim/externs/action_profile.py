"""v1model `action_profile(size)` and `action_selector(algo, size, outputWidth)`: the
`implementation` of indirect tables (runtime: `p4sim.runtime.action_profile`).

P4Info as p4c writes it (control-plane/p4RuntimeArchStandard.cpp, `addActionProfile`):
an `action_profiles` entry (id prefix ACTION_PROFILE) with the ids of the tables using it
(p4c keeps their names in a std::set, so name order), `with_selector`, `size` and, from a
`@max_group_size` annotation, `max_group_size`; each such table gets `implementation_id`.
Its `selector` keys are not match fields (p4RuntimeSerializer.cpp `getMatchType` skips
them) though they keep their position in the field ids.

Names: a declared instance has its control-plane name. One constructed in place
(`implementation = action_selector(...)`) is named as p4c's `getTableImplementationName`
does, by the property's control-plane name: its `@name`, else `implementation`.

P4Runtime: ActionProfileMember and ActionProfileGroup INSERT/MODIFY/DELETE and Read; the
spec's codes for misuse (unknown profile, member or group: NOT_FOUND; a member or group in
use: FAILED_PRECONDITION; a full profile or an oversize group: RESOURCE_EXHAUSTED).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from p4sim.frontend import ast
from p4sim.model import ActionProfileInfo
from p4sim.spec import ExternSpec

from . import extern
from ._common import enum_member
from .base import Extern

MODEL_FIELD = "action_profiles"


def _max_group_size(d: ast.Node) -> int:
    a = d.annotation("max_group_size") if isinstance(d, ast.Annotated) else None
    v = a.int_value() if a is not None else None
    return int(v) if v else 0


def infos(model: Any) -> dict[str, ActionProfileInfo]:
    """Both kinds share one ProgramModel dict (P4Info lists both under action_profiles)."""
    return model.externs.setdefault(MODEL_FIELD, {})


class _Profiles(Extern):
    p4info_prefix = "ACTION_PROFILE"
    table_property = "implementation"
    selector = False

    def instantiate(self, cc: Any, d: Any, t: Any, scope: Any, name: str) -> ExternSpec:
        if self.selector:
            algo = enum_member(d.args[0].value)
            size = cc.const_eval(d.args[1].value, scope)
        else:
            algo, size = "", cc.const_eval(d.args[0].value, scope)
        mgs = _max_group_size(d)
        infos(cc.model)[name] = ActionProfileInfo(
            name=name, id=cc.ann_id(d), annotations=cc.annotations_text(d), size=size,
            with_selector=self.selector, algo=algo, max_group_size=mgs)
        return ExternSpec("", self.name, name, size=size, params={"algo": algo, "max_group_size": mgs,
                                                                  "selector": self.selector})

    def bind_table(self, cc: Any, instance: str, table: str) -> None:
        objs = infos(cc.model)
        info = objs[instance]
        objs[instance] = dataclasses.replace(info, tables=(*info.tables, table))

    def build(self, spec: ExternSpec) -> object:
        from p4sim.externs.hash import FIXED
        from p4sim.runtime.action_profile import Profile

        return Profile(spec.name, spec.size, self.selector, spec.params.get("max_group_size", 0),
                       FIXED.get(spec.params.get("algo", "")))

    def attach(self, sw: Any, spec: ExternSpec, obj: Any) -> None:
        sw.action_profiles[spec.name] = obj
        algo = spec.params.get("algo", "")
        if self.selector and obj.hashfn is None:  # crc*_custom, random: the switch's own
            obj.hashfn = lambda data, _h=sw.hash, _a=algo: _h(_a, data, 0, 0)

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        msg = out.action_profiles.add()
        pre(msg, self.p4info_prefix, info)
        msg.table_ids.extend(ids("TABLE", t) for t in sorted(info.tables))
        msg.with_selector = info.with_selector
        msg.size = info.size
        if info.max_group_size:
            msg.max_group_size = info.max_group_size

    def cells(self, info: Any) -> int:
        return info.size

    def describe(self, info: Any) -> str:
        kind = "action_selector" if info.with_selector else "action_profile"
        return f"{kind} {info.name} size {info.size}" + (f" {info.algo}" if info.algo else "") + \
            (f" tables {', '.join(info.tables)}" if info.tables else "")

    # ---------------------------------------------------------------- P4Runtime

    def write(self, svc: Any, p: Any, utype: int, entity: str, msg: Any) -> None:
        from p4rtproto import codec, p4runtime_pb2
        from p4rtproto.errors import RequestError, invalid

        upd = p4runtime_pb2.Update
        meta = p.maps.action_profile(msg.action_profile_id)
        prof = p.switch.action_profile(meta.name)
        if entity == "action_profile_member":
            mid = msg.member_id
            if utype == upd.DELETE:
                prof.member_delete(mid)
                return
            if not msg.HasField("action"):
                raise invalid(f"action profile {meta.name}: member {mid} has no action")
            if not meta.table_ids:
                raise invalid(f"action profile {meta.name} is used by no table")
            tmeta = p.maps.table(meta.table_ids[0])
            action, params = codec.decode_action(p.maps, tmeta, msg.action.action_id,
                                                 [(prm.param_id, prm.value) for prm in msg.action.params],
                                                 default=False)
            if utype == upd.INSERT:
                prof.member_add(mid, action, params)
            elif utype == upd.MODIFY:
                prof.member_modify(mid, action, params)
            else:
                raise invalid(f"unknown update type {utype}")
            return
        gid = msg.group_id
        if not meta.with_selector:
            raise invalid(f"action profile {meta.name} has no selector: it has no groups")
        if utype == upd.DELETE:
            prof.group_delete(gid)
            return
        mids = []
        for m in msg.members:
            if m.weight != 1:
                # BMv2 holds a member once per group (a set): no weights
                raise RequestError("UNIMPLEMENTED" if m.weight > 1 else "INVALID_ARGUMENT",
                                   f"action selector {meta.name}: group {gid}: member {m.member_id} has weight"
                                   f" {m.weight}; p4sim takes weight 1 only (as BMv2)")
            if m.WhichOneof("watch_kind") is not None:
                raise RequestError("UNIMPLEMENTED", f"action selector {meta.name}: watch ports are not supported")
            mids.append(m.member_id)
        if msg.max_size and len(mids) > msg.max_size:
            raise RequestError("RESOURCE_EXHAUSTED", f"action selector {meta.name}: group {gid} has"
                               f" max_size {msg.max_size}, {len(mids)} members given")
        if meta.max_group_size and msg.max_size > meta.max_group_size:
            raise invalid(f"action selector {meta.name}: max_size {msg.max_size} exceeds the"
                          f" max_group_size {meta.max_group_size} of P4Info")
        if utype == upd.INSERT:
            prof.group_add(gid, mids)
        elif utype == upd.MODIFY:
            prof.group_modify(gid, mids)
        else:
            raise invalid(f"unknown update type {utype}")

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import codec, p4runtime_pb2

        metas = [p.maps.action_profile(req.action_profile_id)] if req.action_profile_id \
            else list(p.maps.action_profiles.values())
        for meta in metas:
            prof = p.switch.action_profile(meta.name)
            if entity == "action_profile_member":
                mids = [req.member_id] if req.member_id else list(prof.members)
                for mid in mids:
                    m = prof.members.get(mid)
                    if m is None:
                        continue  # a Read of what is not there returns nothing
                    ent = p4runtime_pb2.Entity()
                    out = ent.action_profile_member
                    out.action_profile_id, out.member_id = meta.id, mid
                    codec.fill_action(out.action, p.maps, m.action, m.params)
                    yield ent
            elif meta.with_selector:
                gids = [req.group_id] if req.group_id else list(prof.groups)
                for gid in gids:
                    g = prof.groups.get(gid)
                    if g is None:
                        continue
                    ent = p4runtime_pb2.Entity()
                    out = ent.action_profile_group
                    out.action_profile_id, out.group_id = meta.id, gid
                    for m in g.members:
                        out.members.add(member_id=m.mid, weight=1)
                    yield ent


@extern
class ActionProfile(_Profiles):
    """Also the model/P4Info/P4Runtime side of selectors: one `action_profiles` list."""

    name = "action_profile"
    model_field = MODEL_FIELD
    entities = ("action_profile_member", "action_profile_group")


@extern
class ActionSelector(_Profiles):
    name = "action_selector"
    selector = True
