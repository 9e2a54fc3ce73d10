"""Parser `value_set<T>(size)`: not an extern in P4_16 but a control-plane object like one,
so it lives here too: its P4Info entry and its P4Runtime ValueSetEntry read/write. (Its
lowering is the parser's select, in `Compiler.keyset_cond`; its runtime object is
`p4sim.runtime.instance.ValueSet`.)

P4Runtime (spec, "ValueSetEntry"): MODIFY only; the members replace the whole set; a
member's matches are FieldMatch messages against the value set's match fields in P4Info.
p4sim's parser matches a value set as (value, mask) pairs over its select keys
concatenated (one key per field of a struct element, in order), as BMv2's parse_vsets do:
exact and optional members match the value, ternary its mask, lpm its prefix; an omitted
(non-exact) field matches everything; a range member is UNIMPLEMENTED.
"""

from __future__ import annotations

from typing import Any

from p4sim.model import Exact, Lpm, Optional_, P4SimError, Ternary

from . import extern
from ._common import resolve_name
from .base import Extern


def value_set_set(sw: Any, name: str, members: list[tuple[int, int]]) -> None:
    """Replace a parser value_set's members: (value, mask) pairs (mask all-ones = exact)."""
    vs = sw.value_sets[resolve_name(name, sw.value_sets, "value_set")]
    if len(members) > vs.size:
        raise P4SimError(f"value_set {vs.name} holds at most {vs.size} members")
    vs.members = [(int(v), int(m)) for v, m in members]


def value_set_members(sw: Any, name: str) -> list[tuple[int, int]]:
    """A parser value_set's members, as (value, mask) pairs."""
    return list(sw.value_sets[resolve_name(name, sw.value_sets, "value_set")].members)


def _meta(p: Any, vsid: int) -> Any:
    """The value set with P4Info id `vsid`, as a one-field TableMeta for codec.decode_match."""
    from p4rtproto.errors import RequestError
    from p4rtproto.schema import FieldInfo, TableMeta

    vs = next((v for v in p.maps.p4info.value_sets if v.preamble.id == vsid), None)
    if vsid == 0 or vs is None:
        raise RequestError("NOT_FOUND", f"no value set with id {vsid}")
    from p4sim.p4info import MATCH_TYPES

    kinds = {v: k for k, v in MATCH_TYPES.items()}
    fields = {
        m.id: FieldInfo(
            m.id,
            m.name or "value",
            m.bitwidth,
            kinds.get(m.match_type, m.other_match_type or "unknown"),
        )
        for m in vs.match
    }
    meta = TableMeta(
        id=vsid,
        name=vs.preamble.name,
        fields=fields,
        action_ids={},
        requires_priority=False,
        const_default=False,
        const_entries=False,
        n_exact=sum(f.match_kind == "exact" for f in fields.values()),
    )
    return vs, meta


@extern
class ValueSet(Extern):
    model_field = "value_sets"
    p4info_prefix = "VALUE_SET"
    # p4c's P4RuntimeAnalyzer::addValueSet (control-plane/p4RuntimeSerializer.cpp) fills the
    # value set's match fields itself and asks nothing of type_info
    touches_type_info = False
    entities = ("value_set_entry",)

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.value_sets = {name: ns[py] for py, name, _ in program.value_sets}

    def api(self) -> dict[str, Any]:
        return {"value_set_set": value_set_set, "value_set_members": value_set_members}

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        from p4sim.p4info import MATCH_TYPES as kinds

        msg = out.value_sets.add()
        pre(msg, self.p4info_prefix, info)
        msg.size = info.size
        for k in info.matches:
            mf = msg.match.add()
            mf.id = k.id
            if k.name:
                mf.name = k.name
            mf.bitwidth = k.bitwidth
            if k.match_kind in kinds:
                mf.match_type = kinds[k.match_kind]
            else:
                mf.other_match_type = k.match_kind

    def describe(self, info: Any) -> str:
        return f"value_set {info.name} size {info.size}"

    def write(self, svc: Any, p: Any, utype: int, entity: str, vse: Any) -> None:
        from p4rtproto import codec, p4runtime_pb2
        from p4rtproto.errors import RequestError, invalid

        vs, meta = _meta(p, vse.value_set_id)
        name = vs.preamble.name
        if utype != p4runtime_pb2.Update.MODIFY:
            raise invalid(f"value set {name}: only MODIFY is allowed")
        if len(vse.members) > vs.size:
            raise RequestError(
                "RESOURCE_EXHAUSTED",
                f"value set {name} holds at most {vs.size} members,"
                f" the request gives {len(vse.members)}",
            )
        fields = [meta.fields[m.id] for m in vs.match]  # the element's fields, in order
        members = []
        for member in vse.members:
            plain = codec.plain_from_proto(p4runtime_pb2.TableEntry(match=member.match))
            try:
                match = codec.decode_match(meta, plain.matches)
            except RequestError as e:  # the table codec's words, for a value set
                raise RequestError(
                    e.code, e.message.replace(f"table {name}", f"value set {name}", 1)
                ) from None
            value = mask = 0
            for finfo in fields:  # concatenated, first field in the high bits (as the keys)
                fm = match.get(finfo.name)
                if fm is None and finfo.match_kind == "exact":
                    raise invalid(f"value set {name}: exact field {finfo.name!r} needs a value")
                v, m = _value_mask(fm, finfo.bitwidth, name)
                value = (value << finfo.bitwidth) | v
                mask = (mask << finfo.bitwidth) | m
            members.append((value, mask))
        p.switch.value_set_set(name, members)

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import codec, p4runtime_pb2

        ids = (
            [req.value_set_id]
            if req.value_set_id
            else [v.preamble.id for v in p.maps.p4info.value_sets]
        )
        for vsid in ids:
            vs, meta = _meta(p, vsid)
            ent = p4runtime_pb2.Entity()
            out = ent.value_set_entry
            out.value_set_id = vsid
            fields = [meta.fields[m.id] for m in vs.match]
            for value, mask in p.switch.value_set_members(vs.preamble.name):
                match: dict = {}
                shift = sum(f.bitwidth for f in fields)
                for finfo in fields:
                    shift -= finfo.bitwidth
                    full = (1 << finfo.bitwidth) - 1
                    fv, fm = (value >> shift) & full, (mask >> shift) & full
                    if fm and finfo.match_kind in ("exact", "optional"):
                        match[finfo.name] = (Exact if finfo.match_kind == "exact" else Optional_)(
                            fv
                        )
                    elif fm and finfo.match_kind == "lpm":
                        match[finfo.name] = Lpm(fv, bin(fm).count("1"))
                    elif fm:
                        match[finfo.name] = Ternary(fv, fm)
                out.members.add().match.extend(codec.encode_match(meta, match))
            yield ent


def _value_mask(m: Any, width: int, name: str) -> tuple[int, int]:
    """One field of a member as (value, mask): exact and optional match the value, ternary
    its mask, lpm its prefix; an omitted (non-exact) field matches everything."""
    from p4rtproto.errors import RequestError

    full = (1 << width) - 1
    if m is None:
        return 0, 0
    if isinstance(m, (Exact, Optional_)):
        return m.value, full
    if isinstance(m, Ternary):
        return m.value & m.mask, m.mask
    if isinstance(m, Lpm):
        mk = full ^ ((1 << (width - m.prefix_len)) - 1)
        return m.value & mk, mk
    # BMv2's parser value sets are value/mask (bm_sim ParseVSet): no ranges
    raise RequestError("UNIMPLEMENTED", f"value set {name}: a range member is not a value/mask")
