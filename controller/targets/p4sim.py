"""The embedded p4sim switch, in this process, in virtual time.

Wraps `p4sim.runtime.switch.Switch` (the SwitchAPI of p4sim/model.py); every call goes
through that API. Time moves only with `advance`, so a run is repeatable to the packet.

This is the one module of controller/ that imports p4sim (tests/controller/
test_import_boundary.py holds it to that): what else in the controller needs p4sim (compiling
a program for its P4Info, the traffic manager's wire model) comes through here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from p4sim.model import P4SimError

from .base import (
    CloneSession,
    CounterCell,
    CounterQuery,
    DefaultAction,
    Entity,
    MeterRates,
    MulticastGroup,
    OutputPacket,
    PacketIn,
    Program,
    Query,
    RegisterCell,
    RegisterQuery,
    TableEntry,
    TableQuery,
    Target,
    TargetError,
)
from .config import ConfigError as TargetConfigError
from .program import DEFAULT_PROGRAM


def compile_program(path: str | os.PathLike[str]):
    """p4sim's compiled form of a P4 program (it holds no state: a switch instantiates it)."""
    from p4sim.runtime.switch import load_program

    return load_program(str(path))


def program_from_p4(path: str | os.PathLike[str]) -> Program:
    """P4 source as a Program: p4sim compiles it to derive the P4Info (the same P4Info the
    p4sim server derives); the device config is p4sim's source bundle (kind p4sim's
    `compile_p4`, given an existing file)."""
    src = Path(path)
    compiled = compile_program(src)
    p4info, device_config = p4info_and_device_config(compiled, src)
    prog = Program(src.stem, p4info, device_config, src, "p4-source")
    prog.compiled = compiled  # type: ignore[attr-defined]  # reused by the in-process target
    return prog


def p4info_and_device_config(compiled, source: str | os.PathLike[str]) -> tuple[bytes, bytes]:
    """The P4Info (binary) p4sim derives for a compiled program, and the device config a
    P4Runtime p4sim-switch accepts for its source (the source bundle)."""
    from p4sim.p4info import p4info_from_model  # noqa: I001  (p4sim parts load lazily)
    from p4sim.server.pipeline import make_device_config

    return p4info_from_model(compiled.model).SerializeToString(), make_device_config(source)


def exit_with_me(env: Mapping[str, str]) -> str:
    """P4SIM_EXIT_WITH with this process's pid added: p4sim-switch processes given it stop
    when this process ends (p4sim.server_cli.exit_with_me)."""
    from p4sim.server_cli import exit_with_me as add

    return add(env)


def run_stf_in_process(program, stf_text: str, path: str, *, strict: bool = False):
    """p4sim's own STF runner (virtual time: the clock stands still between packets) on a
    fresh in-process switch of `program` (a compiled program or a P4 path); a
    p4rtproto.stf.StfResult. The CPU port is an ordinary port here, as in p4c's runner."""
    from p4sim.runtime.switch import Switch
    from p4sim.stf import StfRunner

    compiled = program if not isinstance(program, str | os.PathLike) else compile_program(program)
    return StfRunner(Switch(compiled, cpu_port=None), path, strict=strict).run_text(stf_text)


def wire_bytes(frame_len: int) -> int:
    """Bytes of line time a frame (no FCS) takes: the traffic manager's wire model."""
    from p4sim.runtime.tm import wire_bytes as tm_wire_bytes

    return tm_wire_bytes(frame_len)


def use_profile(name: str | None) -> None:
    """p4sim's profile for this process and the switches it starts (`--profile`, else the
    environment's P4SIM_PROFILE, else fast); a bad one is a TargetConfigError (one line, exit 2)."""
    from p4sim import profile

    try:
        if name:
            profile.choose(name)
        profile.selected()
    except profile.SettingError as exc:
        raise TargetConfigError(str(exc)) from None


def profile_line() -> str:
    """Which p4sim runs here, e.g. `p4sim profile fast (compiled backend, compiled write path)`."""
    from p4sim import profile

    return "p4sim " + profile.describe(*profile.pieces())


def _make_switch(compiled, cpu_port: int | None, seed: int):
    from p4sim.profile import SettingError
    from p4sim.runtime.switch import Switch

    try:
        return Switch(compiled, cpu_port=cpu_port, seed=seed)
    except SettingError as exc:  # P4SIM_PROFILE: a bad value, one line (rocelab exits 2)
        raise TargetConfigError(str(exc)) from None


class P4SimTarget(Target):
    name = "p4sim"
    virtual_time = True

    def __init__(
        self,
        program: str | os.PathLike[str] | Program | None = None,
        cpu_port: int | None = 255,
        seed: int = 0,
    ):
        self.cpu_port = cpu_port
        self.seed = seed  # the switch's RNG (random() extern: ECN marking)
        self.switch = None
        self._pins: list[PacketIn] = []
        self._cpu_out: list[OutputPacket] = []
        if program is not None:
            if not isinstance(program, Program):
                src = Path(program)
                program = Program(src.stem, source=src)
            self.push(program)

    @classmethod
    def default(cls) -> P4SimTarget:
        return cls(DEFAULT_PROGRAM)

    # -- pipeline
    def push(self, program: Program) -> None:
        if program.config_format != "p4-source" and program.source is None:
            raise TargetError(
                "p4sim runs P4 source; this program is a BMv2 JSON", "INVALID_ARGUMENT"
            )
        compiled = getattr(program, "compiled", None)
        if compiled is None:
            if program.source is None:
                raise TargetError("program has no P4 source", "INVALID_ARGUMENT")
            if not Path(program.source).is_file():
                raise TargetError(f"P4 program {program.source} not found", "NOT_FOUND")
            compiled = compile_program(program.source)
        self.program = program
        self.switch = _make_switch(compiled, self.cpu_port, self.seed)
        self.switch.on_packet_in(self._on_packet_in)

    def _sw(self):
        if self.switch is None:
            raise TargetError("no pipeline pushed", "FAILED_PRECONDITION")
        return self.switch

    def _on_packet_in(self, data: bytes, metadata: dict[str, int]) -> None:
        self._pins.append(PacketIn(bytes(data), dict(metadata)))

    # -- entities
    def _call(self, fn, *args):
        try:
            return fn(*args)
        except P4SimError as exc:
            raise TargetError(str(exc), exc.code) from None

    def write(self, entities: Iterable[Entity], modify_existing: bool = False) -> None:
        sw = self._sw()
        for e in entities:
            if isinstance(e, TableEntry):
                try:
                    self._call(sw.table_add, e)
                except TargetError as exc:
                    if not (modify_existing and exc.code == "ALREADY_EXISTS"):
                        raise
                    self._call(sw.table_modify, e)
            elif isinstance(e, DefaultAction):
                self._call(sw.table_set_default, e.table, e.action, dict(e.params))
            elif isinstance(e, CounterCell):
                self._call(sw.counter_write, e.name, e.index, e.packets, e.bytes)
            elif isinstance(e, RegisterCell):
                self._call(sw.register_write, e.name, e.index, e.value)
            elif isinstance(e, CloneSession):
                self._call(sw.clone_session_set, e.session, [(p, 0) for p in e.ports], e.truncate)
            elif isinstance(e, MulticastGroup):
                self._call(sw.mc_group_set, e.group, [(p, i) for i, p in enumerate(e.ports)])
            elif isinstance(e, MeterRates):
                self._call(sw.meter_set_rates, e.name, e.index, list(e.rates))
            else:
                raise TargetError(f"unknown entity {e!r}", "INVALID_ARGUMENT")

    def delete(self, entities: Iterable[Entity]) -> None:
        sw = self._sw()
        for e in entities:
            if isinstance(e, TableEntry):
                self._call(sw.table_delete, e)
            elif isinstance(e, CloneSession):
                self._call(sw.clone_session_delete, e.session)
            elif isinstance(e, MulticastGroup):
                self._call(sw.mc_group_delete, e.group)
            else:
                raise TargetError(f"cannot delete {e!r}", "INVALID_ARGUMENT")

    def read(self, query: Query) -> list:
        sw = self._sw()
        if isinstance(query, TableQuery):
            return list(self._call(sw.table_entries, query.table))
        if isinstance(query, CounterQuery):
            size = self._counter_size(query.name)
            idx = range(size) if query.index is None else [query.index]
            out = []
            for i in idx:
                packets, nbytes = self._call(sw.counter_read, query.name, i)
                out.append(CounterCell(query.name, i, packets, nbytes))
            return out
        if isinstance(query, RegisterQuery):
            size = self._register_size(query.name)
            idx = range(size) if query.index is None else [query.index]
            return [
                RegisterCell(query.name, i, self._call(sw.register_read, query.name, i))
                for i in idx
            ]
        raise TargetError(f"unknown query {query!r}", "INVALID_ARGUMENT")

    def _counter_size(self, name: str) -> int:
        info = self._sw().model.counters.get(name)
        if info is None:
            raise TargetError(f"no counter named {name!r}", "NOT_FOUND")
        return info.size

    def _register_size(self, name: str) -> int:
        info = self._sw().model.registers.get(name)
        if info is None:
            raise TargetError(f"no register named {name!r}", "NOT_FOUND")
        return info.size

    def counter_names(self) -> list[tuple[str, int]]:
        return [(n, c.size) for n, c in self._sw().model.counters.items()]

    def entity_names(self) -> dict[str, list[str]]:
        m = self._sw().model
        return {
            "tables": list(m.tables),
            "actions": list(m.actions),
            "registers": list(m.registers),
            "counters": list(m.counters),
        }

    # -- packets
    def send(self, port: int, frame: bytes) -> None:
        self._call(self._sw().send, port, bytes(frame))

    def receive(self) -> list[OutputPacket]:
        return self._sw().receive()

    def packet_out(self, frame: bytes, metadata: dict[str, int]) -> None:
        sw = self._sw()
        fn = getattr(sw, "packet_out", None)
        if fn is None:
            raise TargetError("this p4sim switch has no packet_out", "UNIMPLEMENTED")
        self._call(fn, bytes(frame), dict(metadata))

    def packet_in(self) -> list[PacketIn]:
        out, self._pins = self._pins, []
        return out

    # -- time and traffic manager
    def now(self) -> int:
        return self._sw().now()

    def advance(self, dt_ns: int) -> None:
        if dt_ns > 0:
            self._sw().advance(int(dt_ns))

    def _tm(self):
        tm = getattr(self._sw(), "tm", None)
        if tm is None:
            raise TargetError("this p4sim switch exposes no traffic manager", "UNIMPLEMENTED")
        return tm

    def set_port_speed(self, port: int, bits_per_s: float) -> None:
        self._tm().set_port_rate(port, bits_per_s=bits_per_s)

    def set_queue_capacity(self, port: int, priority: int, packets: int) -> None:
        self._tm().set_queue_capacity(port, priority, packets)

    def queue_depth(self, port: int, priority: int) -> int | None:
        return self._tm().depth(port, priority)

    def tm_stats(self) -> dict:
        return self._tm().stats()
