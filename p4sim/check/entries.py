"""A table's const entries, refused at compile time where the switch would refuse them.

The switch installs const entries through `p4sim.runtime.tables.Table.add` when it loads a
program (`p4sim.runtime.instance`). check must not import the runtime, so these are the
rules of that method that an entry written in the source can break (check's const_entry
builds every value masked to its key or parameter width, so no value can overflow), with
the same messages; tests/p4sim/test_lower_reads_check.py runs both on the same entries.
"""

from __future__ import annotations

from p4sim.model import Exact, KeyField, Lpm, Optional_, Range, TableEntry, Ternary
from p4sim.spec import ActionSpec

from .types import mask

# what an entry may give for a key of each match kind (an exact value is always allowed)
_ALLOWED = {
    "exact": (Exact,),
    "lpm": (Exact, Lpm),
    "ternary": (Exact, Ternary),
    "range": (Exact, Range),
    "optional": (Exact, Optional_),
}


def needs_priority(keys: list[KeyField]) -> bool:
    """Whether the table is matched by priority (any key other than exact and one lpm)."""
    kinds = [k.match_kind for k in keys]
    return not (
        set(kinds) <= {"exact"} or (set(kinds) <= {"exact", "lpm"} and kinds.count("lpm") == 1)
    )


def const_entry_error(
    table: str, keys: list[KeyField], actions: list[ActionSpec], entries: list[TableEntry]
) -> tuple[int, str] | None:
    """(index, message) of the first entry the switch would refuse to install, else None."""
    prio = needs_priority(keys)
    scopes = {a.name: a.scope for a in actions}
    seen: set[tuple] = set()
    for i, te in enumerate(entries):
        if prio and te.priority <= 0:
            return i, f"table {table} needs a priority > 0 for its entries"
        canon: list[object] = []
        for k in keys:
            m = te.match.get(k.name)
            if m is None:
                if k.match_kind == "exact":
                    return i, f"table {table}: exact key {k.name!r} needs a value"
                canon.append((0, 0) if k.match_kind == "lpm" else None)  # /0, as Table._canon
                continue
            if not isinstance(m, _ALLOWED[k.match_kind]):
                return i, f"table {table}: key {k.name!r} is {k.match_kind}"
            if isinstance(m, Exact) and k.match_kind != "exact":  # one value, as the kind reads it
                v = m.value
                canon.append(
                    {
                        "lpm": (v, k.bitwidth),
                        "ternary": (v, mask(k.bitwidth)),
                        "range": (v, v),
                        "optional": v,
                    }[k.match_kind]
                )
            elif isinstance(m, Range):
                if m.low > m.high:
                    return i, f"table {table}: bad range {m.low}..{m.high} for {k.name!r}"
                canon.append((m.low, m.high))
            elif isinstance(m, Lpm):
                pm = mask(m.prefix_len) << (k.bitwidth - m.prefix_len)
                canon.append((m.value & pm, m.prefix_len))
            elif isinstance(m, Ternary):
                canon.append((m.value & m.mask, m.mask))
            else:
                canon.append(m.value)
        key = tuple(canon) + ((te.priority,) if prio else ())
        if key in seen:
            return i, f"table {table}: entry already exists"
        seen.add(key)
        if scopes.get(te.action) == "DEFAULT_ONLY":
            return i, f"action {te.action} can only be the default action of {table}"
    return None
