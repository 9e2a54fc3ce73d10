"""The controller and the labs reach p4sim through one door: controller/targets/p4sim.py.
Everything else stands on p4rtproto (the shared P4Runtime layer), so the controller drives a
P4Runtime switch without the embedded target installed, and p4sim can change inside without
the controller noticing."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOOR = ROOT / "controller" / "targets" / "p4sim.py"
# The one module of p4sim anyone may import: the bounded command-line types every CLI shares
# (issue 36). It imports only the standard library (test_shared_cli_module_is_stdlib_only),
# so importing it pulls in nothing of the embedded target.
SHARED = "p4sim.cliargs"


def _is_p4sim(name: str | None) -> bool:
    return name is not None and (name == "p4sim" or name.startswith("p4sim.")) and name != SHARED


def p4sim_imports(source: str, filename: str = "<string>") -> list[int]:
    """Lines of `source` that import p4sim: import statements (absolute; a relative `.p4sim`
    is the door itself), and importlib.import_module / __import__ of a literal name."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            if any(_is_p4sim(a.name) for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if (
                node.level == 0
                and _is_p4sim(node.module)
                and not (
                    node.module == "p4sim" and all(f"p4sim.{a.name}" == SHARED for a in node.names)
                )
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = (
                fn.attr
                if isinstance(fn, ast.Attribute)
                else fn.id
                if isinstance(fn, ast.Name)
                else ""
            )
            arg = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and _is_p4sim(arg.value)
            ):
                lines.append(node.lineno)
    return lines


def test_only_the_p4sim_target_imports_p4sim() -> None:
    offenders = []
    for top in ("controller", "lab"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == DOOR:
                continue
            for line in p4sim_imports(path.read_text(), str(path)):
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], "import p4sim only in controller/targets/p4sim.py: " + ", ".join(
        offenders
    )


def test_the_shared_layer_stands_alone() -> None:
    """p4rtproto is below both: it imports neither p4sim nor the controller."""
    offenders = []
    for path in sorted((ROOT / "p4rtproto").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(n.split(".")[0] in ("p4sim", "controller", "lab") for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_door_is_real() -> None:
    """The rule is not vacuous: the door imports p4sim, and the scan sees it."""
    assert p4sim_imports(DOOR.read_text(), str(DOOR))


def test_the_scan_sees_every_form() -> None:
    """What a broken scan would miss: each form is caught, and look-alikes are not."""
    caught = [
        "import p4sim",
        "import p4sim.model as m",
        "from p4sim import model",
        "from p4sim.server.pipeline import make_device_config",
        "def f():\n    from p4sim.runtime.tm import wire_bytes",
        "import importlib\nimportlib.import_module('p4sim.runtime.switch')",
        "__import__('p4sim')",
        "import os, p4sim.stf",
    ]
    for src in caught:
        assert p4sim_imports(src), src
    assert p4sim_imports("from p4sim import cliargs, profile")  # the shared module hides no other
    for src in [
        "from p4sim import cliargs",
        "import p4sim.cliargs",
        "from p4sim.cliargs import Parser",
        "from .p4sim import P4SimTarget",
        "from controller.targets.p4sim import P4SimTarget",
        "import p4simulator",
        "from p4rtproto import codec",
        "x = 'p4sim'",
    ]:
        assert not p4sim_imports(src), src


def test_shared_cli_module_is_stdlib_only() -> None:
    """The exception above holds only while p4sim/cliargs.py needs nothing but the standard
    library (not p4sim's runtime, not the controller)."""
    import sys

    path = ROOT / "p4sim" / "cliargs.py"
    tree = ast.parse(path.read_text(), str(path))
    tops = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    tops |= {
        (n.module or "").split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.level == 0
    }
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))
    assert tops and tops <= set(sys.stdlib_module_names), tops - set(sys.stdlib_module_names)
