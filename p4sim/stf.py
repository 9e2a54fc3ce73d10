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

import re
from dataclasses import dataclass, field

from p4sim import externs as registry
from p4sim.model import Exact, Lpm, P4SimError, Range, TableEntry, Ternary
from p4sim.runtime.switch import Switch, resolve_name


class StfError(Exception):
    """A malformed STF file (file:line: reason)."""


@dataclass
class Cmd:
    line: int
    op: str
    args: list[str]
    text: str


@dataclass
class StfResult:
    ok: bool
    messages: list[str] = field(default_factory=list)
    packets_sent: int = 0
    packets_checked: int = 0
    warnings: list[str] = field(default_factory=list)

    def report(self) -> str:
        head = "PASS" if self.ok else "FAIL"
        return "\n".join([f"{head}: {self.packets_sent} packets sent, {self.packets_checked} checked"]
                         + self.messages)


def parse_stf(text: str) -> list[Cmd]:
    cmds = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        # keep `name(args)` together: split on spaces outside parentheses
        parts = re.findall(r"[^\s(]+\([^)]*\)|\S+", line)
        cmds.append(Cmd(n, parts[0].lower(), parts[1:], line))
    return cmds


def parse_int(s: str) -> int:
    s = s.strip().replace("_", "")
    m = re.fullmatch(r"(\d+)[ws](.+)", s)
    if m:
        s = m.group(2)
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    if s.lower().startswith("0x"):
        v = int(s[2:], 16)
    elif s.lower().startswith("0b"):
        v = int(s[2:], 2)
    elif s.lower().startswith("0o"):
        v = int(s[2:], 8)
    else:
        v = int(s, 10)
    return -v if neg else v


def _key_value(text: str, kind: str, width: int):
    if "&&&" in text:
        v, m = text.split("&&&", 1)
        return Ternary(parse_int(v) & parse_int(m), parse_int(m))
    if "->" in text:
        lo, hi = text.split("->", 1)
        return Range(parse_int(lo), parse_int(hi))
    if "/" in text:
        v, plen = text.split("/", 1)
        return Lpm(parse_int(v), int(plen))
    if "*" in text:
        t = text.lower()
        base = 16 if t.startswith("0x") else 2 if t.startswith("0b") else 0
        if not base:
            raise ValueError(f"'*' wildcards need a 0x or 0b value: {text}")
        digits = t[2:]
        bits = 4 if base == 16 else 1
        v = m = 0
        for ch in digits:
            v <<= bits
            m <<= bits
            if ch != "*":
                v |= int(ch, base)
                m |= (1 << bits) - 1
        return Ternary(v, m & ((1 << width) - 1))
    v = parse_int(text)
    if kind == "lpm":
        return Lpm(v, width)
    if kind == "ternary":
        return Ternary(v, (1 << width) - 1)
    if kind == "range":
        return Range(v, v)
    return Exact(v)


def _action_call(text: str) -> tuple[str, list[tuple[str | None, int]]]:
    m = re.fullmatch(r"([^\s(]+)\((.*)\)", text)
    if not m:
        return text, []
    args = []
    for a in m.group(2).split(","):
        a = a.strip()
        if not a:
            continue
        if ":" in a:
            k, v = a.split(":", 1)
            args.append((k.strip(), parse_int(v)))
        elif "=" in a:
            k, v = a.split("=", 1)
            args.append((k.strip(), parse_int(v)))
        else:
            args.append((None, parse_int(a)))
    return m.group(1), args


def _hex_pattern(parts: list[str]) -> tuple[str, bool]:
    s = "".join(parts).replace(" ", "").lower()
    exact_end = s.endswith("$")
    s = s.rstrip("$")
    if s.startswith("0x"):
        s = s[2:]
    if not re.fullmatch(r"[0-9a-f*]*", s):
        raise ValueError(f"bad packet data: {''.join(parts)}")
    return s, exact_end


class StfRunner:
    def __init__(self, switch: Switch, path: str = "<stf>", *, strict: bool = False):
        self.sw = switch
        self.path = path
        self.strict = strict
        self.expected: dict[int, list[tuple[str, bool, int]]] = {}
        self.received: dict[int, list[bytes]] = {}
        self.named_ports: set[int] = set()  # ports of `packet`/`expect` lines (p4c's interfaces)
        self.any_ports: set[int] = set()  # `expect PORT` with no data: any number of packets
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
                raise StfError(f"{self.path}:{cmd.line}: {cmd.op}: p4sim internal error "
                               f"({type(e).__name__}: {e}); please report it") from e
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
            aname, args = _action_call(a[1])
            sw.table_set_default(tname, aname, self.params(tname, aname, args))
        elif op == "packet":
            self.collect()
            self.named_ports.add(int(a[0]))
            sw.send(int(a[0]), bytes.fromhex(_hex_pattern(a[1:])[0]))
            self.result.packets_sent += 1
        elif op == "expect":
            port = int(a[0])
            self.named_ports.add(port)
            if len(a) == 1:
                self.any_ports.add(port)  # bmv2stf.py do_command: `expectedAny`
                return
            pat, end = _hex_pattern(a[1:])
            if self.strict and "*" not in pat and len(pat) % 2:
                # p4c's comparePacket compares hex digits: an odd count is a nibble prefix
                raise ValueError("odd number of hex digits")
            self.expected.setdefault(port, []).append((pat, end, c.line))
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
                self.result.warnings.append(f"{self.path}:{c.line}: warning: unknown STF command "
                                            f"{op!r} ignored")
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
        a = list(c.args)
        tname = resolve_name(a.pop(0), self.sw.tables, "table")
        t = self.sw.tables[tname]
        prio = None
        if a and re.fullmatch(r"\d+", a[0]):
            prio = int(a.pop(0)) + 1  # STF allows 0; P4Runtime priorities start at 1
        action = a.pop()
        match = {}
        for kv in a:
            if ":" not in kv:
                raise ValueError(f"key {kv!r} is not FIELD:VALUE")
            k, v = kv.split(":", 1)
            k = re.sub(r"\$(\d+)", r"[\1]", k)  # p4c's runner writes stack[0].f as stack$0.f
            kname = resolve_name(k, list(t.key_names), "key field")
            i = t.key_names.index(kname)
            match[kname] = _key_value(v, t.kinds[i], t.widths[i])
        aname, args = _action_call(action)
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
        if self.strict:
            ports = set(self.expected) | set(self.received)
        else:
            # bmv2stf.py checkOutputs: only the interfaces the test named exist
            ports = self.named_ports
        for port in sorted(ports - self.any_ports):
            exp = self.expected.get(port, [])
            got = self.received.get(port, [])
            for i in range(max(len(exp), len(got))):
                if i >= len(got):
                    pat, _, line = exp[i]
                    self.fail(f"{self.path}:{line}: expected packet #{i + 1} on port {port} never came:"
                              f"\n    expected {pat}")
                    continue
                data = got[i].hex()
                if i >= len(exp):
                    self.fail(f"unexpected packet #{i + 1} on port {port}:\n    got      {data}")
                    continue
                pat, end, line = exp[i]
                self.result.packets_checked += 1
                if not _match(pat, end, data):
                    self.fail(f"{self.path}:{line}: packet #{i + 1} on port {port} differs:\n"
                              f"    expected {pat}{'$' if end else ''}\n    got      {data}\n"
                              f"    diff     {_diff(pat, data)}")


def _raised_in(exc: BaseException, fn: object) -> bool:
    """True when `exc` was raised in `fn`'s own body (not in something it called)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is getattr(fn, "__code__", None)


def _match(pat: str, end: bool, data: str) -> bool:
    if len(data) < len(pat) or (end and len(data) != len(pat)):
        return False
    return all(p == "*" or p == d for p, d in zip(pat, data, strict=False))


def _diff(pat: str, data: str) -> str:
    n = max(len(pat), len(data))
    return "".join(
        " " if i < len(pat) and i < len(data) and (pat[i] == "*" or pat[i] == data[i]) else "^"
        for i in range(n)
    ).rstrip()


def run_stf(program, stf_path: str, *, include_dirs=(), switch: Switch | None = None,
            strict: bool = False) -> StfResult:
    """Run an STF file against a program (path or CompiledProgram) on a fresh switch."""
    sw = switch or Switch(program, include_dirs=include_dirs)
    with open(stf_path, encoding="utf-8") as f:
        text = f.read()
    return StfRunner(sw, stf_path, strict=strict).run_text(text)
