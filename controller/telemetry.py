"""roce_switch.p4's telemetry counters, per port and traffic class (p4src/README.md):
per-(port, class) arrays are indexed port * 8 + class, `drops` port * 16 + reason,
`pause_rx` and `rocev1_rx` by port."""

from __future__ import annotations

from dataclasses import dataclass, field

PER_CLASS = ("roce_rx", "roce_tx", "ecn_marked", "pfc_tx", "pfc_rx", "cnp_rx", "cnp_tx")
DROP_REASONS = {
    1: "no_route",
    2: "ttl",
    3: "l2_miss",
    4: "fault",
    5: "ecn_non_ect",
    6: "rocev1_l3",
    7: "mac_control",
    8: "malformed",
    9: "bad_checksum",
    10: "self_replica",
}


@dataclass
class Telemetry:
    rows: dict[tuple[int, int], dict[str, int]] = field(default_factory=dict)  # (port, class)
    drops: dict[int, dict[str, int]] = field(default_factory=dict)  # port -> reason -> packets
    pause_rx: dict[int, int] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "per_port_class": [
                {"port": p, "class": c, **v} for (p, c), v in sorted(self.rows.items())
            ],
            "drops": [{"port": p, **v} for p, v in sorted(self.drops.items())],
            "pause_rx": [{"port": p, "frames": n} for p, n in sorted(self.pause_rx.items())],
        }


def from_counters(counters: dict[str, list[tuple[int, int]]]) -> Telemetry:
    """Interpret the raw counter arrays (`Target.counters()`), keeping non-zero cells."""
    t = Telemetry()
    by_short = {name.rsplit(".", 1)[-1]: cells for name, cells in counters.items()}
    for short in PER_CLASS:
        for i, (packets, _bytes) in enumerate(by_short.get(short, [])):
            if packets:
                row = t.rows.setdefault((i >> 3, i & 7), dict.fromkeys(PER_CLASS, 0))
                row[short] = packets
    for i, (packets, _bytes) in enumerate(by_short.get("drops", [])):
        if packets:
            reason = DROP_REASONS.get(i & 15, f"reason{i & 15}")
            t.drops.setdefault(i >> 4, {})[reason] = packets
    for i, (packets, _bytes) in enumerate(by_short.get("pause_rx", [])):
        if packets:
            t.pause_rx[i] = packets
    return t


def format_table(t: Telemetry) -> str:
    from controller.text_table import table

    lines = []
    if t.rows:
        rows = [
            [str(p), str(c)] + [str(v[k]) for k in PER_CLASS]
            for (p, c), v in sorted(t.rows.items())
        ]
        lines.append(
            table(
                rows,
                [
                    "port",
                    "class",
                    "RoCE rx",
                    "RoCE tx",
                    "ECN-CE",
                    "PFC tx",
                    "PFC rx",
                    "CNP rx",
                    "CNP tx",
                ],
            )
        )
    else:
        lines.append("no RoCE, ECN, PFC or CNP activity counted")
    if t.drops:
        rows = [
            [str(p), ", ".join(f"{r} {n}" for r, n in sorted(v.items()))]
            for p, v in sorted(t.drops.items())
        ]
        lines.append("")
        lines.append(table(rows, ["port", "drops (reason packets)"]))
    else:
        lines.append("drops: none")
    if t.pause_rx:
        lines.append(
            "802.3x PAUSE received: "
            + ", ".join(f"port {p}: {n}" for p, n in sorted(t.pause_rx.items()))
        )
    return "\n".join(lines)


def read(target, ports: list[int] | None = None) -> dict[str, list[tuple[int, int]]]:
    """The telemetry counters as `Target.counters()` returns them; with `ports`, only the
    cells of those ports are read (the others stay zero): a handful of reads instead of
    every cell of every array."""
    if ports is None:
        return target.counters()
    from controller.targets.base import CounterQuery

    out: dict[str, list[tuple[int, int]]] = {}
    for name, size in target.counter_names():
        short = name.rsplit(".", 1)[-1]
        if short in PER_CLASS:
            idx = [p * 8 + c for p in ports for c in range(8)]
        elif short == "drops":
            idx = [p * 16 + r for p in ports for r in range(16)]
        else:
            idx = list(ports)
        cells = [(0, 0)] * size
        for i in idx:
            if 0 <= i < size:
                for cell in target.read(CounterQuery(name, i)):
                    cells[i] = (cell.packets, cell.bytes)
        out[name] = cells
    return out


def read_cells(target, name: str, indices: range | list[int]) -> list[tuple[int, int]]:
    """(packets, bytes) of the given cells of counter `name`, one read per cell: reading a
    whole 4096-cell counter over P4Runtime takes seconds, a few cells take milliseconds."""
    from controller.targets.base import CounterQuery

    out = []
    for i in indices:
        cells = target.read(CounterQuery(name, i))
        if not cells:  # a missing cell is not a zero: "0 drops" must not pass on no answer
            raise LookupError(f"{target.name}: counter {name} has no cell {i}")
        out.append((cells[0].packets, cells[0].bytes))
    return out


def port_cells(target, name: str, port: int, width: int = 8) -> list[tuple[int, int]]:
    """The cells of one port in a counter indexed port * width + class (or reason)."""
    return read_cells(target, name, range(port * width, (port + 1) * width))
