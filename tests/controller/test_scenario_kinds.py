"""Scenario kinds plug into the engine (controller/scenarios/kinds.py): the fabric's is
found through its entry point, the engine's modules import no kind, and a broken plug-in
is one line, not a traceback."""

from __future__ import annotations

import ast
from importlib import metadata
from pathlib import Path

import pytest

from controller.config import ConfigError
from controller.scenarios import kinds

ENGINE = Path(__file__).resolve().parents[2] / "controller" / "scenarios"


def kind_imports(source: str) -> list[int]:
    """Lines of `source` importing controller.fabric (the one kind in this tree)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.level == 0
            else []
        )
        if any(n == "controller.fabric" or n.startswith("controller.fabric.") for n in names):
            out.append(node.lineno)
    return out


def test_the_engine_imports_no_kind() -> None:
    files = sorted(ENGINE.glob("*.py"))
    assert len(files) > 5
    assert {p.name: kind_imports(p.read_text()) for p in files} == {p.name: [] for p in files}
    # the scan sees an import of the kind, lazy or not (negative control)
    assert kind_imports("def f():\n    from controller.fabric.runner import KIND\n") == [2]
    assert kind_imports("import controller.fabric.checks as c\n") == [1]


def test_the_fabric_kind_is_found_and_brings_its_checks() -> None:
    from controller.fabric.runner import KIND
    from controller.scenarios.checks import registered

    assert kinds.kinds()["fabric"] is KIND
    assert kinds.kind_of({"fabric": {}}) is KIND and kinds.kind_of({"flows": []}) is None
    assert {k for k, c in registered().items() if c.scope == "fabric"} >= {
        "fabric_storm",
        "fabric_deadlock",
    }


class _EP:
    def __init__(self, name: str, obj: object) -> None:
        self.name, self.value, self.obj = name, f"somewhere:{name}", obj

    def load(self) -> object:
        if isinstance(self.obj, Exception):
            raise self.obj
        return self.obj


@pytest.mark.parametrize(
    "eps, match",
    [
        (
            [_EP("bad", ImportError("no module named nowhere"))],
            "scenario plug-in bad = .*ImportError",
        ),
        ([_EP("odd", object())], "not a ScenarioKind"),
        (
            [
                _EP("a", kinds.ScenarioKind("x", print, print, print)),
                _EP("b", kinds.ScenarioKind("x", print, print, print)),
            ],
            "key 'x' registered twice",
        ),
    ],
    ids=["fails-to-load", "not-a-kind", "key-twice"],
)
def test_a_broken_plug_in_is_one_line(monkeypatch, eps, match) -> None:
    monkeypatch.setattr(
        metadata, "entry_points", lambda group: eps if group == kinds.ENTRY_POINT_GROUP else []
    )
    monkeypatch.setattr(kinds, "_KINDS", None)
    with pytest.raises(ConfigError, match=match) as exc:
        kinds.kinds()
    assert "\n" not in str(exc.value)
