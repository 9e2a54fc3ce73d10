"""Telemetry of a whole fabric: each switch's roce_switch.p4 counters per (port, class)
(controller.telemetry, read through the Target interface) with the PFC watchdog's counters
of that (port, class) added (`pfcwd_detected`, `pfcwd_restored`, `pfcwd_ignored`, `pfcwd_dropped`)."""

from __future__ import annotations

from controller.telemetry import from_counters
from controller.telemetry import read as read_counters

from .engine import Fabric
from .watchdog import PfcWatchdog

WD_KEYS = ("detected", "restored", "ignored", "dropped")


def fabric_telemetry(fab: Fabric, watchdog: PfcWatchdog | None = None) -> dict[str, dict]:
    """switch -> {"per_port_class": [...], "drops": [...], "pause_rx": [...]} (as
    Telemetry.as_json), every row with the watchdog's counters (0 without a watchdog)."""
    out: dict[str, dict] = {}
    for sw, tgt in fab.targets.items():
        ports = sorted(fab.topo.switch_ports(sw))
        t = from_counters(read_counters(tgt, ports))
        wd = (
            {}
            if watchdog is None
            else {(p, c): v for (s, p, c), v in watchdog.stats.by_queue.items() if s == sw}
        )
        for key in wd:  # a queue the watchdog acted on but the program counted nothing for
            t.rows.setdefault(key, {})
        js = t.as_json()
        for row in js["per_port_class"]:
            cnt = wd.get((row["port"], row["class"]), {})
            for k in WD_KEYS:
                row[f"pfcwd_{k}"] = cnt.get(k, 0)
        out[sw] = js
    return out
