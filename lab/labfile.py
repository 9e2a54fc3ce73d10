"""Lab files: a congested lab as data (YAML), loaded into the fabric's own topology type.

    name: two-switch
    switches: [A, B]
    hosts:   {h1: {switch: A, port: 1, rate: 4M, delay: 500us}, ...}
    links:   [{a: A:3, b: B:2, rate: 2M, delay: 1ms}]
    flows:   [{src: h1, dst: h3}, ...]          # each a DCQCN-paced RC WRITE stream
    duration: 3s
    policy:  {...}                               # controller.config keys for every switch
    dcqcn:   {g: 0.0625, rate_timer: 40ms, ...}  # controller.hosts.dcqcn.DcqcnParams

The topology is a `controller.fabric.topology.Topology` (the virtual-time fabric's format:
hosts, switches, links with speed and delay, addresses fixed by position), so routes and
switch programs come from `controller.fabric.routing`, the code the fabric uses. What the
fabric has no key for (flows, duration, DCQCN knobs) lives beside it in `LabSpec`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.config import ConfigError, parse_speed
from controller.fabric.topology import Topology
from controller.hosts.dcqcn import DcqcnParams
from controller.inputs import InputError, parse_yaml, read_text, yaml_error_where
from controller.units import parse_time_ns

TOPOLOGY_DIR = Path(__file__).resolve().parent / "topologies"
MAX_FILE_BYTES = 1 << 20
MAX_NODES = 32  # a lab is processes and namespaces on one machine
MAX_DURATION_S = 600.0
_TOP_KEYS = {
    "name",
    "description",
    "switches",
    "hosts",
    "links",
    "flows",
    "duration",
    "policy",
    "dcqcn",
}
# lab-file key -> DcqcnParams field, and how to read its value
_DCQCN_KEYS = {
    "g": ("g", "float"),
    "alpha_timer": ("alpha_timer_ns", "time"),
    "rate_timer": ("rate_timer_ns", "time"),
    "byte_counter": ("byte_counter", "size"),
    "fast_recovery_steps": ("fast_recovery_steps", "int"),
    "rate_ai": ("rate_ai_bps", "speed"),
    "rate_hai": ("rate_hai_bps", "speed"),
    "alpha_init": ("alpha_init", "float"),
    "min_rate": ("min_rate_bps", "speed"),
    "rate_reduce_interval": ("rate_reduce_interval_ns", "time"),
}


class LabFileError(ValueError):
    """A problem in a lab file, as `PATH: KEY: message`."""


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str


@dataclass
class LabSpec:
    topology: Topology
    flows: list[Flow]
    duration_s: float
    policy: dict
    dcqcn: DcqcnParams
    description: str = ""
    path: str = "<lab>"
    host_rate: dict[str, float] = field(default_factory=dict)

    @property
    def cnp_interval_ns(self) -> int:
        """The NP's CNP spacing per flow: the policy's cnp.interval_us (one knob, both modes)."""
        return int((self.policy.get("cnp") or {}).get("interval_us", 50)) * 1000


def _size_bytes(value: Any, key: str) -> int:
    from controller.config import parse_size

    s = parse_size(value, key)
    if s.packets:
        raise ConfigError(key, "give bytes (e.g. 100KB), not packets")
    return int(s.value)


def _end(text: Any, key: str) -> tuple[str, int]:
    node, sep, port = str(text).partition(":")
    if not sep or not port.isdigit():
        raise ConfigError(key, f"expected SWITCH:PORT, e.g. A:3, got {text!r}")
    return node, int(port)


def _map(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(key, f"expected a mapping, got {type(value).__name__}")
    return value


def _seq(value: Any, key: str) -> list:
    if not isinstance(value, list):
        raise ConfigError(key, f"expected a list, got {type(value).__name__}")
    return value


def parse_lab(data: Any, path: str = "<lab>", lines: dict[str, int] | None = None) -> LabSpec:
    """A LabSpec from parsed YAML; the first problem raises LabFileError naming its key (and
    its line, given `lines`). Types, ranges and units: the typed schema
    (controller/schemas/files.py); the references between keys: below."""
    from controller.schemas import kinds, validate

    if isinstance(data, dict):
        _, errors = validate(kinds()["lab"], data, path, lines)
        if errors:
            e = errors[0]
            raise LabFileError(f"{e.where or path}: {e.key}: {e.message}")
    try:
        return _parse(data, path)
    except (ConfigError, ValueError, KeyError, TypeError) as e:
        raise LabFileError(f"{path}: {e}") from None


def _parse(data: Any, path: str) -> LabSpec:
    data = _map(data, "<top>")
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        raise ConfigError(unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})")
    topo = Topology(str(data.get("name", "lab")))
    switches = _seq(data.get("switches"), "switches")
    hosts = _map(data.get("hosts"), "hosts")
    if not switches or not hosts:
        raise ConfigError("switches", "a lab needs at least one switch and one host")
    if len(switches) + len(hosts) > MAX_NODES:
        raise ConfigError("hosts", f"at most {MAX_NODES} nodes in a lab")
    for s in switches:
        if not isinstance(s, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,7}", s):
            raise ConfigError("switches", f"switch names are 1-8 letters/digits, got {s!r}")
        topo.add_switch(s)
    host_rate: dict[str, float] = {}
    for name, h in hosts.items():
        k = f"hosts.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,7}", name):
            raise ConfigError(k, "host names are 1-8 letters/digits")
        h = _map(h, k)
        bad = sorted(set(h) - {"switch", "port", "rate", "delay"})
        if bad:
            raise ConfigError(f"{k}.{bad[0]}", "unknown key (known: switch, port, rate, delay)")
        if h.get("switch") not in topo.switches:
            raise ConfigError(f"{k}.switch", f"no switch {h.get('switch')!r} in switches")
        if not isinstance(h.get("port"), int) or isinstance(h.get("port"), bool):
            raise ConfigError(f"{k}.port", f"expected a port number, got {h.get('port')!r}")
        bps = parse_speed(h.get("rate", "10M"), f"{k}.rate")
        topo.add_host(
            name, h["switch"], h["port"], bps, parse_time_ns(h.get("delay", "100us"), f"{k}.delay")
        )
        host_rate[name] = bps
    for i, lk in enumerate(_seq(data.get("links", []), "links")):
        k = f"links[{i}]"
        lk = _map(lk, k)
        bad = sorted(set(lk) - {"a", "b", "rate", "delay"})
        if bad:
            raise ConfigError(f"{k}.{bad[0]}", "unknown key (known: a, b, rate, delay)")
        (a, pa), (b, pb) = _end(lk.get("a"), f"{k}.a"), _end(lk.get("b"), f"{k}.b")
        topo.connect(
            a,
            pa,
            b,
            pb,
            parse_speed(lk.get("rate", "10M"), f"{k}.rate"),
            parse_time_ns(lk.get("delay", "100us"), f"{k}.delay"),
        )
    for lk in topo.links:
        if lk.bps > 1e9:
            raise ConfigError(
                "links",
                f"{lk.a}-{lk.b}: at most 1G in a lab (the switches are software on one machine)",
            )
    flows = []
    for i, f in enumerate(_seq(data.get("flows", []), "flows")):
        f = _map(f, f"flows[{i}]")
        for end in ("src", "dst"):
            if f.get(end) not in topo.hosts:
                raise ConfigError(f"flows[{i}].{end}", f"no host {f.get(end)!r}")
        if f["src"] == f["dst"]:
            raise ConfigError(f"flows[{i}]", "a flow needs two different hosts")
        flows.append(Flow(f["src"], f["dst"]))
    if len(set(flows)) != len(flows):
        raise ConfigError("flows", "a (src, dst) pair appears twice")
    both = sorted({f.src for f in flows} & {f.dst for f in flows})
    if both:  # an agent either sends (paced, every peer) or receives
        raise ConfigError("flows", f"host {both[0]} both sends and receives")
    duration = parse_time_ns(data.get("duration", "3s"), "duration") / 1e9
    if not 0 < duration <= MAX_DURATION_S:
        raise ConfigError("duration", f"must be in (0, {MAX_DURATION_S:g}] s")
    policy = _map(data.get("policy", {}) or {}, "policy")
    params = DcqcnParams()
    for key, value in _map(data.get("dcqcn", {}) or {}, "dcqcn").items():
        if key not in _DCQCN_KEYS:
            raise ConfigError(f"dcqcn.{key}", f"unknown knob (known: {', '.join(_DCQCN_KEYS)})")
        attr, kind = _DCQCN_KEYS[key]
        k = f"dcqcn.{key}"
        if kind == "time":
            v: Any = parse_time_ns(value, k)
        elif kind == "speed":
            v = parse_speed(value, k)
        elif kind == "size":
            v = _size_bytes(value, k)
        elif kind == "int":
            v = value if isinstance(value, int) and not isinstance(value, bool) else None
            if v is None:
                raise ConfigError(k, f"expected an integer, got {value!r}")
        else:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(k, f"expected a number, got {value!r}")
            v = float(value)
        setattr(params, attr, v)
    params.validate()
    spec = LabSpec(
        topo, flows, duration, policy, params, str(data.get("description", "")), path, host_rate
    )
    params.cnp_interval_ns = spec.cnp_interval_ns
    return spec


def load_lab(path: str | Path) -> LabSpec:
    """Read a lab file (a name in lab/topologies/ without .yaml, or a path)."""
    p = Path(path)
    if not p.suffix and not p.exists():
        p = TOPOLOGY_DIR / f"{path}.yaml"
    from controller.schemas import key_lines

    try:
        text = read_text(p, MAX_FILE_BYTES)
        data = parse_yaml(text)
    except InputError as e:
        raise LabFileError(str(e)) from None
    except yaml.YAMLError as e:
        where, problem = yaml_error_where(e, p)
        raise LabFileError(f"{where}: not YAML ({problem})") from None
    return parse_lab(data, str(p), key_lines(text))


def lab_names() -> list[str]:
    return sorted(f.stem for f in TOPOLOGY_DIR.glob("*.yaml"))
