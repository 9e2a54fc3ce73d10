"""What lowering hands the runtime: one spec per table and per extern instance.

Neutral ground between `p4sim.lower` (which fills these) and `p4sim.runtime` (which builds
its objects from them), so that lowering never imports the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4sim.model import TableEntry, TableInfo


@dataclass(frozen=True)
class ActionSpec:
    """What a table needs to know about one of its actions."""

    name: str
    params: tuple[tuple[str, int], ...]  # (name, bitwidth)
    scope: str = "TABLE_AND_DEFAULT"


@dataclass
class TableSpec:
    py: str
    info: TableInfo
    actions: list[ActionSpec]
    const_entries: list[TableEntry]
    default: tuple[str, dict[str, int]]
    direct_counter: str | None = None
    direct_meter: str | None = None
    entry_nodes: list = field(default_factory=list)  # AST node per const entry (error locations)
    decl_name: str = ""  # the table's name as declared (error messages)
    implementation: str | None = None  # generated-code global of its action profile/selector


@dataclass
class ExternSpec:
    """One extern instance. `kind` is its v1model.p4 type name, the key of its module in
    `p4sim.externs` (which builds the runtime object from this spec)."""

    py: str  # the generated code's global naming the runtime object
    kind: str
    name: str  # control-plane name
    size: int = 0
    unit: str = ""
    width: int = 0
    table: str | None = None  # direct resources: the table they are bound to
    params: dict = field(default_factory=dict)  # anything else an extern module records
