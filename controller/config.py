"""The switch configuration file: one declarative YAML that programs everything.

Schema (every key optional unless said; sizes take B/KB/MB/KiB/MiB or `N pkts`, speeds
take M/G suffixes, e.g. 10G):

    mtu: 1500                  # Ethernet MTU of every port (a port may repeat it)
    roce_mtu: 1024             # RoCE path MTU: payload bytes per packet (256..4096)
    router_mac: 02:00:00:00:00:fe
    ports:                     # required: switch port -> properties
      1: {speed: 10G, cable_m: 10, mac: 02:00:00:00:01:01, mtu: 1500}
    hosts:                     # host -> where it is; used for routes and by scenarios
      h1: {port: 1, mac: 02:00:00:00:00:01, ip: 10.0.0.1, qps: [{qpn: 0x101, peer: h3, peer_qpn: 0x301}]}
    routing: l3                # l3: /32 routes via the router MAC; l2: bridge on host MACs
    routes: [{prefix: 10.9.0.0/16, port: 2, dmac: 02:00:00:00:09:01}]
    classes: {dscp: {26: 3, 48: 6}, pcp: {3: 3, 6: 6}}
    ecn:
      profiles: {dcqcn: {kmin: 5KB, kmax: 200KB, pmax: 0.01}}
      apply: [{ports: all, class: 3, profile: dcqcn}]
    pfc:
      classes: [3]
      xoff: 40 pkts            # per (ingress port, class) occupancy
      xon: 20 pkts
      quanta: 65535
      refresh_us: 100
      headroom: 20KB           # buffer kept above XOFF for what is still in flight
      response_bits: 30720     # the peer's reaction delay; default: 802.3 Annex 31B for the port speed
    buffer: {packets: 1024}    # egress queue capacity per (port, class) in the TM
    cnp: {mode: host, class: 6, dscp: 48, interval_us: 50}   # mode: host | switch
    faults: [{kind: every_nth, host: h3, qpn: 0x301, n: 1000}, {kind: psn, host: h3, qpn: 0x301, psn: 7}]
    mirror: [{session: 10, port: 9, match: {dst: h3, qpn: 0x301}, truncate: 128}]

`check(cfg)` returns findings (errors and the arithmetic it did); `compile_config(cfg, info)`
returns the entities for `Target.write` and the traffic-manager settings.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from controller.inputs import parse_yaml, read_text, yaml_error_where
from controller.targets.base import (
    CloneSession,
    DefaultAction,
    Entity,
    Exact,
    Lpm,
    RegisterCell,
    TableEntry,
    Ternary,
)

# RoCEv2 per-packet overhead around the payload (RETH counted: worst case for a packet
# with payload; AtomicETH is longer but an atomic carries none).
ETH_HDR = 14
ROCE_HDRS_V4 = 20 + 8 + 12 + 16 + 4  # IPv4, UDP, BTH, RETH, ICRC
ROCE_HDRS_V6 = 40 + 8 + 12 + 16 + 4  # IPv6, UDP, BTH, RETH, ICRC
ROCE_HDRS = ROCE_HDRS_V4
PFC_FRAME = 64
WIRE_GAP = 8 + 12  # preamble + SFD, inter-frame gap: each frame holds the wire this much longer
PROPAGATION_NS_PER_M = 5.0  # light in fibre/copper: ~2e8 m/s
# The longest a peer may take to act on a received pause, in bit times, by port speed
# (IEEE 802.3 Annex 31B: 60 pause quanta at 10G, 80 at 25G, 118 at 40G, 394 at 100G,
# 905 at 400G; 1 quantum = 512 bit times). Mellanox's headroom note rounds the 10G+ figure
# to "3840 bytes" -- bytes, not bits.
RESPONSE_BITS_BY_SPEED = {
    1e9: 2 * 512,
    10e9: 60 * 512,
    25e9: 80 * 512,
    40e9: 118 * 512,
    100e9: 394 * 512,
    400e9: 905 * 512,
}


def default_response_bits(speed_bps: float) -> int:
    """802.3's bound for the listed speed at or above `speed_bps` (conservative between
    listed speeds); above 400G the 400G time, scaled to the faster bit clock."""
    for speed, bits in sorted(RESPONSE_BITS_BY_SPEED.items()):
        if speed_bps <= speed:
            return bits
    return math.ceil(RESPONSE_BITS_BY_SPEED[400e9] * speed_bps / 400e9)


# -------------------------------------------------------------------- units
# (controller/units.py; imported here, where the rest of the project has always found them)
from controller.units import (  # noqa: E402
    MAX_CABLE_M,
    ConfigError,
    Size,
    parse_size,
    parse_speed,
)

__all__ = ["MAX_CABLE_M", "ConfigError", "Size", "parse_size", "parse_speed"]


def fmt_bytes(n: float) -> str:
    return f"{n / 1000:.1f} KB" if n >= 1000 else f"{n:.0f} B"


# -------------------------------------------------------------------- model


@dataclass
class PortCfg:
    port: int
    speed: float = 10e9
    mtu: int = 1500
    cable_m: float = 2.0
    mac: str = ""


@dataclass
class QpCfg:
    qpn: int
    peer: str
    peer_qpn: int


@dataclass
class HostCfg:
    name: str
    port: int
    mac: str
    ip: str
    qps: list[QpCfg] = field(default_factory=list)


@dataclass
class EcnProfile:
    name: str
    kmin: Size
    kmax: Size
    pmax: float
    drop_non_ect: bool = False


@dataclass
class PfcCfg:
    classes: list[int] = field(default_factory=list)
    xoff: Size = field(default_factory=lambda: Size(40, True))
    xon: Size = field(default_factory=lambda: Size(20, True))
    quanta: int = 0xFFFF
    refresh_us: int = 100
    headroom: Size | None = None
    response_bits: int | None = None  # None: default_response_bits(port speed)


@dataclass
class Config:
    path: str = "<config>"
    mtu: int = 1500
    roce_mtu: int = 1024
    router_mac: str = "02:00:00:00:00:fe"
    ports: dict[int, PortCfg] = field(default_factory=dict)
    hosts: dict[str, HostCfg] = field(default_factory=dict)
    routing: str = "l3"
    routes: list[dict] = field(default_factory=list)
    dscp_to_tc: dict[int, int] = field(default_factory=dict)
    pcp_to_tc: dict[int, int] = field(default_factory=dict)
    ecn_profiles: dict[str, EcnProfile] = field(default_factory=dict)
    ecn_apply: list[tuple[list[int], int, str]] = field(default_factory=list)
    pfc: PfcCfg = field(default_factory=PfcCfg)
    buffer_packets: int = 1024
    cnp_mode: str = "host"
    cnp_class: int = 6
    cnp_dscp: int = 48
    cnp_interval_us: int = 50
    faults: list[dict] = field(default_factory=list)
    mirror: list[dict] = field(default_factory=list)
    raw: dict = field(default_factory=dict)

    @property
    def ipv6(self) -> bool:
        """Some host speaks IPv6: its RoCE packets carry the 40-byte IPv6 header."""
        return any(":" in h.ip for h in self.hosts.values())

    @property
    def roce_hdrs(self) -> int:
        """IP + UDP + BTH + RETH + ICRC bytes of a full-size packet (the larger family)."""
        return ROCE_HDRS_V6 if self.ipv6 else ROCE_HDRS_V4

    @property
    def frame_bytes(self) -> int:
        """Bytes of one full-size RoCE data frame (the unit that converts sizes to packets)."""
        return self.roce_mtu + ETH_HDR + self.roce_hdrs

    def host_by_ip(self, ip: str) -> HostCfg | None:
        return next((h for h in self.hosts.values() if h.ip == ip), None)


# -------------------------------------------------------------------- parsing


def parse_config(
    data: dict, path: str = "<config>", lines: dict[str, int] | None = None
) -> tuple[Config, list[ConfigError]]:
    """Build a Config from parsed YAML through the schema (controller/schemas/switch.py);
    every problem found is returned (not just the first), and the Config holds what is left
    once the bad keys are taken out, so `check` still does its arithmetic on the rest.
    `lines` (key path -> line) puts `path:line:` before the keys it knows."""
    from controller.schemas import validate
    from controller.schemas.switch import SwitchConfig

    cfg = Config(path=path, raw=data)
    if not isinstance(data, dict):
        return cfg, [ConfigError("<top>", "the config must be a YAML mapping")]
    model, errors = validate(SwitchConfig, data, path, lines)
    if model is None:
        return cfg, errors
    m: SwitchConfig = model  # type: ignore[assignment]
    cfg.mtu, cfg.roce_mtu, cfg.router_mac = m.mtu, m.roce_mtu, m.router_mac
    for pn, p in m.ports.items():
        cfg.ports[pn] = PortCfg(
            pn,
            p.speed,
            p.mtu if p.mtu is not None else m.mtu,
            p.cable_m,
            p.mac or f"02:00:00:00:ff:{pn & 0xFF:02x}",
        )
    for name, h in m.hosts.items():
        cfg.hosts[name] = HostCfg(
            name, h.port, h.mac, h.ip, [QpCfg(q.qpn, q.peer, q.peer_qpn) for q in h.qps]
        )
    cfg.routing = m.routing
    cfg.routes = [r.model_dump() for r in m.routes]
    cfg.dscp_to_tc, cfg.pcp_to_tc = dict(m.classes.dscp), dict(m.classes.pcp)
    for name, prof in m.ecn.profiles.items():
        cfg.ecn_profiles[name] = EcnProfile(
            name, prof.kmin, prof.kmax, prof.pmax, prof.drop_non_ect
        )
    for i, a in enumerate(m.ecn.apply):
        if a.profile not in cfg.ecn_profiles and not any(
            e.key.endswith(f"ecn.profiles.{a.profile}") or f"ecn.profiles.{a.profile}." in e.key
            for e in errors
        ):
            errors.append(
                ConfigError(f"ecn.apply[{i}].profile", f"no ECN profile named {a.profile!r}")
            )
        cfg.ecn_apply.append(
            (sorted(cfg.ports) if a.ports == "all" else list(a.ports), a.class_, a.profile)
        )
    if m.pfc is not None:
        cfg.pfc = PfcCfg(
            list(m.pfc.classes),
            m.pfc.xoff,
            m.pfc.xon,
            m.pfc.quanta,
            m.pfc.refresh_us,
            m.pfc.headroom,
            m.pfc.response_bits,
        )
    cfg.buffer_packets = m.buffer.packets
    cfg.cnp_mode, cfg.cnp_class = m.cnp.mode, m.cnp.class_
    cfg.cnp_dscp, cfg.cnp_interval_us = m.cnp.dscp, m.cnp.interval_us
    cfg.faults = [f.model_dump(exclude_none=True) for f in m.faults]
    cfg.mirror = [
        {**x.model_dump(exclude={"match"}), "match": x.match.model_dump(exclude_none=True)}
        for x in m.mirror
    ]
    return cfg, errors


def load_yaml(path: str | Path) -> dict:
    """Read (bounded: controller.inputs) and parse a YAML file. A path that is not a readable
    file raises InputError; syntax errors and the loader's limits (aliases, nesting, huge
    integers) become ConfigError with file:line:column."""
    return load_yaml_lines(path)[0]


def load_yaml_lines(path: str | Path) -> tuple[dict, dict[str, int]]:
    """load_yaml, and each key path's line (for errors that say where)."""
    from controller.schemas import key_lines

    text = read_text(path)
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        where, problem = yaml_error_where(exc, path)
        raise ConfigError(where, problem) from None
    return (data if data is not None else {}), key_lines(text)


def load_config(path: str | Path) -> Config:
    """Load and parse; raises the first ConfigError (use `check` to see them all)."""
    data, lines = load_yaml_lines(path)
    cfg, errors = parse_config(data, str(path), lines)
    if errors:
        raise errors[0]
    return cfg


# -------------------------------------------------------------------- checks


@dataclass
class Finding:
    level: str  # "error" | "ok" | "info"
    key: str
    message: str
    arithmetic: list[str] = field(default_factory=list)
    where: str = ""  # path:line of the key, when the file's text was at hand

    def __str__(self) -> str:
        head = f"{self.level.upper():5} {self.key}: {self.message}"
        if self.where:
            head += f"  ({self.where})"
        return "\n".join([head] + [f"        {line}" for line in self.arithmetic])


def headroom_needed(
    speed_bps: float, cable_m: float, mtu: int, response_bits: int | None = None
) -> tuple[int, list[str]]:
    """Bytes that can still arrive after the switch decides to pause (802.1Qbb annex O
    reasoning): the frame the switch is sending when it decides (it must finish before the
    PFC frame leaves), the PFC frame itself, the round trip on the cable, the peer's
    response time, and the frame the peer is sending when it acts on the pause."""
    source = "pfc.response_bits"
    if response_bits is None:
        response_bits = default_response_bits(speed_bps)
        source = f"802.3 Annex 31B at {speed_bps / 1e9:g} Gb/s"
    cable_ns = cable_m * PROPAGATION_NS_PER_M
    cable_bytes = math.ceil(2 * cable_ns * speed_bps / 8e9)
    resp_bytes = math.ceil(response_bits / 8)
    frame = mtu + ETH_HDR + 4 + WIRE_GAP  # largest frame with FCS, on the wire
    pfc = PFC_FRAME + WIRE_GAP
    total = frame + pfc + cable_bytes + resp_bytes + frame
    lines = [
        f"largest frame being sent by the switch  {frame} B  (MTU {mtu} + 14 + FCS 4 + "
        f"preamble/IFG {WIRE_GAP})",
        f"+ the PFC frame                        {pfc} B  (64 + preamble/IFG {WIRE_GAP})",
        f"+ cable round trip 2 x {cable_m:g} m x {PROPAGATION_NS_PER_M:g} ns/m = {2 * cable_ns:g} ns"
        f" at {speed_bps / 1e9:g} Gb/s   {cable_bytes} B",
        f"+ peer response {response_bits} bit times ({source})   {resp_bytes} B",
        f"+ largest frame the peer is sending     {frame} B",
        f"= {total} B needed",
    ]
    return total, lines


def check(cfg: Config, parse_errors: list[ConfigError] | None = None) -> list[Finding]:
    """Every error (and the arithmetic behind the buffer checks)."""
    out = [
        Finding("error", e.key, e.message, where=getattr(e, "where", ""))
        for e in parse_errors or []
    ]

    def err(key: str, msg: str, arith: list[str] | None = None) -> None:
        out.append(Finding("error", key, msg, arith or []))

    # MTU: one MTU on every port, and the RoCE MTU must fit in it
    mtus = {p.port: p.mtu for p in cfg.ports.values()}
    if len(set(mtus.values())) > 1:
        common = max(set(mtus.values()), key=list(mtus.values()).count)
        for port, m in sorted(mtus.items()):
            if m != common:
                err(
                    f"ports.{port}.mtu",
                    f"MTU {m} differs from the other ports' {common}: "
                    "a lossless RoCE fabric needs one MTU end to end",
                )
    fam = "IPv6" if cfg.ipv6 else "IPv4"
    for port, m in sorted(mtus.items()):
        need = cfg.roce_mtu + cfg.roce_hdrs
        if need > m:
            err(
                f"ports.{port}.mtu",
                f"roce_mtu {cfg.roce_mtu} + {cfg.roce_hdrs} B of "
                f"{fam}/UDP/BTH/RETH/ICRC = {need} B does not fit in MTU {m}",
            )
    if cfg.roce_mtu not in (256, 512, 1024, 2048, 4096):
        err("roce_mtu", f"{cfg.roce_mtu} is not an InfiniBand MTU (256, 512, 1024, 2048, 4096)")
    # hosts
    seen_ip: dict[str, str] = {}
    seen_mac: dict[str, str] = {}
    for h in cfg.hosts.values():
        if h.port not in cfg.ports:
            err(f"hosts.{h.name}.port", f"port {h.port} is not in ports")
        if h.ip in seen_ip:
            err(f"hosts.{h.name}.ip", f"{h.ip} already used by {seen_ip[h.ip]}")
        seen_ip[h.ip] = h.name
        if h.mac in seen_mac:
            err(f"hosts.{h.name}.mac", f"{h.mac} already used by {seen_mac[h.mac]}")
        seen_mac[h.mac] = h.name
        for i, q in enumerate(h.qps):
            peer = cfg.hosts.get(q.peer)
            if peer is None:
                err(f"hosts.{h.name}.qps[{i}].peer", f"no host named {q.peer!r}")
            elif not any(pq.qpn == q.peer_qpn and pq.peer_qpn == q.qpn for pq in peer.qps):
                err(
                    f"hosts.{h.name}.qps[{i}]",
                    f"{q.peer} has no QP {q.peer_qpn:#x} connected back to {h.name} QP {q.qpn:#x}",
                )
    # ECN
    fb = cfg.frame_bytes
    for name, prof in cfg.ecn_profiles.items():
        kmin, kmax = prof.kmin.to_packets(fb), prof.kmax.to_packets(fb)
        arith = [
            f"kmin {prof.kmin} -> {kmin} pkts, kmax {prof.kmax} -> {kmax} pkts "
            f"(frames of {fb} B: roce_mtu {cfg.roce_mtu} + {ETH_HDR + cfg.roce_hdrs} B "
            "headers)"
        ]
        if kmin >= kmax:
            err(
                f"ecn.profiles.{name}.kmin",
                f"Kmin must be < Kmax ({kmin} >= {kmax} packets)",
                arith,
            )
        elif kmax > cfg.buffer_packets:
            err(
                f"ecn.profiles.{name}.kmax",
                f"Kmax {kmax} pkts exceeds the queue capacity "
                f"buffer.packets = {cfg.buffer_packets}: the queue drops before it marks",
                arith,
            )
        else:
            out.append(Finding("ok", f"ecn.profiles.{name}", "Kmin < Kmax <= buffer", arith))
    # PFC
    pfc = cfg.pfc
    if pfc.classes:
        xoff, xon = pfc.xoff.to_packets(fb), pfc.xon.to_packets(fb)
        if xon >= xoff:
            err(
                "pfc.xon",
                f"XON must be < XOFF ({pfc.xon} = {xon} pkts >= {pfc.xoff} = {xoff} pkts)",
            )
        for port in sorted(cfg.ports):
            p = cfg.ports[port]
            need, lines = headroom_needed(p.speed, p.cable_m, p.mtu, pfc.response_bits)
            need_pkts = math.ceil(need / fb)
            lines.append(f"= {need_pkts} pkts of {fb} B")
            for tc in pfc.classes:
                key = f"pfc.headroom (port {port}, class {tc})"
                if pfc.headroom is None:
                    if any(e.key == "pfc.headroom" for e in parse_errors or []):
                        continue  # given but refused: said once, above
                    err(key, f"no pfc.headroom given: set it to at least {fmt_bytes(need)}", lines)
                    continue
                have = pfc.headroom.to_bytes(fb)
                if have < need:
                    err(key, f"headroom {fmt_bytes(have)} < {fmt_bytes(need)} needed", lines)
                else:
                    out.append(
                        Finding(
                            "ok",
                            key,
                            f"headroom {fmt_bytes(have)} >= {fmt_bytes(need)} needed",
                            lines,
                        )
                    )
        # lossless needs the egress queue to hold what every other port may send before pausing.
        # roce_switch.p4 compares XOFF with the egress queue's depth (p4src/README.md, "PFC
        # generation"): the queue reaches XOFF once, then each ingress port may still land up
        # to its headroom before its pause takes effect.
        if pfc.headroom is not None and cfg.ports:
            head = pfc.headroom.to_packets(fb)
            fan_in = max(1, len(cfg.ports) - 1)
            need_buf = xoff + fan_in * head
            arith = [
                f"XOFF {xoff} + {fan_in} ingress ports x headroom {head} pkts = {need_buf} pkts"
            ]
            if cfg.buffer_packets < need_buf:
                err(
                    "buffer.packets",
                    f"{cfg.buffer_packets} pkts cannot absorb a {fan_in}:1 "
                    f"incast up to XOFF plus headroom ({need_buf} pkts): PFC would not be lossless",
                    arith,
                )
            else:
                out.append(
                    Finding(
                        "ok", "buffer.packets", f"{cfg.buffer_packets} >= {need_buf} pkts", arith
                    )
                )
    if cfg.cnp_mode == "switch" and cfg.cnp_interval_us <= 0:
        err("cnp.interval_us", "must be > 0 with the switch NP (one CNP per flow per interval)")
    for i, f in enumerate(cfg.faults):
        key = f"faults[{i}]"
        if not isinstance(f, dict):
            err(key, "expected a mapping")
            continue
        if f.get("kind") not in ("every_nth", "psn"):
            err(f"{key}.kind", f"must be every_nth or psn, got {f.get('kind')!r}")
        if not isinstance(f.get("host"), str) or f["host"] not in cfg.hosts:
            err(f"{key}.host", f"no host named {f.get('host')!r}")
        if f.get("kind") == "every_nth" and not (isinstance(f.get("n"), int) and f["n"] >= 1):
            err(f"{key}.n", "must be an integer >= 1")
    for i, m in enumerate(cfg.mirror):
        key = f"mirror[{i}]"
        if not isinstance(m, dict) or "port" not in m or "session" not in m:
            err(key, "needs session and port")
            continue
        if (
            not isinstance(m["port"], int)
            or isinstance(m["port"], bool)
            or not 0 <= m["port"] <= 510
        ):
            err(f"{key}.port", f"expected a port number 0..510, got {str(m['port'])[:40]!r}")
        elif m["port"] in {h.port for h in cfg.hosts.values()}:
            err(f"{key}.port", f"port {m['port']} has a host on it: mirror to a free port")
        match = m.get("match", {}) or {}
        if not isinstance(match, dict):
            err(f"{key}.match", "expected a mapping")
            continue
        for k in ("src", "dst"):
            if k in match and (not isinstance(match[k], str) or match[k] not in cfg.hosts):
                err(f"{key}.match.{k}", f"no host named {match[k]!r}")
        if "qpn" in match and not (isinstance(match["qpn"], int) and 0 < match["qpn"] < 1 << 24):
            err(f"{key}.match.qpn", f"must be a 24-bit QP number, got {match['qpn']!r}")
        for k in match:
            if k not in ("src", "dst", "qpn"):
                err(f"{key}.match.{k}", "unknown match key (src, dst, qpn)")
    for i, r in enumerate(cfg.routes):
        key = f"routes[{i}]"
        try:
            ipaddress.ip_network(str(r.get("prefix")), strict=False)
        except (ValueError, AttributeError):
            err(
                f"{key}.prefix",
                f"not an IP prefix: {r.get('prefix') if isinstance(r, dict) else r!r}",
            )
            continue
        if not isinstance(r.get("port"), int) or r["port"] not in cfg.ports:
            err(f"{key}.port", f"port {r.get('port')} is not in ports")
    return out


# -------------------------------------------------------------------- compile


@dataclass
class Compiled:
    entities: list[Entity]
    port_speeds: dict[int, float]
    queue_capacity: dict[tuple[int, int], int]
    notes: list[str] = field(default_factory=list)


def _ip_int(ip: str) -> int:
    return int(ipaddress.ip_address(ip))


def _mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


class Names:
    """Fully qualified control-plane names of roce_switch.p4 (see p4src/README.md).
    Resolved against the loaded program by suffix, so a renamed control still works."""

    def __init__(self, tables: list[str], actions: list[str], registers: list[str]):
        self.tables, self.actions, self.registers = tables, actions, registers

    @staticmethod
    def _find(kind: str, names: list[str], suffix: str) -> str:
        hits = [n for n in names if n == suffix or n.endswith("." + suffix)]
        if len(hits) != 1:
            raise ConfigError(
                "program", f"the P4 program has {len(hits)} {kind}s named *{suffix} (expected one)"
            )
        return hits[0]

    def table(self, s: str) -> str:
        return self._find("table", self.tables, s)

    def action(self, s: str) -> str:
        return self._find("action", self.actions, s)

    def register(self, s: str) -> str:
        return self._find("register", self.registers, s)

    def has_table(self, s: str) -> bool:
        return any(n == s or n.endswith("." + s) for n in self.tables)


PFC_SESSION_BASE = 256
CNP_SESSION_BASE = 768


def compile_config(cfg: Config, names: Names, cpu_port: int = 255) -> Compiled:
    """Entities (name-level) that program roce_switch.p4 as the config says."""
    ents: list[Entity] = []
    notes: list[str] = []
    T, A = names.table, names.action
    fb = cfg.frame_bytes
    # forwarding
    if cfg.routing == "l3":
        ents.append(
            TableEntry(
                T("router_mac"),
                {"hdr.ethernet.dst": Exact(_mac_int(cfg.router_mac))},
                A("set_router_mac"),
            )
        )
    nh = 0
    for h in sorted(cfg.hosts.values(), key=lambda h: h.name):
        if cfg.routing == "l2":
            ents.append(
                TableEntry(
                    T("l2_fwd"),
                    {"hdr.ethernet.dst": Exact(_mac_int(h.mac))},
                    A("l2_forward"),
                    {"port": h.port},
                )
            )
            continue
        nh += 1
        ents.append(
            TableEntry(
                T("nexthop"),
                {"meta.nhop_id": Exact(nh)},
                A("set_nexthop"),
                {"port": h.port, "smac": _mac_int(cfg.ports[h.port].mac), "dmac": _mac_int(h.mac)},
            )
        )
        ip = ipaddress.ip_address(h.ip)
        table = T("ipv4_lpm") if ip.version == 4 else T("ipv6_lpm")
        key = "hdr.ipv4.dst" if ip.version == 4 else "hdr.ipv6.dst"
        ents.append(
            TableEntry(table, {key: Lpm(int(ip), ip.max_prefixlen)}, A("set_nhop"), {"nhop_id": nh})
        )
    for r in cfg.routes:
        nh += 1
        net = ipaddress.ip_network(str(r["prefix"]), strict=False)
        ents.append(
            TableEntry(
                T("nexthop"),
                {"meta.nhop_id": Exact(nh)},
                A("set_nexthop"),
                {
                    "port": r["port"],
                    "smac": _mac_int(cfg.ports[r["port"]].mac),
                    "dmac": _mac_int(r.get("dmac", "02:00:00:00:00:00")),
                },
            )
        )
        table, key = (
            (T("ipv4_lpm"), "hdr.ipv4.dst") if net.version == 4 else (T("ipv6_lpm"), "hdr.ipv6.dst")
        )
        ents.append(
            TableEntry(
                table,
                {key: Lpm(int(net.network_address), net.prefixlen)},
                A("set_nhop"),
                {"nhop_id": nh},
            )
        )
    # classification
    for d, tc in sorted(cfg.dscp_to_tc.items()):
        ents.append(
            TableEntry(T("dscp_to_tc"), {"meta.dscp": Exact(d)}, A("set_tc_from_dscp"), {"tc": tc})
        )
    for p, tc in sorted(cfg.pcp_to_tc.items()):
        ents.append(TableEntry(T("pcp_to_tc"), {"hdr.vlan.pcp": Exact(p)}, A("set_tc"), {"tc": tc}))
    # ECN
    for ports, tc, prof_name in cfg.ecn_apply:
        prof = cfg.ecn_profiles.get(prof_name)
        if prof is None:
            continue
        params = {
            "kmin": prof.kmin.to_packets(fb),
            "kmax": prof.kmax.to_packets(fb),
            "pmax": min(round(prof.pmax * (1 << 24)), 1 << 24),
            "drop_non_ect": int(prof.drop_non_ect),
        }
        for port in ports:
            ents.append(
                TableEntry(
                    T("ecn_profile"),
                    {"standard_metadata.egress_port": Exact(port), "meta.tc": Exact(tc)},
                    A("set_ecn_profile"),
                    params,
                )
            )
    # MTU: the data plane drops what a port's MTU cannot carry (DROP_MTU); a program
    # without the table (an older build) simply does not enforce it
    if names.has_table("port_mtu"):
        for port in sorted(cfg.ports):
            ents.append(
                TableEntry(
                    T("port_mtu"),
                    {"standard_metadata.egress_port": Exact(port)},
                    A("set_port_mtu"),
                    {"mtu_bytes": cfg.ports[port].mtu},
                )
            )
    # PFC: thresholds per (ingress port, class), the port MACs, one clone session per port
    for port in sorted(cfg.ports):
        ents.append(
            TableEntry(
                T("port_mac"),
                {"standard_metadata.egress_port": Exact(port)},
                A("set_port_mac"),
                {"mac": _mac_int(cfg.ports[port].mac)},
            )
        )
        ents.append(CloneSession(PFC_SESSION_BASE + port, (port,), 0))
        if cfg.cnp_mode == "switch":
            ents.append(CloneSession(CNP_SESSION_BASE + port, (port,), 0))
        for tc in cfg.pfc.classes:
            ents.append(
                TableEntry(
                    T("pfc_thresholds"),
                    {"standard_metadata.ingress_port": Exact(port), "meta.tc": Exact(tc)},
                    A("set_pfc_thresholds"),
                    {
                        "xoff": cfg.pfc.xoff.to_packets(fb),
                        "xon": cfg.pfc.xon.to_packets(fb),
                        "quanta": cfg.pfc.quanta,
                        "refresh_us": cfg.pfc.refresh_us,
                    },
                )
            )
    # CNP: the class CNPs travel in, and (mode switch) the NP emulation
    ents.append(
        DefaultAction(
            T("cnp_config"),
            A("set_cnp_config"),
            {
                "cnp_tc": cfg.cnp_class,
                "np_enable": int(cfg.cnp_mode == "switch"),
                "interval_us": cfg.cnp_interval_us,
                "cnp_dscp": cfg.cnp_dscp,
            },
        )
    )
    if cfg.cnp_mode == "switch":
        # NP emulation: CE-marked data leaving toward a host port makes the switch send a
        # CNP to the data's sender QP, one per flow (a register slot each) per interval.
        for port in sorted({h.port for h in cfg.hosts.values()}):
            ents.append(
                TableEntry(
                    T("host_port"),
                    {"standard_metadata.egress_port": Exact(port)},
                    A("set_host_port"),
                )
            )
        slot = 0
        for h in sorted(cfg.hosts.values(), key=lambda h: h.name):
            for q in h.qps:
                peer = cfg.hosts.get(q.peer)
                if peer is None:
                    continue
                # data from h (QP q.qpn) to peer (QP q.peer_qpn): the CNP goes to q.qpn
                ents.append(
                    TableEntry(
                        T("cnp_qp"),
                        {
                            "meta.ip_src": Exact(_ip_int(h.ip)),
                            "meta.ip_dst": Exact(_ip_int(peer.ip)),
                            "hdr.bth.dqpn": Exact(q.peer_qpn),
                        },
                        A("set_cnp_target"),
                        {"dqpn": q.qpn, "slot": slot},
                    )
                )
                slot += 1
    # faults
    slot = 0
    for f in cfg.faults:
        h = cfg.hosts[f["host"]]
        qpn = int(f.get("qpn", 0))
        if f["kind"] == "psn":
            ents.append(
                TableEntry(
                    T("fault_psn"),
                    {
                        "meta.ip_dst": Exact(_ip_int(h.ip)),
                        "hdr.bth.dqpn": Exact(qpn),
                        "hdr.bth.psn": Exact(int(f["psn"])),
                    },
                    A("drop_psn"),
                )
            )
        else:
            ents.append(
                TableEntry(
                    T("fault_every_nth"),
                    {"meta.ip_dst": Exact(_ip_int(h.ip)), "hdr.bth.dqpn": Exact(qpn)},
                    A("drop_every_nth"),
                    {"n": int(f["n"]), "slot": slot},
                )
            )
            ents.append(RegisterCell(names.register("fault_count"), slot, 0))
            slot += 1
    # mirror
    for m in cfg.mirror:
        ents.append(CloneSession(int(m["session"]), (int(m["port"]),), int(m.get("truncate", 0))))
        match = m.get("match", {}) or {}
        key: dict = {}
        full = (1 << 128) - 1
        if "src" in match:
            key["meta.ip_src"] = Ternary(_ip_int(cfg.hosts[match["src"]].ip), full)
        if "dst" in match:
            key["meta.ip_dst"] = Ternary(_ip_int(cfg.hosts[match["dst"]].ip), full)
        if "qpn" in match:  # RoCE only: the destination QP
            key["meta.bth_dqpn"] = Ternary(int(match["qpn"]), 0xFFFFFF)
        ents.append(
            TableEntry(
                T("mirror_flow"),
                key,
                A("mirror_to"),
                {"session": int(m["session"])},
                priority=int(m.get("priority", 1)),
            )
        )
    speeds = {p.port: p.speed for p in cfg.ports.values()}
    caps = {(p, tc): cfg.buffer_packets for p in cfg.ports for tc in range(8)}
    return Compiled(ents, speeds, caps, notes)


def names_from_target(target) -> Names:
    """The program's table/action/register names, from any target."""
    n = target.entity_names()
    return Names(n["tables"], n["actions"], n["registers"])


def apply_config(cfg: Config, target) -> Compiled:
    """Program a target from a config: entities, then (where the target has them) the
    traffic-manager port speeds and queue capacities. Idempotent: what the switch already
    has (from an earlier apply) is modified to the config's version, not refused."""
    from controller.targets.base import TargetError

    comp = compile_config(cfg, names_from_target(target))
    target.write(comp.entities, modify_existing=True)
    for port, bps in comp.port_speeds.items():
        try:
            target.set_port_speed(port, bps)
        except TargetError as exc:
            if exc.code != "UNIMPLEMENTED":
                raise  # a real refusal (bad port, bad rate) is an error, not a note
            comp.notes.append("port speeds are the device's own (not settable over P4Runtime)")
            break
    for (port, tc), cap in comp.queue_capacity.items():
        try:
            target.set_queue_capacity(port, tc, cap)
        except TargetError as exc:
            if exc.code != "UNIMPLEMENTED":
                raise
            comp.notes.append("queue capacities are the device's own")
            break
    return comp
