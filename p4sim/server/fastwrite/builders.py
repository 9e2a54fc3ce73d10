"""Write's fast path, step 3: a learned shape bound to one pipeline (`bind`): its value
bytes checked as the reference checks them and made into the entry for the apply stage, or
stored by the builder itself through the table's pre-checked entry points, a whole run at
once where it can (`bulk`)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from p4rtproto.codec import Schema, TableMeta, decode_table_entry, entry_key
from p4rtproto.entities import Exact, Lpm, Optional_, TableEntry, Ternary
from p4sim.server.fastwrite.scan import _compiled
from p4sim.server.fastwrite.shapes import _DELETE, _INSERT, _MODIFY, RunRows, _Shape

# A builder returns None (a value refused: the reference checks say why), (table, entry)
# for the apply stage, or DONE when it has stored the update itself through the table's
# pre-checked entry points (bind() with a pipeline)
DONE = True
Builder = Callable[[Sequence[bytes]], "tuple[TableMeta, TableEntry] | bool | None"]


def _bind_exact1(
    meta: TableMeta, spec: tuple, param: tuple | None, action: str, priority: int
) -> Builder:
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
    if not isinstance(sw, Switch) or any(
        getattr(cls, n) is not getattr(Switch, n)
        for n in ("_table", "table_add", "table_modify", "table_delete")
    ):
        return None
    try:
        t = sw._table(meta.name)
    except Exception:
        return None
    if type(t) is not Table or t.name != meta.name or t.const_entries:
        return None
    return t


def _bind_checked(
    shape: _Shape,
    pipeline: Any,
    meta: TableMeta,
    ref: TableEntry,
    specs: list,
    params: list,
    fallback: Builder,
) -> Builder | None:
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
    if (
        tuple(sp[0] for sp in specs) != t.key_names
        or tuple(sp[1] for sp in specs) != t.kinds
        or tuple(sp[2] for sp in specs) != t.widths
    ):
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
                    got = compiled.exact1_run_values(
                        rows.data,
                        rows.r0,
                        rows.stride,
                        rows.k,
                        koff,
                        klen,
                        kwidth,
                        poff,
                        plen,
                        pwidth,
                    )
                else:
                    got = compiled.exact1_values(
                        rows, kslot, kwidth, -1 if pslot is None else pslot, pwidth
                    )
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
            done = (
                table.delete_exact1_many(vs)
                if utype == _DELETE
                else table.modify_exact1_many(vs, aid, args)
            )
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
        if (
            kind not in ("exact", "lpm", "ternary", "optional")
            or sa is None
            or (kind == "ternary" and sb is None)
        ):
            return None  # ranges, and empty values (refused anyway): the reference path
    if any(sv is None for _, (sv, _) in shape.params):
        return None
    try:
        meta, ref = decode_table_entry(
            schema, shape.plain(dummy), need_action=shape.utype != _DELETE
        )
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


def _bind_entry(
    meta: TableMeta, ref: TableEntry, specs: list, params: list, priority: int
) -> Builder:
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
        return meta, TableEntry(
            table=table, match=match, action=action, params=args, priority=priority
        )

    return build
