"""The typed schemas of every file a user writes, in pydantic v2: types, ranges and units
in one place, JSON Schema for editors (`rocelab schema KIND`), and errors that name the key
path (and the file's line, when the text is at hand).

    KINDS                 kind name -> model (switch, lab, scenario, fabric, sweep)
    validate(model, data) -> (typed model or None, [ConfigError]) -- every error, and the
                             model of what is left once the bad keys are taken out, so the
                             cross-field checks still run on the rest
    key_lines(text)       dotted key path -> line, from the YAML text (bounded loader)
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ValidationError

from controller.units import ConfigError


def kinds() -> dict[str, type[BaseModel]]:
    from .files import FabricScenarioFile, LabFile, ScenarioFile, SweepGridFile
    from .switch import SwitchConfig

    return {
        "switch": SwitchConfig,
        "scenario": ScenarioFile,
        "fabric": FabricScenarioFile,
        "lab": LabFile,
        "sweep": SweepGridFile,
    }


def json_schema(kind: str) -> dict:
    model = kinds()[kind]
    doc = model.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **doc}


def _path(loc: tuple, data: Any) -> tuple[list, bool]:
    """The elements of a pydantic error location that exist in the raw data (union branch
    names and `[key]` markers are not keys), and whether the last one is absent."""
    out: list = []
    cur = data
    for i, elem in enumerate(loc):
        if isinstance(cur, dict) and elem in cur:
            out.append(elem)
            cur = cur[elem]
        elif (
            isinstance(cur, dict) and isinstance(elem, str) and elem.isdigit() and int(elem) in cur
        ):
            out.append(int(elem))
            cur = cur[int(elem)]
        elif isinstance(cur, list) and isinstance(elem, int) and 0 <= elem < len(cur):
            out.append(elem)
            cur = cur[elem]
        elif (
            i == len(loc) - 1
            and isinstance(cur, dict)
            and isinstance(elem, str)
            and not elem.startswith(("[", "function", "literal", "list", "dict", "union"))
        ):
            return out + [elem], True
    return out, False


def dotted(path: list, data: Any) -> str:
    """['hosts', 'h1', 'qps', 0, 'qpn'] -> 'hosts.h1.qps[0].qpn' (lists by index)."""
    s, cur = "", data
    for elem in path:
        if isinstance(cur, list):
            s += f"[{elem}]"
        else:
            s += f".{elem}" if s else str(elem)
        try:
            cur = cur[elem]
        except (KeyError, IndexError, TypeError):
            cur = None
    return s or "<top>"


def _message(err: dict) -> str:
    kind, msg = err["type"], err["msg"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required"
    if kind == "value_error":
        return msg.removeprefix("Value error, ")
    shown = str(err.get("input"))[:40]
    return f"{msg[0].lower()}{msg[1:]}, got {shown!r}"


def validate(
    model: type[BaseModel], data: Any, source: str = "", lines: dict[str, int] | None = None
) -> tuple[BaseModel | None, list[ConfigError]]:
    """Every error in `data` (one per key path, file:line first when `lines` has it), and
    the model validated from what remains once the bad keys (or the entries missing a
    required key) are removed."""
    errors: dict[str, ConfigError] = {}
    work = copy.deepcopy(data)
    for _ in range(6):  # each round removes what failed; defaults fill in
        try:
            return model.model_validate(work), list(errors.values())
        except ValidationError as exc:
            cuts = []
            for err in exc.errors(include_url=False):
                path, missing = _path(err["loc"], work)
                key = dotted(path, work)
                if key not in errors:
                    where = f"{source}:{lines[key]}" if lines and key in lines else ""
                    errors[key] = ConfigError(key, _message(err), where)
                cuts.append(path[:-1] if missing else path)
            if not _cut(work, cuts):
                break
    return None, list(errors.values())


def _cut(data: Any, paths: list[list]) -> bool:
    """Remove each path's element from `data` (list items last to first); False when there
    is nothing left to remove (an error at the top)."""
    done = False

    def order(p: tuple) -> list:
        return [(0, x, "") if isinstance(x, int) else (1, 0, str(x)) for x in p]

    for path in sorted({tuple(p) for p in paths if p}, key=order, reverse=True):
        parent = data
        for elem in path[:-1]:
            try:
                parent = parent[elem]
            except (KeyError, IndexError, TypeError):
                parent = None
                break
        try:
            del parent[path[-1]]
            done = True
        except (KeyError, IndexError, TypeError):
            pass
    return done


def key_lines(text: str) -> dict[str, int]:
    """Dotted key path -> 1-based line of its value in the YAML text (best effort)."""
    import yaml

    from controller.inputs import compose_yaml

    out: dict[str, int] = {}
    try:
        root = compose_yaml(text)
    except yaml.YAMLError:
        return out

    def walk(node: Any, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for k, val in node.value:
                p = f"{path}.{k.value}" if path else str(k.value)
                out[p] = val.start_mark.line + 1
                walk(val, p)
        elif isinstance(node, yaml.SequenceNode):
            for i, val in enumerate(node.value):
                p = f"{path}[{i}]"
                out[p] = val.start_mark.line + 1
                walk(val, p)

    walk(root, "")
    return out
