"""Imports flow one way: no two modules of the project's packages reach each other through
their imports (files as rooms, imports as arrows: no circle). Every import counts, wherever
it stands: at the top, inside a function (a lazy import is still a dependency), under
`if TYPE_CHECKING:` (a reader needs that module to read this one), and
importlib.import_module / __import__ of a literal name. An AST scan, as in
test_import_boundary.py; a plug-in found at run time by a registry (target kinds, scenario
kinds, extern modules) is no arrow: the registry names no module.

What the scan cannot see, on purpose: the implicit import of a package's __init__ when one
of its modules is imported (a package re-exporting its modules is no circle of design)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "controller", "hdl", "lab", "p4rtproto", "p4sim", "p4src")

# Circles being broken elsewhere, as packages a circle may lie within. Each must still hold
# a circle (test_known_circles_still_exist): delete the entry when it is gone.
KNOWN: dict[str, tuple[str, ...]] = {}


def module_files(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under `packages` (a package is its __init__)."""
    out = {}
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every dotted name `tree` imports, relative ones made absolute; `from X import Y` gives
    X.Y (Y may be a module, or a name defined in module X)."""
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            names.update(f"{src}.{a.name}" for a in node.names)
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
                and not arg.value.startswith(".")
            ):
                names.add(arg.value)
    return names


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the project modules it imports: an imported name's deepest module
    (`from pkg import name`: module pkg.name when there is one, else pkg)."""
    files = module_files(root, packages)
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = set()
        for name in _imported_names(tree, mod, path.name == "__init__.py"):
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name != mod:
                targets.add(name)
        graph[mod] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative),
    each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return sorted(found)


def _within(circle: list[str], packages: tuple[str, ...]) -> bool:
    return all(any(m == p or m.startswith(p + ".") for p in packages) for m in circle)


def test_no_import_circle_in_the_project() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert len(graph) > 150 and graph["controller.cli"]  # the scan sees the real tree
    new = [c for c in circles(graph) if not any(_within(c, pk) for pk in KNOWN.values())]
    assert new == [], (
        "import circles (break each by a seam that names the direction): "
        + "; ".join(" <-> ".join(c) for c in new)
    )


def test_known_circles_still_exist() -> None:
    """An exception outliving its circle would hide a new one there: delete it."""
    found = circles(import_graph(ROOT, PACKAGES))
    gone = [name for name, pk in KNOWN.items() if not any(_within(c, pk) for c in found)]
    assert gone == [], f"no circle left in {gone}: remove it from KNOWN"


# ---------------------------------------------------------------- negative controls

PLANTED = {
    "pkg/__init__.py": "",
    "pkg/a.py": "from pkg.b import f\n",  # a -> b (top level, absolute)
    "pkg/b.py": "def f():\n    from . import c\n    return c\n",  # b -> c (lazy, relative)
    "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",  # c -> a
    "pkg/sub/__init__.py": "",
    "pkg/sub/d.py": "import importlib\nm = importlib.import_module('pkg.sub.e')\n",  # d -> e
    "pkg/sub/e.py": "from .. import c\nfrom ..sub import d\n",  # e -> c, e -> d
    "pkg/free.py": "import os\nimport pkg.a\nx = 'pkg.b'\n",  # only an arrow out
}


def _plant(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return import_graph(tmp_path, ("pkg",))


def test_the_scan_reports_a_planted_circle(tmp_path) -> None:
    """Every form of import makes an arrow; the circles are a -> b -> c -> a (top-level,
    lazy, TYPE_CHECKING) and d <-> e (import_module, `from ..sub import d`)."""
    graph = _plant(tmp_path, PLANTED)
    assert (
        graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.a"}
    )
    assert graph["pkg.sub.e"] == {"pkg.c", "pkg.sub.d"} and graph["pkg.free"] == {"pkg.a"}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.sub.d", "pkg.sub.e"]]
    # the same tree with one arrow turned round has no circle
    graph = _plant(tmp_path, {**PLANTED, "pkg/c.py": "", "pkg/sub/d.py": ""})
    assert circles(graph) == []


def test_one_arrow_against_the_flow_is_a_circle() -> None:
    """The real graph with one planted import going up (p4rtproto importing the controller
    that stands on it) has a circle the test reports; so does the circle 2 this issue broke
    (the program loader importing the p4sim target again)."""
    graph = import_graph(ROOT, PACKAGES)
    assert "p4rtproto.codec" in graph["controller.targets.p4runtime"]
    graph["p4rtproto.codec"].add("controller.targets.p4runtime")
    assert any(
        {"p4rtproto.codec", "controller.targets.p4runtime"} <= set(c) for c in circles(graph)
    )
    graph = import_graph(ROOT, PACKAGES)
    graph["controller.targets.program"].add("controller.targets.p4sim")
    assert ["controller.targets.p4sim", "controller.targets.program"] in [
        [m for m in c if m.endswith((".p4sim", ".program"))] for c in circles(graph)
    ]
