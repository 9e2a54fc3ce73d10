"""The one small interface every data-plane target offers.

A test or a scenario receives a `Target` and never asks which one it is:
- `P4SimTarget`: the embedded p4sim switch in this process (virtual time);
- `P4RuntimeTarget`: any P4Runtime endpoint (p4sim-switch, BMv2 simple_switch_grpc,
  a hardware switch); packets go through PacketOut/PacketIn or AF_PACKET interfaces.

Entities are named as in P4Info (fully qualified names); values are ints. They are the
shared vocabulary of `p4rtproto.entities` (`TableEntry` with `Exact`/`Lpm`/`Ternary`/`Range`/
`Optional_` matches, counter and register cells, PRE entries), which p4sim's switch API and
the P4Runtime codec speak too, so a name-level description means the same thing to every target.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from p4rtproto.entities import (  # noqa: F401  (re-exported: the entity vocabulary)
    CloneSession,
    CounterCell,
    DefaultAction,
    Entity,
    Exact,
    Lpm,
    MeterRates,
    MulticastGroup,
    Optional_,
    OutputPacket,
    PacketIn,
    Range,
    RegisterCell,
    TableEntry,
    Ternary,
)

# ---------------------------------------------------------------- the program


@dataclass
class Program:
    """What `push` installs: P4Info (binary protobuf) plus the device config the target
    understands (p4sim: the P4 source bundle; BMv2: its JSON). `source` is the main .p4
    file when we have it (the in-process target compiles it directly)."""

    name: str
    p4info: bytes = b""
    device_config: bytes = b""
    source: Path | None = None
    # The device config's format: "p4-source" (p4sim's source bundle) | "bmv2-json".
    config_format: str = "p4-source"


# queries for `read`
@dataclass(frozen=True)
class TableQuery:
    table: str


@dataclass(frozen=True)
class CounterQuery:
    name: str
    index: int | None = None  # None: every cell


@dataclass(frozen=True)
class RegisterQuery:
    name: str
    index: int | None = None


Query = TableQuery | CounterQuery | RegisterQuery


class TargetError(RuntimeError):
    """A request the target refused; `code` is the gRPC status name when there is one."""

    def __init__(self, message: str, code: str = "UNKNOWN"):
        super().__init__(message)
        self.code = code


class Target(ABC):
    """push / write / read / send / receive / counters / now / advance."""

    name: str = "target"
    virtual_time: bool = False  # True: time moves only through advance()
    # The shortest frame `send` can put on a port (None: any length). A wire refuses a frame
    # shorter than an Ethernet header; STFs with such frames are refused up front (controller.stf).
    min_frame: int | None = None

    @abstractmethod
    def push(self, program: Program) -> None:
        """Install the pipeline (P4Info + device config)."""

    @abstractmethod
    def write(self, entities: Iterable[Entity], modify_existing: bool = False) -> None:
        """Insert (or modify, for counters/registers/defaults) each entity, in order. A table
        entry with the key of an installed one fails with ALREADY_EXISTS (over P4Runtime, so
        does a clone session or multicast group that exists), unless `modify_existing`: then
        it replaces the installed one (what re-applying a config needs)."""

    @abstractmethod
    def read(self, query: Query) -> list:
        """TableQuery -> [TableEntry]; CounterQuery -> [CounterCell]; RegisterQuery -> [RegisterCell]."""

    @abstractmethod
    def delete(self, entities: Iterable[Entity]) -> None: ...

    @abstractmethod
    def send(self, port: int, frame: bytes) -> None:
        """The frame arrives on switch port `port` now."""

    @abstractmethod
    def receive(self) -> list[OutputPacket]:
        """Every frame the switch emitted on a data port since the last call."""

    def packet_out(self, frame: bytes, metadata: dict[str, int]) -> None:
        """PacketOut with the program's packet_out header fields (by name)."""
        raise TargetError(f"{self.name}: PacketOut is not supported", "UNIMPLEMENTED")

    def packet_in(self) -> list[PacketIn]:
        """PacketIns received since the last call."""
        raise TargetError(f"{self.name}: PacketIn is not supported", "UNIMPLEMENTED")

    @abstractmethod
    def counter_names(self) -> list[tuple[str, int]]:
        """(name, size) of every indirect counter of the installed program."""

    @abstractmethod
    def entity_names(self) -> dict[str, list[str]]:
        """Fully qualified names in the installed program: {"tables": [...],
        "actions": [...], "registers": [...], "counters": [...]}."""

    def counters(self) -> dict[str, list[tuple[int, int]]]:
        """Every indirect counter of the program: name -> [(packets, bytes) per index]."""
        out: dict[str, list[tuple[int, int]]] = {}
        for name, size in self.counter_names():
            cells = [(0, 0)] * size
            for cell in self.read(CounterQuery(name)):
                if 0 <= cell.index < size:
                    cells[cell.index] = (cell.packets, cell.bytes)
            out[name] = cells
        return out

    @abstractmethod
    def now(self) -> int:
        """Nanoseconds (virtual time, or the wall clock for real targets)."""

    @abstractmethod
    def advance(self, dt_ns: int) -> None:
        """Let `dt_ns` pass (virtual: run the traffic manager; real: wait)."""

    # -- traffic-manager knobs: in-process only; real switches have physical port speeds
    def set_port_speed(self, port: int, bits_per_s: float) -> None:
        raise TargetError(f"{self.name}: port speeds are set on the device itself", "UNIMPLEMENTED")

    def set_queue_capacity(self, port: int, priority: int, packets: int) -> None:
        raise TargetError(
            f"{self.name}: queue buffers are set on the device itself", "UNIMPLEMENTED"
        )

    def queue_depth(self, port: int, priority: int) -> int | None:
        """Packets queued on (port, priority), when the target can see it (else None)."""
        return None

    def tm_stats(self) -> dict:
        """Traffic-manager statistics (drops, pauses) when visible, else {}."""
        return {}

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release connections and processes."""

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
