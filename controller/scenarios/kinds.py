"""Kinds of scenario file other than one switch's run, as plug-ins.

A scenario file is one switch's run (this package's engine) unless it holds the top-level
key of a registered kind: `fabric:` is controller.fabric's. A kind brings how its files are
validated, the checks its `expect:` may name (registered with `checks.register(...,
scope=KEY)` when its module loads), how it runs and how `rocelab run` reports it. The
engine asks this registry and never imports a kind: the dependency points from the kind to
the engine (the way target kinds plug into controller.targets.registry).

Kinds come from the `rocelab.scenario_kinds` entry points (pyproject.toml), the same way
for this tree's fabric and for a kind living elsewhere:
`[project.entry-points."rocelab.scenario_kinds"] NAME = "MODULE:KIND"`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.units import ConfigError

ENTRY_POINT_GROUP = "rocelab.scenario_kinds"


@dataclass(frozen=True)
class ScenarioKind:
    """One kind of scenario file, marked by its top-level `key`.

    validate(sc, v, duration_us): raise ScenarioError through `v.fail` (schema.Validator)
        for the first rule of a loaded file that needs the whole file (its keys' types and
        ranges, `expect:` included, are the typed schema's, checked before); `duration_us`
        is the command line's override (schema.typed_value checks it against a type).
    run(sc, seed, duration_us, progress): a ScenarioResult (runs and their verdicts).
    cmd_run(args, sc): `rocelab run` on a file of this kind (args: the run subcommand's);
        the exit code."""

    key: str
    validate: Callable[[dict, Any, float | None], None]
    run: Callable[[dict, int | None, float | None, bool], Any]
    cmd_run: Callable[[Any, dict], int]


_KINDS: dict[str, ScenarioKind] | None = None


def _discover() -> dict[str, ScenarioKind]:
    from importlib.metadata import entry_points

    out: dict[str, ScenarioKind] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        where = f"{ep.name} = {ep.value} (entry point {ENTRY_POINT_GROUP})"
        try:
            kind = ep.load()
        except Exception as e:  # a broken plug-in: one line, not a traceback
            raise ConfigError(f"scenario plug-in {where}", f"{type(e).__name__}: {e}") from None
        if not isinstance(kind, ScenarioKind) or not kind.key:
            raise ConfigError(f"scenario plug-in {where}", "not a ScenarioKind with a key")
        if kind.key in out:
            raise ConfigError(f"scenario plug-in {where}", f"key {kind.key!r} registered twice")
        out[kind.key] = kind
    return out


def kinds() -> dict[str, ScenarioKind]:
    """Every registered kind by key (loaded once per process; loading registers its checks)."""
    global _KINDS
    if _KINDS is None:
        _KINDS = _discover()
    return _KINDS


def kind_of(sc: dict) -> ScenarioKind | None:
    """The kind of a scenario file (None: one switch's run, this package's own)."""
    return next((k for key, k in kinds().items() if key in sc), None)
