"""p4c's STF test format, run against a p4sim switch.

Commands (one per line, `#` starts a comment):
    add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...)
        VALUE: 0x.. / decimal / 0b..; `V/LEN` (lpm), `V&&&MASK` (ternary), `LO->HI` (range),
        hex with `*` nibbles (ternary don't-care). Higher PRIORITY wins.
    setdefault TABLE ACTION(PARAM:VALUE, ...)
    packet PORT HEX...          expect PORT HEX... (`*` nibble = any, `$` = frame ends)
    wait
    mc_mgrp_create GROUP    mc_node_create RID PORT...    mc_node_associate GROUP HANDLE
Every other command belongs to an extern, and its module in p4sim.externs defines it
(`Extern.stf_commands`), for example:
    mirroring_add SESSION PORT          mirroring_add_mc SESSION GROUP
    counter_read NAME INDEX     counter_write NAME INDEX PACKETS BYTES
    check_counter NAME(INDEX) [packets|bytes] [== VALUE]
    register_read NAME INDEX    register_write NAME INDEX VALUE    register_reset NAME
    check_register NAME INDEX [==] VALUE
    meter_set_rates NAME INDEX RATE:BURST RATE:BURST   meter_array_set_rates NAME RATE:BURST RATE:BURST
Names resolve as p4c's runner does: the full name, or a unique suffix.
Expected packets are matched per port, in order; missing, extra or different packets fail.

Two modes (p4c's runner is backends/bmv2/bmv2stf.py, `RunBMV2`):
- default, p4c's semantics: only ports named by a `packet` or `expect` line are checked
  (`generate_model_inputs` makes pcap interfaces for those alone, `checkOutputs` reads only
  them), so output on any other port is lost without error; `expect PORT` with no data
  accepts any number of packets on PORT (`expectedAny`); an unknown command is ignored
  (`do_command`, "ignoring stf command"), with a warning line here.
- strict (`strict=True`, `p4sim stf --strict`; the project's own tests use it): every port is
  checked, so a packet on a port the test never names fails, and an unknown command is an error.
"""

from __future__ import annotations

from p4rtproto.stf import (  # noqa: F401  (the shared STF syntax, re-exported)
    Cmd,
    Expected,
    StfError,
    StfResult,
    action_call,
    add_parts,
    hex_pattern,
    key_value,
    packet_bytes,
    parse_int,
    parse_stf,
)
from p4sim import externs as registry
from p4sim.model import P4SimError, TableEntry
from p4sim.runtime.switch import Switch, resolve_name

_key_value = key_value  # the name p4sim's extern modules import


class StfRunner:
    def __init__(self, switch: Switch, path: str = "<stf>", *, strict: bool = False):
        self.sw = switch
        self.path = path
        self.strict = strict
        self.expected = Expected(path)
        self.received: dict[int, list[bytes]] = {}
        self.result = StfResult(True)
        self._auto_prio = 1 << 20

    def fail(self, msg: str) -> None:
        self.result.ok = False
        self.result.messages.append(msg)

    def run_text(self, text: str) -> StfResult:
        for cmd in parse_stf(text):
            try:
                self.run(cmd)
            except IndexError as e:
                # a[i] past the end in the command's own code: too few arguments
                if _raised_in(e, StfRunner.run) or _raised_in(e, registry.stf_command(cmd.op)):
                    raise StfError(f"{self.path}:{cmd.line}: {cmd.op}: missing argument(s)") from e
                raise StfError(f"{self.path}:{cmd.line}: {cmd.op}: {e}") from e
            except (P4SimError, ValueError, KeyError) as e:
                raise StfError(f"{self.path}:{cmd.line}: {cmd.op}: {e}") from e
            except (NameError, AttributeError, TypeError) as e:
                # a bug in p4sim's generated code (the 64aa1ae NameError reached users as a
                # traceback): one line that says so, never a traceback
                raise StfError(
                    f"{self.path}:{cmd.line}: {cmd.op}: p4sim internal error "
                    f"({type(e).__name__}: {e}); please report it"
                ) from e
        self.collect()
        self.check()
        return self.result

    # ------------------------------------------------------------ commands

    def run(self, c: Cmd) -> None:
        sw = self.sw
        op, a = c.op, c.args
        if op == "add":
            self.add(c)
        elif op == "setdefault":
            tname = resolve_name(a[0], sw.tables, "table")
            aname, args = action_call(a[1])
            sw.table_set_default(tname, aname, self.params(tname, aname, args))
        elif op == "packet":
            self.collect()
            self.expected.named_ports.add(int(a[0]))
            sw.send(int(a[0]), packet_bytes(a[1:]))
            self.result.packets_sent += 1
        elif op == "expect":
            self.expected.add(c, self.strict)
        elif op == "wait":
            self.collect()
        elif op == "no_packet":
            self.collect()  # any packet not expected already fails the test
        elif op == "mc_mgrp_create":
            sw.pre.group_create(int(a[0]))
        elif op == "mc_node_create":
            sw.pre.node_create(int(a[0]), [int(p) for p in a[1:]])
        elif op == "mc_node_associate":
            sw.pre.node_associate(int(a[0]), int(a[1]))
        else:
            # the externs' commands (counter_read, register_write, mirroring_add...), each
            # defined by its module in p4sim.externs
            f = registry.stf_command(op)
            if f is None:
                if self.strict:
                    raise ValueError(f"unknown STF command {op!r}")
                # p4c's runner ignores commands it does not know (bmv2stf.py do_command)
                self.result.warnings.append(
                    f"{self.path}:{c.line}: warning: unknown STF command {op!r} ignored"
                )
                return
            f(self, c)

    def params(self, tname: str, aname: str, args: list[tuple[str | None, int]]) -> dict[str, int]:
        t = self.sw.tables[tname]
        full = None
        for spec in t.actions:
            if spec.name == aname or spec.name.endswith("." + aname):
                full = spec
        if full is None:
            raise ValueError(f"action {aname} is not an action of table {tname}")
        out = {}
        pnames = [p for p, _ in full.params]
        for i, (k, v) in enumerate(args):
            if k is None:
                out[pnames[i]] = v
            else:
                out[resolve_name(k, pnames, "action parameter")] = v
        return out

    def add(self, c: Cmd) -> None:
        table, prio, keys, action = add_parts(c.args)
        tname = resolve_name(table, self.sw.tables, "table")
        t = self.sw.tables[tname]
        match = {}
        for k, v in keys:
            kname = resolve_name(k, list(t.key_names), "key field")
            i = t.key_names.index(kname)
            match[kname] = key_value(v, t.kinds[i], t.widths[i])
        aname, args = action_call(action)
        if prio is None and t.needs_priority:
            # earlier entries win when the test gives no priorities
            self._auto_prio -= 1
            prio = self._auto_prio
        entry = TableEntry(tname, match, aname, self.params(tname, aname, args), priority=prio or 0)
        self.sw.table_add(entry)

    # ------------------------------------------------------------ packets

    def collect(self) -> None:
        self.sw.run_until_idle()
        for p in self.sw.receive():
            self.received.setdefault(p.port, []).append(p.data)

    def check(self) -> None:
        self.expected.compare(self.received, self.strict, self.result)


def _raised_in(exc: BaseException, fn: object) -> bool:
    """True when `exc` was raised in `fn`'s own body (not in something it called)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is getattr(fn, "__code__", None)


def run_stf(
    program, stf_path: str, *, include_dirs=(), switch: Switch | None = None, strict: bool = False
) -> StfResult:
    """Run an STF file against a program (path or CompiledProgram) on a fresh switch."""
    sw = switch or Switch(program, include_dirs=include_dirs)
    with open(stf_path, encoding="utf-8") as f:
        text = f.read()
    return StfRunner(sw, stf_path, strict=strict).run_text(text)
