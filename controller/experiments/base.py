"""What an experiment is, and the small fabric they run on.

An experiment asks one question of the RoCE primer, runs hosts against the in-process p4sim
switch in virtual time, and answers it with measured figures and verdicts. Each is one
function registered with `@experiment`; its parameters have defaults sized for CI (seconds),
and a test runs a broken variant (parameters that break the physics) to see a verdict fail.
"""

from __future__ import annotations

import copy
import json
import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config import ConfigError, apply_config, check, parse_config
from controller.hosts.host import Host, HostSpec
from controller.scenarios.engine import Engine
from controller.targets.p4sim import P4SimTarget
from controller.targets.program import DEFAULT_PROGRAM


@dataclass
class Verdict:
    name: str
    ok: bool
    detail: str


@dataclass
class Result:
    name: str
    question: str
    answer: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    table: list[dict[str, Any]] = field(default_factory=list)  # one row per measured case
    data: dict[str, Any] = field(default_factory=dict)  # everything else for the JSON
    params: dict[str, Any] = field(default_factory=dict)
    plot: Callable[[Any, Result], None] | None = None  # draws on a matplotlib Axes

    @property
    def ok(self) -> bool:
        return bool(self.verdicts) and all(v.ok for v in self.verdicts)

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.verdicts.append(Verdict(name, bool(ok), detail))

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "question": self.question,
            "answer": self.answer,
            "ok": self.ok,
            "params": self.params,
            "verdicts": [v.__dict__ for v in self.verdicts],
            "table": self.table,
            "data": self.data,
        }


@dataclass
class Experiment:
    name: str
    question: str
    fn: Callable[..., Result]
    defaults: dict[str, Any]

    def run(self, **params: Any) -> Result:
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise ValueError(
                f"experiment {self.name}: unknown parameter(s) "
                f"{', '.join(sorted(unknown))} (known: {', '.join(self.defaults)})"
            )
        p = {**copy.deepcopy(self.defaults), **params}
        res = Result(self.name, self.question, params=p)
        self.fn(res, **p)
        return res


REGISTRY: dict[str, Experiment] = {}


def experiment(name: str, question: str, **defaults: Any):
    """Register `fn(result, **params)` as experiment `name`."""

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        if name in REGISTRY:
            raise ValueError(f"experiment {name} registered twice")
        REGISTRY[name] = Experiment(name, question, fn, defaults)  # type: ignore[arg-type]
        return fn

    return wrap


# -- the fabric -------------------------------------------------------------------------


@dataclass
class HostDef:
    name: str
    port: int
    ip: str
    mac: str


def host_defs(n: int, v6: bool = False, subnets: bool = False) -> list[HostDef]:
    """n hosts on ports 1..n; `subnets` puts each in its own /24 (routed, not bridged)."""
    out = []
    for i in range(1, n + 1):
        if v6:
            ip = f"fd00:{i if subnets else 0}::{i}"
        else:
            ip = f"10.0.{i if subnets else 0}.{i}"
        out.append(HostDef(f"h{i}", i, ip, f"02:00:00:00:00:{i:02x}"))
    return out


class Fabric:
    """One p4sim switch programmed from a config dict, hosts on its ports, an event loop.
    `loss(host, p, what, seed)` makes the host's link to the switch drop frames
    (Bernoulli, seeded); the link model is the engine's (speed, propagation)."""

    def __init__(
        self,
        hosts: list[HostDef],
        switch: dict[str, Any] | None = None,
        speed_bps: float = 10e9,
        prop_ns: int = 1000,
        seed: int = 1,
        program: Path | None = None,
        check_config: bool = True,
        **nic: Any,
    ):
        raw: dict[str, Any] = copy.deepcopy(switch or {})
        raw.setdefault(
            "ports", {h.port: {"speed": f"{speed_bps / 1e9:g}G", "cable_m": 2} for h in hosts}
        )
        raw.setdefault("hosts", {h.name: {"port": h.port, "mac": h.mac, "ip": h.ip} for h in hosts})
        cfg, errors = parse_config(raw, "<experiment>")
        # (check_config=False: program what `rocelab check` would refuse, to watch it fail)
        bad = [
            f
            for f in check(cfg, errors)
            if f.level == "error" and (check_config or f.key in {e.key for e in errors})
        ]
        if bad:
            raise ConfigError(bad[0].key, bad[0].message)
        self.cfg = cfg
        self.target = P4SimTarget(program or DEFAULT_PROGRAM, seed=seed)
        self.compiled = apply_config(cfg, self.target)
        self.eng = Engine(self.target)
        self.hosts: dict[str, Host] = {}
        for h in hosts:
            spec = HostSpec(
                h.name,
                h.mac,
                h.ip,
                h.port,
                link_bps=speed_bps,
                prop_ns=prop_ns,
                mtu=cfg.roce_mtu,
                gateway_mac=cfg.router_mac if cfg.routing == "l3" else None,
                **nic,
            )
            host = Host(spec, self.eng)
            self.hosts[h.name] = host
            self.eng.attach(host, h.port, prop_ns)
        self._qpn = 0x100

    def connect(self, a: str, b: str, **qp: Any) -> tuple[int, int]:
        """An RC connection a <-> b; returns (a's QPN, b's QPN)."""
        self._qpn += 1
        qa, qb = self._qpn, self._qpn + 0x1000
        ha, hb = self.hosts[a], self.hosts[b]
        ha.add_qp(qa, qb, hb.spec.ip, hb.spec.mac, **qp)
        hb.add_qp(qb, qa, ha.spec.ip, ha.spec.mac, **qp)
        return qa, qb

    def loss(
        self, host: str, p: float, seed: int, keep: Callable[[bytes], bool] | None = None
    ) -> dict[str, int]:
        """Drop each frame `host` sends with probability p (frames `keep` spares are never
        dropped). Returns live counts {sent, dropped}."""
        h = self.hosts[host]
        inner = h.transmit
        rng = random.Random(seed)
        stats = {"sent": 0, "dropped": 0}

        def transmit(frame: bytes, t_end: int) -> None:
            stats["sent"] += 1
            if (keep is None or not keep(frame)) and rng.random() < p:
                stats["dropped"] += 1
                return
            inner(frame, t_end)

        h.transmit = transmit
        return stats

    def now(self) -> int:
        return self.eng.now()

    def run_until(self, done: Callable[[], bool], limit_ns: int) -> bool:
        return self.eng.run_until(done, limit_ns, step_ns=20_000)


# -- output -----------------------------------------------------------------------------


def write_outputs(res: Result, out: str | Path) -> list[str]:
    """<out>/<name>.json and <name>.png (the plot, when the experiment draws one)."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    files = []
    (d / f"{res.name}.json").write_text(json.dumps(res.as_json(), indent=2, default=str) + "\n")
    files.append(f"{res.name}.json")
    if res.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        res.plot(ax, res)
        ax.set_title(textwrap.fill(f"{res.name}: {res.question}", 90), fontsize=8)
        fig.tight_layout()
        fig.savefig(d / f"{res.name}.png", dpi=100)
        plt.close(fig)
        files.append(f"{res.name}.png")
    return files


def format_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    cells = [[_fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def summary_text(res: Result) -> str:
    lines = [f"== {res.name}", f"question: {res.question}", ""]
    if res.table:
        lines += [format_table(res.table), ""]
    lines.append(f"answer: {res.answer}")
    for v in res.verdicts:
        lines.append(f"  [{'PASS' if v.ok else 'FAIL'}] {v.name}: {v.detail}")
    lines.append(f"verdict: {'PASS' if res.ok else 'FAIL'}")
    return "\n".join(lines)
