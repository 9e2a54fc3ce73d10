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
        # p4c's ActionProfileTraits addActionProfile (control-plane/p4RuntimeArchStandard.h)
        # leaves these out of the preamble: max_group_size is a field of its own
        shown = tuple(
            a
            for a in cc.annotations_text(d)
            if not a.startswith(
                ("@max_group_size", "@selector_size_semantics", "@max_member_weight")
            )
        )
        infos(cc.model)[name] = ActionProfileInfo(
            name=name,
            id=cc.ann_id(d),
            annotations=shown,
            size=size,
            with_selector=self.selector,
            algo=algo,
            max_group_size=mgs,
        )
        return ExternSpec(
            "",
            self.name,
            name,
            size=size,
            params={"algo": algo, "max_group_size": mgs, "selector": self.selector},
        )

    def bind_table(self, cc: Any, instance: str, table: str) -> None:
        objs = infos(cc.model)
        info = objs[instance]
        objs[instance] = dataclasses.replace(info, tables=(*info.tables, table))

    def build(self, spec: ExternSpec) -> object:
        from p4sim.externs.hash import FIXED
        from p4sim.runtime.action_profile import Profile

        return Profile(
            spec.name,
            spec.size,
            self.selector,
            spec.params.get("max_group_size", 0),
            FIXED.get(spec.params.get("algo", "")),
        )

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
        return (
            f"{kind} {info.name} size {info.size}"
            + (f" {info.algo}" if info.algo else "")
            + (f" tables {', '.join(info.tables)}" if info.tables else "")
        )

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
            action, params = codec.decode_action(
                p.maps,
                tmeta,
                msg.action.action_id,
                [(prm.param_id, prm.value) for prm in msg.action.params],
                default=False,
            )
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
                raise RequestError(
                    "UNIMPLEMENTED" if m.weight > 1 else "INVALID_ARGUMENT",
                    f"action selector {meta.name}: group {gid}: member {m.member_id} has weight"
                    f" {m.weight}; p4sim takes weight 1 only (as BMv2)",
                )
            if m.WhichOneof("watch_kind") is not None:
                raise RequestError(
                    "UNIMPLEMENTED", f"action selector {meta.name}: watch ports are not supported"
                )
            mids.append(m.member_id)
        if msg.max_size and len(mids) > msg.max_size:
            raise RequestError(
                "RESOURCE_EXHAUSTED",
                f"action selector {meta.name}: group {gid} has"
                f" max_size {msg.max_size}, {len(mids)} members given",
            )
        if meta.max_group_size and msg.max_size > meta.max_group_size:
            raise invalid(
                f"action selector {meta.name}: max_size {msg.max_size} exceeds the"
                f" max_group_size {meta.max_group_size} of P4Info"
            )
        if utype == upd.INSERT:
            prof.group_add(gid, mids)
        elif utype == upd.MODIFY:
            prof.group_modify(gid, mids)
        else:
            raise invalid(f"unknown update type {utype}")

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import codec, p4runtime_pb2

        metas = (
            [p.maps.action_profile(req.action_profile_id)]
            if req.action_profile_id
            else list(p.maps.action_profiles.values())
        )
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
    """Also the model/P4Info/P4Runtime/SwitchAPI/STF side of selectors: one `action_profiles`."""

    name = "action_profile"
    model_field = MODEL_FIELD
    entities = ("action_profile_member", "action_profile_group")

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.action_profiles = {}  # name -> p4sim.runtime.action_profile.Profile (filled by attach)

    def api(self) -> dict[str, Any]:
        return {"action_profile": action_profile}

    def stf_commands(self) -> dict[str, Any]:
        return {
            op: _stf_indirect
            for op in (
                "act_prof_create_member",
                "act_prof_modify_member",
                "act_prof_delete_member",
                "act_prof_create_group",
                "act_prof_delete_group",
                "act_prof_add_member_to_group",
                "act_prof_remove_member_from_group",
                "table_indirect_add",
                "table_indirect_add_with_group",
            )
        }


@extern
class ActionSelector(_Profiles):
    name = "action_selector"
    selector = True


def action_profile(sw: Any, name: str) -> Any:
    """SwitchAPI: the action profile/selector `name` (a unique suffix will do), whose methods
    are its control plane (member_add, group_add, ...: p4sim.runtime.action_profile)."""
    from p4sim.runtime.switch import resolve_name

    return sw.action_profiles[resolve_name(name, sw.action_profiles, "action profile")]


def _stf_indirect(runner: Any, c: Any) -> None:
    """simple_switch_CLI's action-profile commands, passed through as the other CLI commands
    are: members and groups are named by the handle BMv2 gives them (lowest free first, as
    simple_switch_CLI prints it)."""
    from p4sim.model import P4SimError, TableEntry
    from p4sim.runtime.switch import resolve_name
    from p4sim.stf import _key_value, parse_int

    sw, op, a = runner.sw, c.op, c.args
    if op.startswith("table_indirect_"):
        if "=>" not in a:
            raise ValueError(f"{op} TABLE KEY... => HANDLE [PRIORITY]")
        i = a.index("=>")
        tname = resolve_name(a[0], sw.tables, "table")
        t = sw.tables[tname]
        keys, rest = a[1:i], a[i + 1 :]
        if len(keys) != len(t.key_names) or not 1 <= len(rest) <= 2:
            raise ValueError(
                f"{op} {tname}: {len(t.key_names)} key values, then => HANDLE [PRIORITY]"
            )
        match = {
            k: _key_value(v, kind, w)
            for k, v, kind, w in zip(t.key_names, keys, t.kinds, t.widths, strict=True)
        }
        prio = (1 << 24) - int(rest[1]) if len(rest) > 1 else 0  # simple_switch_CLI: the lower wins
        h = parse_int(rest[0])
        sw.table_add(
            TableEntry(
                tname,
                match,
                "",
                {},
                priority=prio,
                member=h if op == "table_indirect_add" else None,
                group=h if op == "table_indirect_add_with_group" else None,
            )
        )
        return
    prof = action_profile(sw, a[0])

    def params(action: str, values: list[str]) -> dict[str, int]:
        names = prof.action_params(action)
        if len(values) != len(names):
            raise ValueError(f"{op}: action {action} takes {len(names)} parameter(s)")
        return dict(zip(names, map(parse_int, values), strict=True))

    if op == "act_prof_create_member":
        prof.member_add(prof.next_ids()[0], a[1], params(a[1], a[2:]))
    elif op == "act_prof_modify_member":
        prof.member_modify(int(a[2]), a[1], params(a[1], a[3:]))
    elif op == "act_prof_delete_member":
        prof.member_delete(int(a[1]))
    elif op == "act_prof_create_group":
        prof.group_add(prof.next_ids()[1], [])
    elif op == "act_prof_delete_group":
        prof.group_delete(int(a[1]))
    else:  # act_prof_add_member_to_group / act_prof_remove_member_from_group PROF MBR GRP
        mid, gid = int(a[1]), int(a[2])
        now = [m.mid for m in prof.group(gid).members]
        if op == "act_prof_add_member_to_group":
            if mid in now:
                raise P4SimError(f"{op}: member {mid} is already in group {gid}")
            now.append(mid)
        elif mid in now:
            now.remove(mid)
        else:
            raise P4SimError(f"{op}: member {mid} is not in group {gid}")
        prof.group_modify(gid, now)
