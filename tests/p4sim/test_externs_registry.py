"""p4sim.externs: one module per extern, found through the registry and nowhere else.

- lowering does not import the runtime (an AST scan of every import in p4sim/lower/);
- no comparison against an extern's name outside p4sim/externs/ (the if/elif dispatches
  on extern kind are gone; an AST scan of p4sim/);
- a toy extern written as one module in a temporary package, declared in the test's
  program, is lowered, runs, is listed in P4Info and in `p4sim compile --emit ir`;
- every extern that arch/v1model.p4 declares has a module, and the ones p4sim refuses are
  refused by name at the file:line:column of their use.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from p4sim import externs
from p4sim.frontend.errors import P4Unsupported
from p4sim.lower import ARCH_DIR, load_program
from p4sim.p4info import p4info_from_model
from p4sim.runtime.switch import Switch
from tests.p4sim.p4sim_helpers import data_of, frame, program

P4SIM = Path(__file__).resolve().parents[2] / "p4sim"


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                pkg = ".".join(path.relative_to(P4SIM.parent).with_suffix("").parts[:-node.level])
                base = f"{pkg}.{node.module}" if node.module else pkg
            else:
                base = node.module or ""
            out += [base] + [f"{base}.{a.name}" for a in node.names]
    return out


def test_lower_never_imports_the_runtime():
    files = sorted((P4SIM / "lower").rglob("*.py"))
    assert files
    bad = {f"{f.name}: {m}" for f in files for m in _imports(f)
           if m == "p4sim.runtime" or m.startswith("p4sim.runtime.")}
    assert not bad, bad


def test_the_import_scan_sees_runtime_imports(tmp_path):
    # the scan above must catch the forms an import can take (negative control)
    f = P4SIM / "lower" / "_probe_never_written.py"
    assert not f.exists()
    for src in ("import p4sim.runtime.tables\n", "from p4sim.runtime import tables\n",
                "def f():\n    from p4sim.runtime.tables import Table\n"):
        p = tmp_path / "m.py"
        p.write_text(src)
        mods = [m for node in ast.walk(ast.parse(src)) for m in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else
            [node.module] if isinstance(node, ast.ImportFrom) else [])]
        assert any(m and m.startswith("p4sim.runtime") for m in mods)


def _extern_names() -> set[str]:
    names = {e.name for e in externs.all_externs() if e.name}
    names |= {f for e in externs.all_externs() for f in e.functions}
    # packet_in/packet_out are also what the language makes of a parser's and a deparser's
    # packet parameter and the two @controller_header kinds: naming them is not a dispatch
    names -= {"packet_in", "packet_out"}
    # the resource words the old dispatches used (indexed and direct)
    return names | {"counter", "direct_counter", "meter", "direct_meter", "register", "digest"}


def _dispatches(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines comparing something with an extern's name (`x == "counter"`, `x in ("meter", ...)`)."""
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for operand in [node.left, *node.comparators]:
            consts = [operand] if isinstance(operand, ast.Constant) else (
                list(operand.elts) if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [])
            if any(isinstance(c, ast.Constant) and c.value in names for c in consts):
                hits.append(node.lineno)
    return hits


def test_no_dispatch_on_extern_kind_outside_the_registry():
    names = _extern_names()
    found = {}
    for f in sorted(P4SIM.rglob("*.py")):
        if (P4SIM / "externs") in f.parents:
            continue
        lines = _dispatches(ast.parse(f.read_text(), str(f)), names)
        if lines:
            found[str(f.relative_to(P4SIM))] = lines
    assert not found, found


def test_the_dispatch_scan_sees_a_dispatch():
    names = _extern_names()
    src = 'if ex.kind == "counter":\n    pass\nelif t.name in ("meter", "x"):\n    pass\n'
    assert _dispatches(ast.parse(src), names) == [1, 3]


# ---------------------------------------------------------------- a toy extern, one file

TOY = '''
"""A toy extern: `ticker(start)` counts up by one on every `tick()`."""

from p4sim.check.types import TBits
from p4sim.externs import Extern, extern
from p4sim.lower.codegen import V
from p4sim.model import Annotated
from p4sim.spec import ExternSpec


class Ticker:
    def __init__(self, start):
        self.next = start

    def tick(self):
        self.next += 1
        return self.next - 1


@extern
class TickerExtern(Extern):
    name = "ticker"
    model_field = "tickers"
    p4info_prefix = "OTHER_EXTERNS_START"

    def instantiate(self, cc, d, t, scope, name):
        start = cc.const_eval(d.args[0].value, scope)
        self.objects(cc.model)[name] = Annotated(name=name, id=cc.ann_id(d))
        return ExternSpec("", self.name, name, params={"start": start})

    def method(self, cc, obj, t, m, argv, c, scope, fn):
        if m != "tick":
            return super().method(cc, obj, t, m, argv, c, scope, fn)
        return V(f"{obj.code}.tick()", TBits(8))

    def build(self, spec):
        return Ticker(spec.params["start"])
'''

TOY_DECL = "extern ticker { ticker(bit<8> start); bit<8> tick(); }"


@pytest.fixture
def toy(tmp_path, monkeypatch):
    pkg = tmp_path / "toyexterns"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ticker.py").write_text(TOY)  # the extern: one file
    monkeypatch.syspath_prepend(str(tmp_path))
    externs.load_package("toyexterns")
    ext = externs.lookup("ticker")
    yield ext
    externs.unregister(type(ext))
    for m in [m for m in sys.modules if m.startswith("toyexterns")]:
        del sys.modules[m]


def _toy_program(tmp_path) -> str:
    return program(tmp_path, decls=TOY_DECL, ig_locals="    ticker(8w5) tk;",
                   ig="        hdr.data.b = tk.tick();")


def test_toy_extern_in_one_module_is_lowered_run_and_listed(tmp_path, toy):
    assert toy is not None and toy.name == "ticker"
    path = _toy_program(tmp_path)
    prog = load_program(path)
    assert "X_" in prog.python and ".tick()" in prog.python  # inspectable generated code
    sw = Switch(prog)
    outs = []
    for _ in range(3):
        sw.send(0, frame(a=1))
        (o,) = sw.receive()
        outs.append(data_of(o.data)[1])
    assert outs == [5, 6, 7]
    assert sw.extern_objects["IG.tk"].next == 8
    # a second switch gets its own object
    sw2 = Switch(prog)
    sw2.send(0, frame(a=1))
    assert data_of(sw2.receive()[0].data)[1] == 5
    p4info = p4info_from_model(prog.model)
    (ext,) = p4info.externs
    assert ext.extern_type_name == "ticker" and ext.extern_type_id == 0x80
    (inst,) = ext.instances
    assert inst.preamble.name == "IG.tk" and inst.preamble.id >> 24 == 0x80


def test_toy_extern_listed_by_the_cli(tmp_path, toy, capsys):
    from p4sim.cli import main

    assert main(["compile", "--emit", "ir", _toy_program(tmp_path)]) == 0
    assert "  ticker IG.tk size 0" in capsys.readouterr().out


def test_without_its_module_the_toy_extern_is_refused_by_name(tmp_path):
    assert externs.lookup("ticker") is None
    path = _toy_program(tmp_path)
    with pytest.raises(P4Unsupported) as ei:
        load_program(path)
    assert "extern ticker" in ei.value.reason
    assert ei.value.span.line == next(n for n, line in enumerate(Path(path).read_text().splitlines(), 1)
                                      if "ticker(8w5) tk;" in line)


# ---------------------------------------------------------------- v1model.p4 coverage

_OBJ = re.compile(r"^\s*extern\s+(\w+)\s*(?:<[^>]*>)?\s*\{", re.M)
_FUN = re.compile(r"^\s*extern\s+[\w<>, ]+?\s+(\w+)\s*(?:<[^>]*>)?\s*\(", re.M)


def _declared(path: Path) -> tuple[set[str], set[str]]:
    text = path.read_text()
    return set(_OBJ.findall(text)), set(_FUN.findall(text))


def test_every_v1model_extern_has_a_module():
    objs, funs = _declared(Path(ARCH_DIR) / "v1model.p4")
    assert {"counter", "register", "action_selector", "Checksum16"} <= objs  # the regexes see them
    assert {"hash", "mark_to_drop", "clone3", "log_msg", "assert"} <= funs
    assert not {o for o in objs if externs.lookup(o) is None}
    assert not {f for f in funs if externs.function(f) is None}
    cobjs, cfuns = _declared(Path(ARCH_DIR) / "core.p4")
    assert {"packet_in", "packet_out"} <= cobjs
    assert not {o for o in cobjs if externs.lookup(o) is None}
    # static_assert is evaluated by the checker at compile time (no code, no runtime)
    assert not {f for f in cfuns - {"static_assert"} if externs.function(f) is None}


REFUSED = {
    "Checksum16": "Checksum16() ck;",
}


def test_refused_externs_are_exactly_the_named_ones():
    refused = {e.name for e in externs.all_externs() if isinstance(e, externs.RefusedExtern)}
    assert refused == set(REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_extern_is_refused_by_name_where_used(tmp_path, name):
    decl = REFUSED[name]
    path = program(tmp_path, ig_locals="    " + decl)
    with pytest.raises(P4Unsupported) as ei:
        load_program(path)
    e = ei.value
    assert name in e.reason
    line = next(n for n, text in enumerate(Path(path).read_text().splitlines(), 1) if decl in text)
    assert (e.span.line, e.span.column) == (line, 5)
    assert e.headline().startswith(f"{path}:{line}:5: ")
