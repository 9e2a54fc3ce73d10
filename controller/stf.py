"""p4c's STF tests on any target: `rocelab stf PROGRAM.stf --target bmv2|p4sim-grpc|hw|p4sim`.

The syntax and the verdict are p4rtproto.stf's (the same module p4sim's own runner reads);
this is the executor for a `Target` reached over P4Runtime, with frames on its ports:

- `add` / `setdefault` -> TableEntry / DefaultAction writes (names resolve as p4c's runner
  does: the full name, or a unique suffix; a ternary table without STF priorities gets
  falling priorities, so earlier entries win, as in p4sim's runner);
- the simple_switch_CLI pass-throughs (bmv2stf.py `execute_stf_command`) as P4Runtime
  entities: `mirroring_add[_mc]` -> CloneSessionEntry, `mc_mgrp_create` / `mc_node_create` /
  `mc_node_associate` -> MulticastGroupEntry, `counter_read|write` -> CounterEntry,
  `register_read|write|reset` -> RegisterEntry, `meter_set_rates` / `meter_array_set_rates`
  -> MeterEntry; what P4Runtime has no entity for goes to `cli` (BMv2's simple_switch_CLI)
  when one is given, else it is ignored with a warning as p4c's runner ignores what it
  does not know (an error with `strict`);
- `packet PORT HEX` sends the frame on PORT; on the CPU port it is a PacketOut whose
  metadata are the packet_out header at the front of HEX; `expect CPU_PORT HEX` matches a
  PacketIn with its packet_in header put back in front (the bytes p4sim's runner sees);
- `check_counter` / `check_register` (p4c's runner parses them, p4sim's checks them) read
  the cell over P4Runtime.

Time is the wall clock, so packets are processed asynchronously: `wait`, every check and
the end of the file first wait until every frame expected so far has come (bounded by
`timeout_s`), then for `settle_s` of silence (extra frames fail the test, as in p4c's
runner, which gives the model 2 s before it reads its pcap files); a check that does not
hold is read again until `timeout_s`. After each `packet` the runner waits `gap_s` so
that packets enter the pipeline one after another, as in p4sim's runner.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from p4rtproto.schema import Schema, TableMeta
from p4rtproto.stf import (
    Cmd,
    Expected,
    StfError,
    StfResult,
    action_call,
    add_parts,
    counter_check,
    key_value,
    packet_bytes,
    parse_int,
    parse_rate,
    parse_stf,
    register_check,
    requirements,
)

from .targets import registry
from .targets.base import (
    CloneSession,
    CounterCell,
    CounterQuery,
    DefaultAction,
    Lpm,
    MeterRates,
    MulticastGroup,
    Program,
    RegisterCell,
    RegisterQuery,
    TableEntry,
    Target,
    TargetError,
)
from .targets.bmv2cli import Bmv2Cli
from .targets.config import ConfigError, TargetConfig

# What a wall-clock target cannot give, by `# requires:` name (p4rtproto.stf.requirements).
WALL_CLOCK_LACKS = {
    "virtual_time": "needs virtual time (exact queue depths, a clock that "
    "stands still between packets): in-process p4sim only"
}


class Unsupported(Exception):
    """The STF needs what this target lacks (its `# requires:` header says what)."""


def resolve(name: str, names: Iterable[str], what: str) -> str:
    """p4c's runner: the full name, else the one name ending in `.NAME` (bmv2stf.py
    `tableByName`, `TableKeyInstance.set`)."""
    names = list(names)
    if name in names:
        return name
    hits = [n for n in names if n.endswith("." + name)]
    if len(hits) == 1:
        return hits[0]
    raise ValueError(
        f"no {what} named {name!r}"
        if not hits
        else f"{what} name {name!r} is ambiguous: {', '.join(sorted(hits))}"
    )


@dataclass
class Observed:
    """What a run left behind, for a differential: frames per port in order, PacketIns (as
    CPU-port frames), and every counter and register cell read at the end."""

    frames: dict[int, list[bytes]] = field(default_factory=dict)
    counters: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    registers: dict[str, list[int]] = field(default_factory=dict)


class TargetStfRunner:
    def __init__(
        self,
        target: Target,
        schema: Schema,
        path: str = "<stf>",
        *,
        strict: bool = False,
        cpu_port: int | None = 255,
        cli: Bmv2Cli | None = None,
        settle_s: float = 0.1,
        timeout_s: float = 3.0,
        gap_s: float = 0.005,
    ):
        self.t, self.schema, self.path, self.strict = target, schema, path, strict
        self.cpu_port, self.cli = cpu_port, cli
        self.settle_s, self.timeout_s, self.gap_s = settle_s, timeout_s, gap_s
        self.expected = Expected(path)
        self.received: dict[int, list[bytes]] = {}
        self.result = StfResult(True)
        self._auto_prio = 1 << 20
        self._groups: dict[int, list[int]] = {}  # multicast group -> node handles
        self._nodes: list[tuple[int, ...]] = []  # node handle -> its ports (BMv2 counts from 0)
        self.pre: dict[tuple[type, int], CloneSession | MulticastGroup] = {}  # what we wrote
        self.observation: Observed | None = None  # set by StfSession.run

    # ------------------------------------------------------------ running

    def run_text(self, text: str) -> StfResult:
        lacking = {n: WALL_CLOCK_LACKS[n] for n in requirements(text) if n in WALL_CLOCK_LACKS}
        if lacking and not self.t.virtual_time:
            raise Unsupported(
                f"{self.path}: " + "; ".join(f"requires {n}: {why}" for n, why in lacking.items())
            )
        cmds = parse_stf(text)
        self._check_frames_fit(cmds)
        for cmd in cmds:
            try:
                self.run(cmd)
            except IndexError:
                raise StfError(f"{self.path}:{cmd.line}: {cmd.op}: missing argument(s)") from None
            except (ValueError, KeyError) as e:
                raise StfError(f"{self.path}:{cmd.line}: {cmd.op}: {e}") from None
            except TargetError as e:
                raise StfError(
                    f"{self.path}:{cmd.line}: {cmd.op}: the target refused it: "
                    f"{str(e).splitlines()[0]}"
                ) from None
        self.sync()
        self.expected.compare(self.received, self.strict, self.result)
        return self.result

    def _check_frames_fit(self, cmds: list[Cmd]) -> None:
        """Refuse, before anything is written, an STF with a frame shorter than the target
        can send (a wire: p4c's sample bvec-hdr-bmv2 sends 6 bytes). p4c's runner never puts
        these on a wire: it writes one pcap file per port for simple_switch `--use-files`
        (backends/bmv2/bmv2stf.py `RunBMV2.run`, driven by run-bmv2-test.py), and BMv2's
        PcapFilesReader interleaves the files, so nothing (no write, no wait) goes between
        frames there. Padding would change what the program parses (the extra bytes are
        payload it emits, or a header it now extracts), so short frames are refused, not
        padded."""
        least = self.t.min_frame
        if not least:
            return
        for c in cmds:
            if c.op != "packet" or not c.args or not c.args[0].isdigit():
                continue
            try:
                n = len(packet_bytes(c.args[1:]))
            except ValueError:
                continue  # malformed: do_packet says so in its turn
            port = int(c.args[0])
            if port != self.cpu_port and n < least:
                raise Unsupported(
                    f"{self.path}: line {c.line}: a frame of {n} bytes on port {port}: "
                    f"a wire carries >= {least} bytes (an Ethernet header; p4c's "
                    "runner uses pcap files, and padding would change what the "
                    "program parses): in-process p4sim only"
                )

    def run(self, c: Cmd) -> None:
        op, a = c.op, c.args
        handler = getattr(self, "do_" + op, None)
        if handler is not None:
            handler(c)
        elif self.cli is not None:
            self.result.messages.append(f"{self.path}:{c.line}: {self.cli.run(c.text).strip()}")
        elif self.strict:
            raise ValueError(f"unknown STF command {op!r}")
        else:
            self.result.warnings.append(
                f"{self.path}:{c.line}: warning: STF command {op!r} "
                "ignored (no P4Runtime equivalent, no CLI)"
            )
        del a

    def fail(self, msg: str) -> None:
        self.result.ok = False
        self.result.messages.append(msg)

    # ------------------------------------------------------------ tables

    def _table(self, name: str) -> TableMeta:
        return self.schema.table(
            resolve(name, [t.name for t in self.schema.tables.values()], "table")
        )

    def _action(self, t: TableMeta, call: str) -> tuple[str, dict[str, int]]:
        aname, args = action_call(call)
        names = [self.schema.action(i).name for i in t.action_ids]
        act = self.schema.action(resolve(aname, names, f"action of table {t.name}"))
        pnames = [p.name for p in act.param_order]
        params: dict[str, int] = {}
        for i, (k, v) in enumerate(args):
            if k is None and i >= len(pnames):
                raise ValueError(f"action {act.name} takes {len(pnames)} parameter(s)")
            params[pnames[i] if k is None else resolve(k, pnames, "action parameter")] = v
        return act.name, params

    def do_add(self, c: Cmd) -> None:
        table, prio, keys, action = add_parts(c.args)
        t = self._table(table)
        fields = {f.name: f for f in t.field_order}
        match = {}
        for k, v in keys:
            f = fields[resolve(k, fields, "key field")]
            m = key_value(v, f.match_kind, f.bitwidth)
            if isinstance(m, Lpm):  # P4Runtime wants the bits past the prefix zero
                m = Lpm(m.value & ~((1 << (f.bitwidth - m.prefix_len)) - 1), m.prefix_len)
            if f.match_kind == "ternary" and m.mask == 0:
                continue  # P4Runtime omits a wildcard ternary field
            if f.match_kind == "lpm" and m.prefix_len == 0:
                continue
            match[f.name] = m
        aname, params = self._action(t, action)
        if prio is None and t.requires_priority:
            self._auto_prio -= 1  # earlier entries win when the test gives no priorities
            prio = self._auto_prio
        self.t.write([TableEntry(t.name, match, aname, params, priority=prio or 0)])

    def do_setdefault(self, c: Cmd) -> None:
        t = self._table(c.args[0])
        aname, params = self._action(t, c.args[1])
        self.t.write([DefaultAction(t.name, aname, params)])

    # ------------------------------------------------------------ packets

    def do_packet(self, c: Cmd) -> None:
        port = int(c.args[0])
        frame = packet_bytes(c.args[1:])
        self.expected.named_ports.add(port)
        if port == self.cpu_port:
            meta, payload = self._split_cpu(frame)
            self.t.packet_out(payload, meta)
        else:
            try:
                self.t.send(port, frame)
            except OSError as e:  # short frames were refused up front: a device's own limit
                raise StfError(
                    f"packet on port {port}: a {len(frame)}-byte frame cannot be sent "
                    f"on this target's wire: {e.strerror or e}"
                ) from None
        self.result.packets_sent += 1
        self.pump(self.gap_s)

    def do_expect(self, c: Cmd) -> None:
        self.expected.add(c, self.strict)

    def do_wait(self, c: Cmd) -> None:
        self.sync()

    def do_no_packet(self, c: Cmd) -> None:
        self.sync()

    def _controller_header(self, kind: str) -> list[tuple[str, int]]:
        hdr = self.schema.controller_header(kind)
        fields = [(f.name, f.bitwidth) for f in hdr.fields] if hdr is not None else []
        if sum(w for _, w in fields) % 8:
            raise ValueError(f"the {kind} header is not whole bytes")
        return fields

    def _split_cpu(self, frame: bytes) -> tuple[dict[str, int], bytes]:
        fields = self._controller_header("packet_out")
        nbytes = sum(w for _, w in fields) // 8
        value = int.from_bytes(frame[:nbytes], "big")
        meta, shift = {}, nbytes * 8
        for name, w in fields:
            shift -= w
            meta[name] = (value >> shift) & ((1 << w) - 1)
        return meta, frame[nbytes:]

    def _join_cpu(self, meta: dict[str, int], payload: bytes) -> bytes:
        fields = self._controller_header("packet_in")
        value = 0
        for name, w in fields:
            value = (value << w) | (meta.get(name, 0) & ((1 << w) - 1))
        return value.to_bytes(sum(w for _, w in fields) // 8, "big") + payload

    def pump(self, duration_s: float) -> int:
        """Collect frames for `duration_s`; the number that came."""
        n = 0
        end = time.monotonic() + duration_s
        while True:
            for p in self.t.receive():
                if p.port != self.cpu_port:  # PacketIns are read below, with their header
                    self.received.setdefault(p.port, []).append(p.data)
                    n += 1
            if self.cpu_port is not None:
                try:
                    pins = self.t.packet_in()
                except TargetError:
                    pins = []
                for pin in pins:
                    self.received.setdefault(self.cpu_port, []).append(
                        self._join_cpu(pin.metadata, pin.data)
                    )
                    n += 1
            left = end - time.monotonic()
            if left <= 0:
                return n
            time.sleep(min(left, 0.005))

    def _arrived(self) -> bool:
        return all(
            len(self.received.get(p, [])) >= len(v)
            for p, v in self.expected.frames.items()
            if p not in self.expected.any_ports
        )

    def sync(self) -> None:
        """Until every frame expected so far has come (or `timeout_s`), then `settle_s`
        without a new frame."""
        deadline = time.monotonic() + self.timeout_s
        while not self._arrived() and time.monotonic() < deadline:
            self.pump(0.01)
        while self.pump(self.settle_s):
            pass

    # ------------------------------------------------------------ externs

    def _name(self, kind: str, name: str) -> str:
        group = {
            "counter": self.schema.counters,
            "register": self.schema.registers,
            "meter": self.schema.meters,
        }[kind]
        return resolve(name, [m.name for m in group.values()], kind)

    def _poll(self, ok: Callable[[], tuple[bool, str]]) -> None:
        """Read until the check holds or `timeout_s` passes (the packets it counts may
        still be in the pipeline); fail with the last reading."""
        self.sync()
        deadline = time.monotonic() + self.timeout_s
        while True:
            good, msg = ok()
            if good:
                return
            if time.monotonic() >= deadline:
                self.fail(msg)
                return
            time.sleep(0.02)

    def _counter(self, name: str, index: int) -> tuple[int, int]:
        cells = self.t.read(CounterQuery(name, index))
        return (cells[0].packets, cells[0].bytes) if cells else (0, 0)

    def _unimplemented(self, e: TargetError) -> bool:
        """P4Runtime cannot do it here (BMv2's registers) and the Thrift CLI can."""
        return e.code == "UNIMPLEMENTED" and self.cli is not None

    def _register(self, name: str, index: int | None) -> list[int]:
        """One cell ([value]) or every cell."""
        try:
            cells = self.t.read(RegisterQuery(name, index))
        except TargetError as e:
            if not self._unimplemented(e):
                raise
            return self.cli.register_read(name, index)
        if index is not None:
            return [cells[0].value if cells else 0]
        out = [0] * self.schema.register(name).size
        for cell in cells:
            if 0 <= cell.index < len(out):
                out[cell.index] = cell.value
        return out

    def _register_write(self, name: str, cells: dict[int, int]) -> None:
        try:
            self.t.write([RegisterCell(name, i, v) for i, v in cells.items()])
        except TargetError as e:
            if not self._unimplemented(e):
                raise
            for i, v in cells.items():
                self.cli.run(f"register_write {name} {i} {v}")

    def do_check_counter(self, c: Cmd) -> None:
        chk = counter_check(c.args)
        name = self._name("counter", chk.name)

        def ok() -> tuple[bool, str]:
            p, b = self._counter(name, chk.index)
            return chk.holds(p, b), (
                f"{self.path}:{c.line}: counter {chk.name}({chk.index}) "
                f"{chk.what} is {p if chk.what == 'packets' else b}, "
                f"expected {chk.cmp} {chk.value}"
            )

        self._poll(ok)

    def do_check_register(self, c: Cmd) -> None:
        rname, index, want = register_check(c.args)
        name = self._name("register", rname)

        def ok() -> tuple[bool, str]:
            v = self._register(name, index)[0]
            return (
                v == want,
                f"{self.path}:{c.line}: register {rname}[{index}] is {v:#x}, expected {want:#x}",
            )

        self._poll(ok)

    def do_counter_read(self, c: Cmd) -> None:
        self.sync()
        name = self._name("counter", c.args[0])
        p, b = self._counter(name, int(c.args[1]))
        self.result.messages.append(f"counter {c.args[0]}[{c.args[1]}] = {p} packets, {b} bytes")

    def do_counter_write(self, c: Cmd) -> None:
        a = c.args
        self.t.write(
            [
                CounterCell(
                    self._name("counter", a[0]),
                    int(a[1]),
                    parse_int(a[2]),
                    parse_int(a[3]) if len(a) > 3 else 0,
                )
            ]
        )

    def do_register_read(self, c: Cmd) -> None:
        self.sync()
        v = self._register(self._name("register", c.args[0]), int(c.args[1]))[0]
        self.result.messages.append(f"register {c.args[0]}[{c.args[1]}] = {v}")

    def do_register_write(self, c: Cmd) -> None:
        a = c.args
        self._register_write(self._name("register", a[0]), {int(a[1]): parse_int(a[2])})

    def do_register_reset(self, c: Cmd) -> None:
        name = self._name("register", c.args[0])
        cells = {i: 0 for i, v in enumerate(self._register(name, None)) if v}
        if cells:
            self._register_write(name, cells)

    def do_meter_set_rates(self, c: Cmd) -> None:
        a = c.args
        self.t.write(
            [MeterRates(self._name("meter", a[0]), int(a[1]), tuple(parse_rate(x) for x in a[2:]))]
        )

    def do_meter_array_set_rates(self, c: Cmd) -> None:
        name = self._name("meter", c.args[0])
        rates = tuple(parse_rate(x) for x in c.args[1:])
        size = self.schema.meter(name).size
        self.t.write([MeterRates(name, i, rates) for i in range(size)])

    # ------------------------------------------------------------ replication

    def write_pre(self, e: CloneSession | MulticastGroup) -> None:
        self.t.write([e], modify_existing=True)
        self.pre[type(e), e.session if isinstance(e, CloneSession) else e.group] = e

    def do_mirroring_add(self, c: Cmd) -> None:
        self.write_pre(CloneSession(int(c.args[0]), (int(c.args[1]),)))

    def do_mirroring_add_mc(self, c: Cmd) -> None:
        self.write_pre(CloneSession(int(c.args[0]), self._group_ports(int(c.args[1]))))

    def do_mc_mgrp_create(self, c: Cmd) -> None:
        self._groups[int(c.args[0])] = []

    def do_mc_node_create(self, c: Cmd) -> None:
        # BMv2 prints the handle of each node it creates, counting from 0; STF names them so
        self._nodes.append(tuple(int(p) for p in c.args[1:]))

    def do_mc_node_associate(self, c: Cmd) -> None:
        grp, node = int(c.args[0]), int(c.args[1])
        if grp not in self._groups or not 0 <= node < len(self._nodes):
            raise ValueError(f"no multicast group {grp} or node {node}")
        self._groups[grp].append(node)
        self.write_pre(MulticastGroup(grp, self._group_ports(grp)))

    def _group_ports(self, grp: int) -> tuple[int, ...]:
        if grp not in self._groups:
            raise ValueError(f"no multicast group {grp}")
        return tuple(p for n in self._groups[grp] for p in self._nodes[n])

    # ------------------------------------------------------------ after the run

    def clear_pre(self) -> None:
        """Delete the clone sessions and multicast groups this run wrote: a new pipeline does
        not clear BMv2's PRE (simple_switch_grpc keeps them, and a session written again after
        the push gets its replicas twice)."""
        if self.pre:
            self.t.delete(list(self.pre.values()))
            self.pre.clear()

    def observed(self) -> Observed:
        """Frames received, then every counter and register cell (after `sync`)."""
        obs = Observed({p: list(v) for p, v in self.received.items()})
        obs.counters = self.t.counters()
        for r in self.schema.registers.values():
            obs.registers[r.name] = self._register(r.name, None)
        return obs


def run_stf_file(target: Target, schema: Schema, path: str | Path, **kw) -> TargetStfRunner:
    """Run one STF file on `target` (its pipeline installed, nothing else); the runner
    holds `result` and what it received."""
    runner = TargetStfRunner(target, schema, str(path), **kw)
    runner.run_text(read_stf(path))
    return runner


def read_stf(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise StfError(f"{path}: cannot read: {e}") from None


def stf_ports(texts: Iterable[str]) -> set[int]:
    """The ports `packet` and `expect` lines name (p4c's runner makes an interface for each)."""
    return {
        int(c.args[0])
        for text in texts
        for c in parse_stf(text)
        if c.op in ("packet", "expect") and c.args and c.args[0].isdigit()
    }


_SESSION_IDS = itertools.count()


class StfSession:
    """One switch of `cfg`'s kind for many STF files of one program: each file starts from
    a fresh pipeline (pushed again: tables, counters, registers and PRE entries back to
    their initial state) and its own P4Runtime connection.

    Without `cfg.grpc_addr` the switch is started here on veth pairs (root), one per port
    in `ports` (the CPU port excepted: that one is P4Runtime packet I/O)."""

    def __init__(
        self,
        cfg: TargetConfig,
        program: Program,
        ports: Iterable[int] = (),
        *,
        log_dir: str | Path | None = None,
    ):
        self.cfg, self.program = cfg, program
        self.schema = Schema.from_bytes(program.p4info)
        self.kind = registry.check(cfg, context="cli")
        self._stack = contextlib.ExitStack()
        self.process = None
        self._thrift_port: int | None = None
        self._cli: Bmv2Cli | None = None
        try:
            if cfg.grpc_addr is None and not self.kind.in_process:
                self._start(sorted(set(ports) - {cfg.cpu_port}), log_dir)
        except BaseException:
            self._stack.close()
            raise

    def _start(self, ports: list[int], log_dir) -> None:
        from .targets import netns
        from .targets.config import PortRef

        if not self.kind.can_start:
            raise ConfigError(f"--target {self.kind.name} needs --grpc-addr HOST:PORT")
        self.kind.prepare(self.cfg)
        if not netns.is_root():
            raise ConfigError(
                f"--target {self.kind.name} without --grpc-addr starts a switch on "
                "veth pairs: run as root, or pass --grpc-addr and --port-map"
            )
        netns.sweep_stale()
        nets = self._stack.enter_context(netns.NetnsSet())
        test_side: dict[int, PortRef] = {}
        switch_side: dict[int, str] = {}
        tag = f"q{next(_SESSION_IDS)}"  # several sessions in one process: names apart
        for port in ports:
            nets.add_veth(netns.name(tag + "t", port), netns.name(tag + "s", port))
            test_side[port] = PortRef(netns.name(tag + "t", port))
            switch_side[port] = netns.name(tag + "s", port)
        cfg = dataclasses.replace(self.cfg, program=self.program)
        self.process = self.kind.start(cfg, switch_side, log_dir=log_dir)
        self._stack.callback(self.process.close)
        self.cfg = dataclasses.replace(cfg, port_map=test_side)
        thrift = self.process.extra.get("thrift_port")
        if thrift is not None:  # BMv2: its registers are only reachable through Thrift
            self._thrift_port = int(thrift)

    @contextlib.contextmanager
    def target(self) -> Iterator[Target]:
        """A connection with the pipeline pushed afresh and earlier frames dropped."""
        t = self.kind.open(self.cfg, self.program, self.process)
        try:
            t.receive()
            t.packet_in() if self.cfg.cpu_port else None
            yield t
        finally:
            t.close()

    def run(self, path: str | Path, text: str | None = None, **kw) -> TargetStfRunner:
        """Run the STF at `path` (or `text`, reported as `path`) on a fresh pipeline; the
        runner holds `result` and `observation` (frames, counters, registers)."""
        if text is None:
            text = read_stf(path)
        with self.target() as t:
            kw.setdefault("cpu_port", self.cfg.cpu_port)
            kw.setdefault("cli", self.cli())
            runner = TargetStfRunner(t, self.schema, str(path), **kw)
            try:
                runner.run_text(text)
                runner.observation = runner.observed()
            finally:
                runner.clear_pre()
            return runner

    def cli(self) -> Bmv2Cli | None:
        """BMv2's Thrift CLI, opened once the pipeline is in (it reads the switch's JSON)."""
        if self._cli is None and self._thrift_port is not None:
            self._cli = Bmv2Cli(self._thrift_port)
            self._stack.callback(self._cli.close)
        return self._cli

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> StfSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- rocelab stf


def program_for(stf: Path) -> Path:
    """p4c's layout: NAME.p4 beside NAME.stf; ours (p4src/tests/*.stf): the one .p4 in the
    folder above."""
    beside = stf.with_suffix(".p4")
    if beside.is_file():
        return beside
    above = sorted(stf.resolve().parent.parent.glob("*.p4"))
    if len(above) == 1:
        return above[0]
    raise FileNotFoundError(
        f"{stf}: no {beside.name} beside it and no single .p4 in "
        f"{stf.resolve().parent.parent}; pass --program"
    )


def _report(name: str, result: StfResult) -> None:
    for w in result.warnings:
        print(w)
    print(f"{name}: {result.report()}")


def run_cli(args, usage: type[Exception]) -> int:
    """`rocelab stf`: 0 every file passed (or was not run, saying why), 1 a failure, 2 a
    malformed file or bad options."""
    import sys

    from .targets.program import from_artifacts

    paths = [Path(p) for p in args.stf]
    try:
        texts = {p: read_stf(p) for p in paths}
        for p, text in texts.items():
            parse_stf(text)
            del p
        programs = {p: Path(args.program) if args.program else program_for(p) for p in paths}
    except (StfError, FileNotFoundError) as e:
        raise usage(str(e)) from None
    options, explicit = registry.option_values(lambda dest: getattr(args, dest), "cli")
    failed = not_run = 0
    for source in dict.fromkeys(programs.values()):
        mine = [p for p in paths if programs[p] == source]
        program: Path | Program = source
        if args.p4info or args.bmv2_json:
            if not (args.p4info and args.bmv2_json):
                raise usage("--p4info and --bmv2-json go together")
            program = from_artifacts(args.p4info, args.bmv2_json)
        cfg = TargetConfig(
            kind=args.target,
            grpc_addr=args.grpc_addr,
            device_id=args.device_id,
            port_map=args.port_map or {},
            program=program,
            push=not args.no_push,
            options=options,
        )
        try:
            kind = registry.check(cfg, explicit, "cli")
        except ConfigError as e:
            raise usage(str(e)) from None
        if kind.in_process:
            from .targets.p4sim import compile_program, run_stf_in_process

            compiled = compile_program(source)
            for p in mine:
                try:
                    result = run_stf_in_process(compiled, texts[p], str(p), strict=args.strict)
                except StfError as e:
                    raise usage(str(e)) from None
                _report(str(p), result)
                failed += not result.ok
            continue
        ports = stf_ports(texts[p] for p in mine)
        with StfSession(cfg, kind.program(cfg), ports) as session:
            for p in mine:
                try:
                    runner = session.run(p, strict=args.strict)
                except Unsupported as e:
                    print(f"NOT RUN: {e}")  # e: "FILE: why", one line
                    not_run += 1
                    continue
                except StfError as e:
                    sys.stderr.write(f"rocelab: {e}\n")
                    return 2
                _report(str(p), runner.result)
                failed += not runner.result.ok
    total = len(paths)
    print(
        f"{total - failed - not_run} passed, {failed} failed, {not_run} not run "
        f"(--target {args.target})"
    )
    return 1 if failed else 0
