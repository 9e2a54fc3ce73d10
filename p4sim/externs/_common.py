"""Helpers several extern modules share (not an extern: the registry skips `_` modules)."""

from __future__ import annotations

from typing import Any

from p4sim.frontend import ast
from p4sim.model import NotFound, P4SimError


def refuse_rebind(obj: Any, name: str, value: Any, bound: tuple[str, ...]) -> None:
    """`__setattr__` of an array whose `bound` attributes the compiled pipeline binds once
    per switch (p4sim.compiled.views): set once, then changed in place only (a rebinding
    would leave the compiled code counting into the old list)."""
    if name in bound and hasattr(obj, name):
        raise AttributeError(
            f"{type(obj).__name__}.{name} is bound into the compiled pipeline: "
            f"change it in place, do not rebind it"
        )
    object.__setattr__(obj, name, value)


def resolve_name(name: str, names: Any, what: str) -> str:
    """Full name, or a unique suffix at a '.' boundary (as p4c's STF runner resolves)."""
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        raise NotFound(f"no {what} named {name!r}")
    raise P4SimError(f"{what} name {name!r} is ambiguous: {', '.join(sorted(cands))}")


def enum_member(e: ast.Expression) -> str:
    """The member named by an enum argument such as `CounterType.packets` (check's
    CallChecker.enum_member accepted only that form)."""
    return e.member  # type: ignore[attr-defined]


def check_index(kind: str, name: str, size: int, index: int) -> None:
    if not 0 <= index < size:
        raise P4SimError(f"{kind} {name}: index {index} out of range (size {size})")


def indices(kind: str, info: Any, msg: Any) -> Any:
    """P4Runtime: the cells an indexed entity names (its index, or every cell)."""
    from p4rtproto.errors import RequestError

    if not msg.HasField("index"):
        return range(info.size)
    i = msg.index.index
    if not 0 <= i < info.size:
        raise RequestError(
            "OUT_OF_RANGE", f"{kind} {info.name}: index {i} not in 0..{info.size - 1}"
        )
    return (i,)


def modify_only(kind: str, name: str, utype: int) -> None:
    from p4rtproto import p4runtime_pb2
    from p4rtproto.errors import invalid

    if utype != p4runtime_pb2.Update.MODIFY:
        raise invalid(f"{kind}{' ' + name if name else ''}: only MODIFY is allowed")


def p4info_unit(units: dict[str, int], unit: str, name: str) -> int:
    from p4sim.p4info import P4InfoError

    try:
        return units[unit]
    except KeyError:
        raise P4InfoError(f"{name}: unknown unit '{unit}'") from None


# ---------------------------------------------------------------- preserved fields (clone/resubmit/recirculate)


def listed_fields_fn(cc: Any, e: ast.Expression, scope: Any) -> str:
    """The deprecated forms (`resubmit(data)`, `recirculate(data)`, `clone3(t, s, data)`):
    a copy function for the user-metadata fields named in `data`."""
    from p4sim.lower.codegen import fld

    elems = e.elements if isinstance(e, ast.ListExpression) else [e]
    paths: list[str] = []
    for el in elems:
        chain: list[str] = []
        x = el
        while isinstance(x, ast.Member):
            chain.append(fld(x.member))
            x = x.expr
        paths.append("".join("." + m for m in reversed(chain)))
    if not paths:
        return "None"
    fname = f"_fields_{cc.uid('keep')}"
    cc.funcs.append(f"def {fname}(src, dst):")
    for path in paths:
        if path:
            cc.funcs.append(f"    dst{path} = src{path}")
        else:  # the whole metadata struct
            cc.funcs.append("    dst.__dict__.update(src.copy().__dict__)")
    cc.funcs.append("")
    return fname


def field_list_fn(cc: Any, e: ast.Expression, scope: Any) -> str:
    """`*_preserving_field_list(index)`: the copy function of the user-metadata fields
    annotated `@field_list(index)` ("None" when no field carries that index)."""
    idx = cc.const_eval(e, scope)
    fnname = cc.pipeline.field_lists.get(idx)
    # the copy functions are generated after the controls: refer by name, checked at the end
    return fnname or f"_field_list_{idx}" if idx in _field_list_indexes(cc) else "None"


def _field_list_indexes(cc: Any) -> set[int]:
    from p4sim.check.types import TStruct

    out: set[int] = set()

    def walk(t: TStruct) -> None:
        for fname, ft in t.fields:
            for a in t.annotations.get(fname, []):
                if a.name == "field_list" and a.exprs:
                    for x in a.exprs:
                        out.add(cc.const_eval(x, cc.g))
            if isinstance(ft, TStruct) and ft.kind == "struct":
                walk(ft)

    if isinstance(cc.meta_type, TStruct):
        walk(cc.meta_type)
    return out
