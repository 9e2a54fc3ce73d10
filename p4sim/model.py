"""The contract between p4sim's parts.

`ProgramModel` is the control-plane view of a loaded program (what P4Info describes):
the compiler (`p4sim.lower`) fills it from the checked program, `p4sim.p4info` turns it into
P4Info, and the P4Runtime server and STF runner use it to resolve names.

`SwitchAPI` is what the pipeline driver (`p4sim.runtime.switch.Switch`) offers; the STF
runner, the P4Runtime server, the ports and the controller's in-process target only call
these methods, never reach inside.

`TrafficManagerAPI` is what the switch needs from its traffic manager
(`p4sim.runtime.tm`): queues, virtual/wall clock, PFC pause state.

Names are the fully qualified control-plane names p4c would put in P4Info
(e.g. "MyIngress.ecn_profile", "MyIngress.set_tc"), after `@name` annotations.
All values are Python ints (unsigned, already masked to their width).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

# The entry vocabulary (TableEntry and its match kinds, OutputPacket) is shared with the
# controller and the P4Runtime codec: it lives in p4rtproto.entities, below both.
from p4rtproto.entities import (  # noqa: F401  (re-exported: p4sim's contract types)
    Exact,
    Lpm,
    Match,
    Optional_,
    OutputPacket,
    Range,
    TableEntry,
    Ternary,
)

# ---------------------------------------------------------------- program model


@dataclass(frozen=True)
class Annotated:
    name: str  # fully qualified control-plane name
    id: int | None = None  # from @id, else None (p4info assigns p4c's hash-based id)
    annotations: tuple[str, ...] = ()  # raw annotation text, e.g. ('@hidden',)


@dataclass(frozen=True)
class Param:
    name: str
    bitwidth: int
    id: int  # 1-based position, as p4c numbers action params


@dataclass(frozen=True)
class ActionInfo(Annotated):
    params: tuple[Param, ...] = ()


@dataclass(frozen=True)
class KeyField:
    name: str  # as p4c names it: the key expression text, or its @name
    match_kind: str  # exact | lpm | ternary | range | optional
    bitwidth: int
    id: int  # 1-based position


@dataclass(frozen=True)
class ActionRef:
    name: str  # fully qualified action name
    scope: str = "TABLE_AND_DEFAULT"  # TABLE_AND_DEFAULT | TABLE_ONLY | DEFAULT_ONLY


@dataclass(frozen=True)
class TableInfo(Annotated):
    keys: tuple[KeyField, ...] = ()
    actions: tuple[ActionRef, ...] = ()
    default_action: str | None = None
    default_params: tuple[int, ...] = ()
    const_default_action: bool = False
    const_entries: bool = False  # `const entries` => read-only table
    initial_entries: bool = False  # `entries` or `const entries` with at least one entry
    size: int = 1024
    direct_counter: str | None = None  # name of the direct_counter bound to it
    direct_meter: str | None = None
    implementation: str | None = None  # the action profile/selector it uses (indirect table)


@dataclass(frozen=True)
class ActionProfileInfo(Annotated):
    """v1model action_profile / action_selector (P4Info ActionProfile)."""

    size: int = 0  # members it holds
    with_selector: bool = False
    algo: str = ""  # the selector's HashAlgorithm member
    max_group_size: int = 0  # from @max_group_size (0: no limit given)
    tables: tuple[str, ...] = ()  # tables using it, by name


@dataclass(frozen=True)
class CounterInfo(Annotated):
    unit: str = "packets"  # packets | bytes | packets_and_bytes
    size: int = 0  # 0 for direct counters
    table: str | None = None  # set for direct counters


@dataclass(frozen=True)
class MeterInfo(Annotated):
    unit: str = "bytes"  # packets | bytes
    size: int = 0
    table: str | None = None


@dataclass(frozen=True)
class RegisterInfo(Annotated):
    bitwidth: int = 32
    size: int = 0


@dataclass(frozen=True)
class ControllerHeaderField:
    name: str
    bitwidth: int
    id: int  # 1-based


@dataclass(frozen=True)
class ControllerHeaderInfo(Annotated):
    """A header annotated @controller_header("packet_in"|"packet_out")."""

    kind: str = ""  # "packet_in" | "packet_out"
    fields: tuple[ControllerHeaderField, ...] = ()


@dataclass(frozen=True)
class DigestInfo(Annotated):
    fields: tuple[tuple[str, int], ...] = ()  # (name, bitwidth) of the digested struct


@dataclass(frozen=True)
class ValueSetInfo(Annotated):
    size: int = 0
    # what P4Info's ValueSet.match lists: one unnamed EXACT field for a bit<W> element,
    # else one per struct field (kind from its @match annotation, exact by default)
    matches: tuple[KeyField, ...] = ()


@dataclass
class ProgramModel:
    """Everything a control plane can see of one program."""

    source: str  # path of the main .p4 file
    arch: str = "v1model"
    tables: dict[str, TableInfo] = field(default_factory=dict)
    actions: dict[str, ActionInfo] = field(default_factory=dict)
    counters: dict[str, CounterInfo] = field(default_factory=dict)
    direct_counters: dict[str, CounterInfo] = field(default_factory=dict)
    meters: dict[str, MeterInfo] = field(default_factory=dict)
    direct_meters: dict[str, MeterInfo] = field(default_factory=dict)
    registers: dict[str, RegisterInfo] = field(default_factory=dict)
    controller_headers: dict[str, ControllerHeaderInfo] = field(default_factory=dict)
    digests: dict[str, DigestInfo] = field(default_factory=dict)
    value_sets: dict[str, ValueSetInfo] = field(default_factory=dict)
    # objects of externs that have no field above, by the module's `model_field`
    # (p4sim.externs; P4Info lists them under `externs`)
    externs: dict[str, dict[str, Annotated]] = field(default_factory=dict)
    # an extern function (mark_to_drop, hash, clone...) is called in a control: p4c's
    # P4Info then has a (possibly empty) type_info, as an extern instance does
    calls_extern_function: bool = False


# ---------------------------------------------------------------- errors


class P4SimError(Exception):
    """Base class: a control-plane request p4sim refuses. `code` maps to gRPC status."""

    code = "INVALID_ARGUMENT"


class NotFound(P4SimError):
    code = "NOT_FOUND"


class AlreadyExists(P4SimError):
    code = "ALREADY_EXISTS"


class Unimplemented(P4SimError):
    code = "UNIMPLEMENTED"


class FailedPrecondition(P4SimError):
    """The request is valid but the state refuses it (e.g. deleting a member still in use)."""

    code = "FAILED_PRECONDITION"


class ResourceExhausted(P4SimError):
    """A table is full (P4Runtime spec 9.1: RESOURCE_EXHAUSTED)."""

    code = "RESOURCE_EXHAUSTED"


# ---------------------------------------------------------------- switch API


class SwitchAPI(Protocol):
    model: ProgramModel
    cpu_port: int | None

    # -- tables (raise NotFound / AlreadyExists / P4SimError on bad requests)
    def table_add(self, entry: TableEntry) -> None: ...
    def table_modify(self, entry: TableEntry) -> None: ...
    def table_delete(self, entry: TableEntry) -> None: ...  # matched on (match, priority)
    def table_set_default(self, table: str, action: str, params: dict[str, int]) -> None: ...
    def table_entries(self, table: str) -> list[TableEntry]: ...
    def table_default(self, table: str) -> tuple[str, dict[str, int]]: ...
    def table_clear(self, table: str) -> None: ...

    # -- stateful externs; index None = all cells
    def counter_read(self, name: str, index: int) -> tuple[int, int]: ...  # (packets, bytes)
    def counter_write(self, name: str, index: int, packets: int, bytes_: int) -> None: ...
    def direct_counter_read(self, table: str, entry: TableEntry) -> tuple[int, int]: ...
    def direct_counter_write(
        self, table: str, entry: TableEntry, packets: int, bytes_: int
    ) -> None: ...
    def register_read(self, name: str, index: int) -> int: ...
    def register_write(self, name: str, index: int, value: int) -> None: ...
    def register_reset(self, name: str) -> None: ...
    def meter_set_rates(self, name: str, index: int, rates: list[tuple[float, int]]) -> None: ...

    # rates as BMv2: [(committed rate per unit per microsecond, burst), (peak, burst)]

    # -- packet replication engine
    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None: ...  # (port, rid)
    def mc_group_delete(self, group: int) -> None: ...
    def clone_session_set(
        self, session: int, replicas: list[tuple[int, int]], truncate: int = 0
    ) -> None: ...
    def clone_session_delete(self, session: int) -> None: ...

    # -- packets and time
    def send(self, port: int, frame: bytes) -> None: ...  # arrives now (virtual or wall time)
    def receive(self) -> list[OutputPacket]: ...  # everything emitted since the last call
    def now(self) -> int: ...  # ns
    def advance(self, dt_ns: int) -> None: ...  # virtual time only: run the TM up to now+dt
    def run_until_idle(self) -> None: ...  # virtual time: until every queue is empty

    # -- hooks for the server: PacketIn (to CPU port) and digests
    def on_packet_in(self, callback) -> None: ...  # callback(data: bytes, metadata: dict[str,int])
    def on_digest(self, callback) -> None: ...  # callback(digest_name: str, values: dict[str,int])


# ---------------------------------------------------------------- traffic manager API


@dataclass
class QueuedPacket:
    """What the switch hands the traffic manager after ingress (opaque `state`)."""

    egress_port: int
    priority: int  # 0..7, from standard_metadata.priority
    length: int  # bytes on the wire (for rate and byte accounting)
    state: object  # the switch's per-packet state (headers, metadata, payload)
    enq_timestamp: int = 0  # ns, set by the TM
    enq_qdepth: int = 0  # packets in that queue before this one, set by the TM
    deq_qdepth: int = 0  # packets in that queue after this one left, set by the TM
    deq_timedelta: int = 0  # ns spent queued, set by the TM


class TrafficManagerAPI(Protocol):
    def enqueue(self, pkt: QueuedPacket, now_ns: int) -> bool: ...  # False: tail drop
    def next_departure(self) -> int | None: ...  # earliest ns a packet can leave, or None
    def dequeue(self, now_ns: int) -> list[QueuedPacket]: ...  # every packet leaving by now
    def pause(self, port: int, class_enable: int, quanta: list[int], now_ns: int) -> None: ...
    # class_enable bit i pauses priority i for quanta[i]*512 bit times at the port speed;
    # 802.3x PAUSE: class_enable=0xff with all eight quanta equal.
    def set_port_rate(
        self, port: int, bits_per_s: float | None = None, pps: float | None = None
    ) -> None: ...
    def set_queue_capacity(self, port: int, priority: int, packets: int) -> None: ...
    def depth(self, port: int, priority: int) -> int: ...
    def stats(self) -> dict: ...  # drops, pauses per port and priority
