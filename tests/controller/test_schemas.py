"""The typed schemas (controller/schemas/): every shipped file validates against the JSON
Schema `rocelab schema KIND` exports (checked by a JSON Schema validator, not by our own
models), and a wrong type at any key of any schema, found by walking the schema itself, is
refused in one line naming that key."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from controller.cli import main
from controller.config import load_yaml
from controller.scenarios.scenario import list_scenarios, load_scenario
from controller.schemas import kinds, validate

ROOT = Path(__file__).resolve().parents[2]


def _schema(kind: str, capsys) -> dict:
    assert main(["schema", kind]) == 0
    return json.loads(capsys.readouterr().out)


def _shipped() -> list[tuple[str, str, dict]]:
    out = [
        ("switch", "controller/examples/lab.yaml", load_yaml(ROOT / "controller/examples/lab.yaml"))
    ]
    out += [
        ("lab", str(p.relative_to(ROOT)), load_yaml(p))
        for p in sorted((ROOT / "lab/topologies").glob("*.yaml"))
    ]
    out += [
        ("sweep", str(p.relative_to(ROOT)), load_yaml(p))
        for p in sorted((ROOT / "controller/examples").glob("sweep_*.yaml"))
    ]
    for name in list_scenarios():  # as the loader sees it: `extends` merged
        sc = load_scenario(name)
        sc.pop("_path")
        out.append(("fabric" if "fabric" in sc else "scenario", name, sc))
    return out


def _json_keys(doc):
    """YAML maps may have int keys (ports: {1: ...}); JSON's are strings."""
    if isinstance(doc, dict):
        return {str(k): _json_keys(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_json_keys(v) for v in doc]
    return doc


def test_every_shipped_file_validates_against_the_exported_json_schema(capsys):
    schemas = {k: _schema(k, capsys) for k in kinds()}
    seen = set()
    for kind, name, doc in _shipped():
        errors = list(jsonschema.Draft202012Validator(schemas[kind]).iter_errors(_json_keys(doc)))
        assert not errors, (name, [e.message for e in errors[:3]])
        seen.add(kind)
    assert seen == set(kinds())
    # negative control: the same validator refuses a wrong type
    bad = _json_keys(load_yaml(ROOT / "controller/examples/lab.yaml"))
    bad["pfc"]["quanta"] = "lots"
    assert list(jsonschema.Draft202012Validator(schemas["switch"]).iter_errors(bad))


def _leaves(schema: dict, node: dict, doc, path: tuple = ()):
    """(path, wrong value) for every key the schema declares on the objects along `doc`: a
    value of a JSON type the key's schema does not allow."""
    if not isinstance(doc, dict):
        return
    for key, sub in _properties(schema, node).items():
        yield path + (key,), _wrong(_types(schema, sub))
        if key in doc:
            yield from _leaves(schema, sub, doc[key], path + (key,))


def _deref(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    return node


def _properties(schema: dict, node: dict) -> dict:
    node = _deref(schema, node)
    props = dict(node.get("properties") or {})
    for alt in node.get("anyOf", []):
        props.update(_properties(schema, alt))
    return props


def _types(schema: dict, node: dict) -> set[str]:
    node = _deref(schema, node)
    if "anyOf" in node:
        return set().union(*(_types(schema, alt) for alt in node["anyOf"]))
    if "const" in node or "enum" in node:
        values = node.get("enum", [node.get("const")])
        return {
            "string" if isinstance(v, str) else "boolean" if isinstance(v, bool) else "integer"
            for v in values
        }
    t = node.get("type", "object")
    return {"integer", "number"} if t == "number" else {t}


def _wrong(allowed: set[str]):
    for kind, value in (
        ("object", {"a": "mapping"}),
        ("array", [["x"]]),
        ("string", "not-this"),
        ("integer", 12345),
    ):
        if kind not in allowed:
            return value
    raise AssertionError(f"no wrong type for {allowed}")


@pytest.mark.parametrize("kind", ["switch", "lab", "scenario", "fabric", "sweep"])
def test_a_wrong_type_at_every_key_is_refused_naming_the_key(capsys, kind):
    schema = _schema(kind, capsys)
    kind_, name, doc = next(s for s in _shipped() if s[0] == kind)
    model = kinds()[kind]
    n = 0
    for path, value in _leaves(schema, schema, doc):
        bad = json.loads(json.dumps(_json_keys(doc)))
        d = bad
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
        _, errors = validate(model, yaml.safe_load(yaml.safe_dump(bad)))
        want = ".".join(path)
        assert any(
            e.key == want or e.key.startswith(want + ".") or e.key.startswith(want + "[")
            for e in errors
        ), (name, want, value, [str(e) for e in errors])
        n += 1
    assert n >= (4 if kind == "sweep" else 10), n  # a sweep grid has four keys
