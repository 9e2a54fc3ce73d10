"""The fabric scenarios' parameters: names, defaults and allowed values, in a module that
imports nothing heavy, so a sweep or a scenario file is checked before p4sim and the host
models load. `scenarios.SCENARIOS` pairs each with its run function."""

from __future__ import annotations

PARAMS: dict[str, dict[str, int]] = {
    "spreading": {"incast": 1, "dcqcn": 0, "duration_us": 1000, "seed": 0},
    "deadlock": {"flows": 4, "watchdog": 0, "duration_us": 400, "seed": 0, "detect_us": 100,
                 "hosts": 1},
    "spray": {"flows": 3, "spray": 0, "skew_ns": 0, "duration_us": 400, "seed": 0, "sr": 0,
              "reorder_psns": 0},
    "storm": {"stuck": 1, "watchdog": 0, "duration_us": 600, "seed": 0, "detect_us": 100,
              "stuck_until_us": 0},
}

# int parameters: (lowest, highest); the rest are switches 0/1
PARAM_BOUNDS = {"watchdog": (0, 2), "duration_us": (100, 100_000), "seed": (0, 2**31 - 1),
                "flows": (1, 4), "hosts": (1, 2), "detect_us": (10, 10_000),
                "skew_ns": (0, 100_000), "stuck_until_us": (0, 100_000),
                "reorder_psns": (0, 256)}


def bounds(key: str) -> tuple[int, int]:
    return PARAM_BOUNDS.get(key, (0, 1))
