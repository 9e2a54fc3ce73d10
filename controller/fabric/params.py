"""The fabric scenarios' parameters: names, defaults and allowed values, in a module that
imports nothing heavy, so a sweep or a scenario file is checked before p4sim and the host
models load. `scenarios.SCENARIOS` pairs each with its run function."""

from __future__ import annotations

PARAMS: dict[str, dict[str, int]] = {
    "spreading": {"incast": 1, "dcqcn": 0, "duration_us": 1000, "seed": 0},
    "deadlock": {
        "flows": 4,
        "watchdog": 0,
        "duration_us": 400,
        "seed": 0,
        "detect_us": 100,
        "hosts": 1,
    },
    "spray": {
        "flows": 3,
        "spray": 0,
        "skew_ns": 0,
        "duration_us": 400,
        "seed": 0,
        "sr": 0,
        "reorder_psns": 0,
    },
    "storm": {
        "stuck": 1,
        "watchdog": 0,
        "duration_us": 600,
        "seed": 0,
        "detect_us": 100,
        "stuck_until_us": 0,
    },
}

# int parameters: (lowest, highest); the rest are switches 0/1
PARAM_BOUNDS = {
    "watchdog": (0, 2),
    "duration_us": (100, 100_000),
    "seed": (0, 2**31 - 1),
    "flows": (1, 4),
    "hosts": (1, 2),
    "detect_us": (10, 10_000),
    "skew_ns": (0, 100_000),
    "stuck_until_us": (0, 100_000),
    "reorder_psns": (0, 256),
}


def bounds(key: str) -> tuple[int, int]:
    return PARAM_BOUNDS.get(key, (0, 1))


# The metrics each scenario's run returns (scenarios.py), as full-match patterns (storm has
# one per innocent flow): a sweep's --metric / --x is checked against them and the
# parameters before any point runs. tests/fabric/test_sweep.py holds them to real runs.
METRICS: dict[str, tuple[str, ...]] = {
    "spreading": (
        "deadlocked",
        "frames",
        "frozen_queues",
        "incast_gbps",
        "leaf1_pauses",
        "paused_queues_now",
        "spine_pauses",
        "spine_pauses_late",
        "victim_cnps",
        "victim_gbps",
    ),
    "deadlock": (
        "cycle",
        "deadlocked",
        "frames",
        "frozen_queues",
        "goodput_gbps",
        "pfc_frames_sent",
        "pfcwd_detected",
        "pfcwd_dropped",
        "pfcwd_ignored_frames",
        "pfcwd_in_storm",
        "pfcwd_restored",
    ),
    "spray": (
        "drops",
        "frames",
        "goodput_gbps",
        "min_flow_gbps",
        "naks",
        "retransmitted",
        "spine_share_max",
    ),
    "storm": (
        "frames",
        r"innocent\d+_gbps",
        "innocent_min_gbps",
        "paused_hosts",
        "paused_switch_names",
        "paused_switches",
        "pfcwd_detected",
        "pfcwd_dropped",
        "pfcwd_ignored_frames",
        "pfcwd_in_storm",
        "pfcwd_restored",
        "stuck_flow_gbps",
        "wd_first_detect_us",
        "wd_last_restore_us",
    ),
}


def is_column(scenario: str, name: str) -> bool:
    """Whether `name` is a parameter or a metric of `scenario` (a column of its sweep)."""
    import re

    return name in PARAMS.get(scenario, {}) or any(
        re.fullmatch(p, name) for p in METRICS.get(scenario, ())
    )
