"""p4c's STF test format: its syntax and its verdict, shared by every STF runner.

Two executors read STF: p4sim's (`p4sim.stf.StfRunner`, on the embedded switch's API) and
the controller's (`controller.stf`, on any `Target`: BMv2, p4sim-grpc, hardware). Both take
their commands, values, patterns and the per-port comparison from here, so they cannot
disagree on what a line means. Like `entities.py`, this sits below both p4sim and the
controller. The grammar and the verdict follow p4c's runner (backends/bmv2/bmv2stf.py
`Bmv2StfParser`, `RunBMV2.checkOutputs`; tools/stf/stf_parser.py for the common part).

A header line `# requires: virtual_time` says the file depends on what only a virtual
clock gives (exact queue depths, time that does not pass between packets): runners on a
real target refuse it with that reason instead of failing or skipping it silently.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .entities import Exact, Lpm, Range, Ternary


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
        return "\n".join(
            [f"{head}: {self.packets_sent} packets sent, {self.packets_checked} checked"]
            + self.messages
        )


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


REQUIRES = re.compile(r"#\s*requires:\s*(.+)", re.IGNORECASE)


def requirements(text: str) -> dict[str, str]:
    """`# requires: NAME [(why)]` lines of the file's leading comment block: name -> why."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            break
        m = REQUIRES.fullmatch(line)
        if m:
            name, _, why = m.group(1).partition(" ")
            out[name.strip()] = why.strip(" ()")
    return out


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


def key_value(text: str, kind: str, width: int):
    """One `FIELD:VALUE` value as a match of `kind` ("exact", "lpm", "ternary", "range")."""
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


def key_name(text: str) -> str:
    """p4c's runner writes `stack[0].f` as `stack$0.f` (bmv2stf.py TableKeyInstance.set)."""
    return re.sub(r"\$(\d+)", r"[\1]", text)


def action_call(text: str) -> tuple[str, list[tuple[str | None, int]]]:
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


def add_parts(args: Sequence[str]) -> tuple[str, int | None, list[tuple[str, str]], str]:
    """`add TABLE [PRIORITY] KEY:VALUE ... ACTION(...)` -> (table, P4Runtime priority or
    None, [(key, value text)], action call). STF allows priority 0; P4Runtime's start at 1."""
    a = list(args)
    table = a.pop(0)
    prio = None
    if a and re.fullmatch(r"\d+", a[0]):
        prio = int(a.pop(0)) + 1
    action = a.pop()
    keys = []
    for kv in a:
        if ":" not in kv:
            raise ValueError(f"key {kv!r} is not FIELD:VALUE")
        k, v = kv.split(":", 1)
        keys.append((key_name(k), v))
    return table, prio, keys, action


def hex_pattern(parts: list[str]) -> tuple[str, bool]:
    s = "".join(parts).replace(" ", "").lower()
    exact_end = s.endswith("$")
    s = s.rstrip("$")
    if s.startswith("0x"):
        s = s[2:]
    if not re.fullmatch(r"[0-9a-f*]*", s):
        raise ValueError(f"bad packet data: {''.join(parts)}")
    return s, exact_end


def packet_bytes(parts: list[str]) -> bytes:
    """The frame of a `packet PORT HEX...` line (no wildcards, whole bytes)."""
    pat, _ = hex_pattern(parts)
    if "*" in pat or len(pat) % 2:
        raise ValueError("packet data must be whole bytes without '*'")
    return bytes.fromhex(pat)


COMPARE: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class CounterCheck:
    """`check_counter NAME(INDEX) [packets|bytes] [CMP VALUE]` (p4c's runner's syntax)."""

    name: str
    index: int
    what: str  # "packets" | "bytes"
    cmp: str
    value: int

    def holds(self, packets: int, nbytes: int) -> bool:
        return COMPARE[self.cmp](packets if self.what == "packets" else nbytes, self.value)


def counter_check(args: Sequence[str]) -> CounterCheck:
    m = re.fullmatch(r"([^(]+)\((\d+)\)", args[0]) if args else None
    if not m:
        raise ValueError("check_counter NAME(INDEX) [packets|bytes] [== VALUE]")
    rest = list(args[1:])
    what = rest.pop(0) if rest and rest[0] in ("packets", "bytes") else "packets"
    cmp = rest.pop(0) if rest and rest[0] in COMPARE else "=="
    return CounterCheck(m.group(1), int(m.group(2)), what, cmp, parse_int(rest[0]) if rest else 0)


def register_check(args: Sequence[str]) -> tuple[str, int, int]:
    """`check_register NAME INDEX [==] VALUE` -> (name, index, value)."""
    rest = [x for x in args[2:] if x != "=="]
    return args[0], int(args[1]), parse_int(rest[0])


def parse_rate(text: str) -> tuple[float, int]:
    """`RATE:BURST` of meter_set_rates: (units per microsecond, burst units)."""
    r, b = text.split(":")
    return float(r), int(b)


# ---------------------------------------------------------------- the verdict


def match(pat: str, end: bool, data: str) -> bool:
    if len(data) < len(pat) or (end and len(data) != len(pat)):
        return False
    return all(p == "*" or p == d for p, d in zip(pat, data, strict=False))


def diff(pat: str, data: str) -> str:
    n = max(len(pat), len(data))
    return "".join(
        " " if i < len(pat) and i < len(data) and (pat[i] == "*" or pat[i] == data[i]) else "^"
        for i in range(n)
    ).rstrip()


@dataclass
class Expected:
    """The `expect` lines seen so far, per port: (pattern, `$`, line)."""

    path: str = "<stf>"
    frames: dict[int, list[tuple[str, bool, int]]] = field(default_factory=dict)
    named_ports: set[int] = field(default_factory=set)  # ports of `packet`/`expect` lines
    any_ports: set[int] = field(default_factory=set)  # `expect PORT` alone: any packets

    def add(self, c: Cmd, strict: bool) -> None:
        port = int(c.args[0])
        self.named_ports.add(port)
        if len(c.args) == 1:
            self.any_ports.add(port)  # bmv2stf.py execute_stf_command: `expected[...]["any"]`
            return
        pat, end = hex_pattern(c.args[1:])
        if strict and "*" not in pat and len(pat) % 2:
            # p4c's compare_pkt compares hex digits: an odd count is a nibble prefix
            raise ValueError("odd number of hex digits")
        self.frames.setdefault(port, []).append((pat, end, c.line))

    def count(self) -> int:
        return sum(len(v) for p, v in self.frames.items() if p not in self.any_ports)

    def compare(self, received: Mapping[int, list[bytes]], strict: bool, result: StfResult) -> None:
        """Per port, in order: missing, extra or different frames fail (checkOutputs).
        Not strict (p4c's semantics): only ports the test named exist, so output elsewhere is
        lost without error; strict: every port is checked."""
        ports = set(self.frames) | set(received) if strict else self.named_ports
        for port in sorted(ports - self.any_ports):
            exp = self.frames.get(port, [])
            got = received.get(port, [])
            for i in range(max(len(exp), len(got))):
                if i >= len(got):
                    pat, _, line = exp[i]
                    _fail(
                        result,
                        f"{self.path}:{line}: expected packet #{i + 1} on port {port} "
                        f"never came:\n    expected {pat}",
                    )
                    continue
                data = got[i].hex()
                if i >= len(exp):
                    _fail(
                        result, f"unexpected packet #{i + 1} on port {port}:\n    got      {data}"
                    )
                    continue
                pat, end, line = exp[i]
                result.packets_checked += 1
                if not match(pat, end, data):
                    _fail(
                        result,
                        f"{self.path}:{line}: packet #{i + 1} on port {port} differs:\n"
                        f"    expected {pat}{'$' if end else ''}\n    got      {data}\n"
                        f"    diff     {diff(pat, data)}",
                    )


def _fail(result: StfResult, msg: str) -> None:
    result.ok = False
    result.messages.append(msg)
