"""Control-plane ids that p4c derives from the program's declarations."""

from __future__ import annotations


def field_ids(user_ids: list[int | None]) -> list[int]:
    """Ids of the fields of one object (match fields, action parameters, packet metadata),
    as p4c's FieldIdAllocator (control-plane/p4RuntimeSerializer.cpp) gives them: `@id`
    values first; then 1, 2, ... in order for the others, where an element with an @id
    still uses up its position's number and numbers already taken are skipped.

    Raises ValueError for an @id of 0 (or less) and for an @id used twice."""
    for uid in user_ids:
        if uid is not None and uid <= 0:
            raise ValueError(f"{uid} is not a valid @id value")
    taken = [u for u in user_ids if u is not None]
    for u in taken:
        if taken.count(u) > 1:
            raise ValueError(f"@id {u} is used multiple times")
    used = set(taken)
    out: list[int] = []
    index = 1
    for uid in user_ids:
        if uid is not None:
            out.append(uid)
            index += 1
            continue
        while index in used:
            index += 1
        out.append(index)
        used.add(index)
    return out
