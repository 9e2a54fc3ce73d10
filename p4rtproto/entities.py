"""The control-plane vocabulary every part shares: entities named as in P4Info, values as ints.

A table entry, its match values, a counter or register cell, a clone session: p4sim's switch
API takes and returns these, the targets' interface speaks them, and `p4rtproto.codec` turns
them into P4Runtime messages and back. They live here, below both p4sim and the controller,
so that neither has to import the other to agree on what an entry is.

Names are fully qualified control-plane names (after `@name`), e.g. "MyIngress.l2_fwd".
Values are unsigned Python ints, already masked to their width.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Match values, per key field, by match kind:
#   exact:    Exact(value)
#   lpm:      Lpm(value, prefix_len)
#   ternary:  Ternary(value, mask)
#   range:    Range(low, high)            (inclusive)
#   optional: Optional_(value) ; a missing key in `match` means wildcard for
#             ternary/lpm/range/optional ("don't care"), as P4Runtime omits them.


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional_:
    value: int


Match = Exact | Lpm | Ternary | Range | Optional_


@dataclass
class TableEntry:
    table: str
    match: dict[str, Match]  # key field name -> match value
    action: str
    params: dict[str, int] = field(default_factory=dict)  # action param name -> value
    priority: int = 0  # higher wins (P4Runtime convention) for ternary/range/optional
    # indirect tables (action profile/selector): the entry runs a member or a group
    # instead of `action` (which is then "")
    member: int | None = None
    group: int | None = None
    # direct resources of the entry, read back by read_table
    counter_packets: int = 0
    counter_bytes: int = 0


@dataclass(frozen=True)
class DefaultAction:
    table: str
    action: str
    params: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterCell:
    """A write of one indirect counter cell (read queries return these too)."""

    name: str
    index: int
    packets: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class RegisterCell:
    name: str
    index: int
    value: int = 0


@dataclass(frozen=True)
class CloneSession:
    """A clone (mirror) session: copies go to `ports` (replica id 0 unless given)."""

    session: int
    ports: tuple[int, ...]
    truncate: int = 0


@dataclass(frozen=True)
class MulticastGroup:
    group: int
    ports: tuple[int, ...]


@dataclass(frozen=True)
class MeterRates:
    """BMv2-style rates: [(committed units/us, burst), (peak units/us, burst)]."""

    name: str
    index: int
    rates: tuple[tuple[float, int], ...]


Entity = (
    TableEntry
    | DefaultAction
    | CounterCell
    | RegisterCell
    | CloneSession
    | MulticastGroup
    | MeterRates
)


@dataclass(frozen=True)
class OutputPacket:
    """A frame a switch emitted: on which port, and when its last bit left."""

    port: int
    data: bytes
    time_ns: int  # virtual (or wall-clock) time at which the last bit left


@dataclass(frozen=True)
class PacketIn:
    """A packet the pipeline sent to the controller, with its packet_in header fields."""

    data: bytes
    metadata: dict[str, int]
