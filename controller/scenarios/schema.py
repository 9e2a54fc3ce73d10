"""The scenario file's one typed schema: every key, its type and its range, checked before
anything runs. A bad value raises `ScenarioError` naming its key path (and the file's line
where YAML gives it): the CLI prints it on one line and exits 2. Bounds keep every run
finite: the duration, the number of samples, the number of messages a flow posts.

The switch block is the switch config (controller.config) and is checked by its own parser
and `check` (XOFF/headroom/buffer arithmetic), with the flows' queue pairs added.
"""

from __future__ import annotations

import math
from dataclasses import fields

from controller.config import ConfigError, parse_size, parse_speed
from controller.hosts.dcqcn import DcqcnParams

from .checks import registered
from .kinds import kind_of

MAX_DURATION_US = 200_000  # 200 ms of virtual time (minutes of wall time): longer is a typo
MAX_SAMPLES = 100_000  # duration / sample_us
MAX_MESSAGES = 100_000  # per flow: bytes / message
MAX_FLOWS = 64
MAX_SWEEP = 16


class ScenarioError(ConfigError):
    """A bad scenario input: `key` is its dotted path (file:line first when known)."""


class Validator:
    """Validators by key path; `where(path)` gives the file:line prefix when known."""

    def __init__(self, source: str, lines: dict[str, int]):
        self.source, self.lines = source, lines

    def fail(self, key: str, msg: str) -> None:
        line = self.lines.get(key)
        where = f"{self.source}:{line}: " if line else f"{self.source}: "
        raise ScenarioError(f"{where}{key}", msg)

    def num(self, d: dict, key: str, path: str, default: float, lo: float, hi: float,
            lo_open: bool = False, integer: bool = False) -> float:
        v = d.get(key, default)
        p = f"{path}{key}"
        if isinstance(v, bool) or not isinstance(v, int | float):
            self.fail(p, f"expected a number, got {v!r}")
        if not math.isfinite(v):
            self.fail(p, f"expected a finite number, got {v!r}")
        if integer and v != int(v):
            self.fail(p, f"expected a whole number, got {v!r}")
        if v < lo or (lo_open and v == lo) or v > hi:
            self.fail(p, f"{v!r} is out of range {'(' if lo_open else '['}{lo:g}, {hi:g}]")
        return int(v) if integer else float(v)

    def flag(self, d: dict, key: str, path: str, default: bool) -> bool:
        v = d.get(key, default)
        if not isinstance(v, bool):
            self.fail(f"{path}{key}", f"expected true or false, got {v!r}")
        return v

    def text(self, d: dict, key: str, path: str, default: str | None = None) -> str:
        v = d.get(key, default)
        if not isinstance(v, str) or not v:
            self.fail(f"{path}{key}", f"expected a non-empty string, got {v!r}")
        return v

    def mapping(self, d: dict, key: str, path: str, allowed: set[str] | None) -> dict:
        v = d.get(key)
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.fail(f"{path}{key}", f"expected a mapping, got {type(v).__name__}")
        if allowed is not None:
            self.keys(v, f"{path}{key}.", allowed)
        return v

    def keys(self, d: dict, path: str, allowed: set[str]) -> None:
        for k in d:
            if k not in allowed:
                self.fail(f"{path}{k}", f"unknown key (known: {', '.join(sorted(allowed))})")

    def size(self, d: dict, key: str, path: str, default: str, frame_bytes: int) -> int:
        p = f"{path}{key}"
        try:
            s = parse_size(d.get(key, default), p)
        except ConfigError as exc:
            self.fail(p, exc.message)
        if not math.isfinite(s.value) or s.value <= 0:
            self.fail(p, f"must be a positive size, got {d.get(key)!r}")
        return s.to_bytes(frame_bytes)


TOP = {"name", "title", "extends", "duration_us", "warmup_us", "seed", "sample_us", "link",
       "nic", "dcqcn", "switch", "flows", "watch", "sweep", "expect", "expect_fail", "capture",
       "_path"}
NIC = {"window", "timeout_us", "ack_every", "rp", "np", "dscp", "priority"}
FLOW = {"src", "dst", "op", "bytes", "message", "start_us", "name", "qpn", "peer_qpn"}


def validate(sc: dict, lines: dict[str, int] | None = None, duration_us: float | None = None) -> None:
    """Raise ScenarioError for the first bad key of a loaded scenario (and of the command
    line's --duration-us); returns nothing when all is well."""
    v = Validator(sc.get("_path", "<scenario>"), lines or {})
    # types, ranges and units: the typed schema (controller/schemas/files.py); then the rules
    # that need the whole file, below (or the kind's own, for another kind of file)
    from controller.schemas import kinds
    from controller.schemas import validate as typed

    kind = kind_of(sc)
    _, errors = typed(kinds()["fabric" if kind is not None else "scenario"],
                      {k: x for k, x in sc.items() if k != "_path"})
    if errors:
        v.fail(errors[0].key, errors[0].message)
    if kind is not None:  # another kind of file (controller.fabric's): its own keys
        kind.validate(sc, v, duration_us)
        return
    for k in sc:
        if k not in TOP:
            v.fail(str(k), f"unknown key (known: {', '.join(sorted(TOP - {'_path'}))})")
    for k in ("name", "title"):
        if k in sc:
            v.text(sc, k, "")
    v.num(sc, "seed", "", 1, 0, 2**32 - 1, integer=True)
    dur = v.num(sc, "duration_us", "", 2000, 0, MAX_DURATION_US, lo_open=True)
    if duration_us is not None:
        dur = v.num({"--duration-us": duration_us}, "--duration-us", "", 0, 0, MAX_DURATION_US, lo_open=True)
    v.num(sc, "warmup_us", "", 0, 0, MAX_DURATION_US)
    sample = v.num(sc, "sample_us", "", 5, 1, MAX_DURATION_US)
    if dur / sample > MAX_SAMPLES:
        v.fail("sample_us", f"{dur:g} us / {sample:g} us = {dur / sample:.0f} samples (at most {MAX_SAMPLES})")
    link = v.mapping(sc, "link", "", {"speed", "prop_ns"})
    try:
        speed = parse_speed(link.get("speed", "10G"), "link.speed")
    except ConfigError as exc:
        v.fail("link.speed", exc.message)
    if not math.isfinite(speed) or not 1e6 <= speed <= 1.6e12:
        v.fail("link.speed", f"{link.get('speed')!r} is not a link speed in [1 Mb/s, 1.6 Tb/s]")
    v.num(link, "prop_ns", "link.", 1000, 1, 10**8, integer=True)
    nic = v.mapping(sc, "nic", "", NIC)
    window = v.num(nic, "window", "nic.", 256, 1, 65536, integer=True)
    v.num(nic, "timeout_us", "nic.", 1000, 1, 10**6)
    v.num(nic, "ack_every", "nic.", 16, 1, window, integer=True)
    v.num(nic, "dscp", "nic.", 26, 0, 63, integer=True)
    v.num(nic, "priority", "nic.", 3, 0, 7, integer=True)
    for k in ("rp", "np"):
        v.flag(nic, k, "nic.", True)
    dc = v.mapping(sc, "dcqcn", "", {f.name for f in fields(DcqcnParams)})
    for f in fields(DcqcnParams):
        if f.name in dc:
            v.num(dc, f.name, "dcqcn.", 0, 0, 1e15, integer=f.type in (int, "int"))
    try:
        DcqcnParams(**dc).validate()
    except (TypeError, ValueError) as exc:
        v.fail("dcqcn", str(exc))
    switch = v.mapping(sc, "switch", "", None)
    hosts = switch.get("hosts") if isinstance(switch.get("hosts"), dict) else {}
    ports = switch.get("ports") if isinstance(switch.get("ports"), dict) else {}
    mtu = switch.get("roce_mtu", 1024)
    frame = (int(mtu) if isinstance(mtu, int) and not isinstance(mtu, bool) else 1024) + 74
    flows = sc.get("flows")
    if not isinstance(flows, list) or not flows:
        v.fail("flows", "a scenario needs at least one flow (a list of {src, dst, ...})")
    if len(flows) > MAX_FLOWS:
        v.fail("flows", f"{len(flows)} flows (at most {MAX_FLOWS})")
    for i, f in enumerate(flows):
        p = f"flows[{i}]."
        if not isinstance(f, dict):
            v.fail(f"flows[{i}]", f"expected a mapping, got {f!r}")
        v.keys(f, p, FLOW)
        for end in ("src", "dst"):
            name = v.text(f, end, p)
            if name not in hosts:
                v.fail(f"{p}{end}", f"unknown host {name!r} (switch.hosts: {', '.join(map(str, hosts)) or 'none'})")
        if f["src"] == f["dst"]:
            v.fail(f"{p}dst", "a flow needs two different hosts")
        op = str(f.get("op", "WRITE")).upper()
        if op not in ("WRITE", "SEND", "READ"):
            v.fail(f"{p}op", f"expected WRITE, SEND or READ, got {f.get('op')!r}")
        total = v.size(f, "bytes", p, "1GB", frame)
        msg = v.size(f, "message", p, "1MB", frame)
        if msg > total:
            v.fail(f"{p}message", f"message {msg} B is larger than the flow's {total} B")
        if math.ceil(total / msg) > MAX_MESSAGES:
            v.fail(f"{p}message", f"{total} B in {msg} B messages is {math.ceil(total / msg)} "
                                  f"messages (at most {MAX_MESSAGES})")
        v.num(f, "start_us", p, 0, 0, dur)
        for k in ("qpn", "peer_qpn"):
            if k in f:
                v.num(f, k, p, 0, 1, 2**24 - 1, integer=True)
        if "name" in f:
            v.text(f, "name", p)
    watch = v.mapping(sc, "watch", "", {"port", "class"})
    if "port" in watch:
        port = v.num(watch, "port", "watch.", 0, 0, 511, integer=True)
        if ports and port not in ports:
            v.fail("watch.port", f"port {port} is not in switch.ports")
    v.num(watch, "class", "watch.", 3, 0, 7, integer=True)
    sweep = v.mapping(sc, "sweep", "", {"drop_rate"})
    if "drop_rate" in sweep:
        pts = sweep["drop_rate"]
        if not isinstance(pts, list) or not 1 <= len(pts) <= MAX_SWEEP:
            v.fail("sweep.drop_rate", f"expected a list of 1..{MAX_SWEEP} drop rates, got {pts!r}")
        for i, x in enumerate(pts):
            v.num({f"drop_rate[{i}]": x}, f"drop_rate[{i}]", "sweep.", 0, 0, 0.5)
    expectations(sc, v, "switch")
    cap = v.mapping(sc, "capture", "", {"ports", "snaplen", "cpu"})
    v.flag(cap, "cpu", "capture.", True)
    if "ports" in cap:
        if not isinstance(cap["ports"], list):
            v.fail("capture.ports", f"expected a list of switch ports, got {cap['ports']!r}")
        for i, x in enumerate(cap["ports"]):
            v.num({f"ports[{i}]": x}, f"ports[{i}]", "capture.", 0, 0, 511, integer=True)
    v.num(cap, "snaplen", "capture.", 0, 0, 65535, integer=True)


def expectations(sc: dict, v: Validator, scope: str) -> None:
    """`expect:` and `expect_fail:`: registered checks of this kind of scenario ("switch",
    or a scenario kind's key), each with a value of its parameter type."""
    checks = registered()
    names = {k for k, c in checks.items() if c.scope == scope}
    for block in ("expect", "expect_fail"):
        exp = v.mapping(sc, block, "", names)
        for key, value in exp.items():
            kind = checks[key].kind
            p = f"{block}."
            if kind == "true":
                if value is not True:
                    v.fail(p + key, f"expected true (omit the key to skip the check), got {value!r}")
            elif kind == "fraction":
                v.num(exp, key, p, 0, 0, 1, lo_open=True)
            elif kind == "count":
                v.num(exp, key, p, 0, 1, 10**9, integer=True)
            else:
                v.num(exp, key, p, 0, 0, 10**6, lo_open=True)


def key_lines(text: str) -> dict[str, int]:
    """Dotted key path -> 1-based line of its value in the YAML text (best effort)."""
    from controller.schemas import key_lines as lines

    return lines(text)
