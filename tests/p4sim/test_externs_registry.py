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
                pkg = ".".join(path.relative_to(P4SIM.parent).with_suffix("").parts[: -node.level])
                base = f"{pkg}.{node.module}" if node.module else pkg
            else:
                base = node.module or ""
            out += [base] + [f"{base}.{a.name}" for a in node.names]
    return out


def test_lower_never_imports_the_runtime():
    files = sorted((P4SIM / "lower").rglob("*.py"))
    assert files
    bad = {
        f"{f.name}: {m}"
        for f in files
        for m in _imports(f)
        if m == "p4sim.runtime" or m.startswith("p4sim.runtime.")
    }
    assert not bad, bad


def test_the_import_scan_sees_runtime_imports(tmp_path):
    # the scan above must catch the forms an import can take (negative control)
    f = P4SIM / "lower" / "_probe_never_written.py"
    assert not f.exists()
    for src in (
        "import p4sim.runtime.tables\n",
        "from p4sim.runtime import tables\n",
        "def f():\n    from p4sim.runtime.tables import Table\n",
    ):
        p = tmp_path / "m.py"
        p.write_text(src)
        mods = [
            m
            for node in ast.walk(ast.parse(src))
            for m in (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom)
                else []
            )
        ]
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
            consts = (
                [operand]
                if isinstance(operand, ast.Constant)
                else (
                    list(operand.elts)
                    if isinstance(operand, (ast.Tuple, ast.List, ast.Set))
                    else []
                )
            )
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
"""A toy extern: `ticker(start)` counts up by one on every `tick()`; `keep()` takes the
packet out of the pipeline after ingress (a per-packet hook) into the ticker's `kept` list.
STF: `ticker_set NAME VALUE`, `check_ticker NAME VALUE`; SwitchAPI: `ticker_read(name)`."""

from p4sim.check.types import VOID, TBits
from p4sim.externs import Extern, extern
from p4sim.externs._common import resolve_name
from p4sim.lower.codegen import V
from p4sim.model import Annotated
from p4sim.spec import ExternSpec


class Ticker:
    def __init__(self, start):
        self.next = start
        self.kept = []

    def tick(self):
        self.next += 1
        return self.next - 1


@extern
class TickerExtern(Extern):
    name = "ticker"
    model_field = "tickers"
    p4info_prefix = "OTHER_EXTERNS_START"
    after_ingress_order = 20  # after an ingress clone (10), before resubmit (30)

    def instantiate(self, cc, d, t, scope, name):
        start = cc.const_eval(d.args[0].value, scope)
        self.objects(cc.model)[name] = Annotated(name=name, id=cc.ann_id(d))
        return ExternSpec("", self.name, name, params={"start": start})

    def method(self, cc, obj, t, m, argv, c, scope, fn):
        if m == "tick":
            return V(f"{obj.code}.tick()", TBits(8))
        if m == "keep":
            fn.emit(f"_RT.ticker_keep({obj.code})")
            return V("None", VOID)
        return super().method(cc, obj, t, m, argv, c, scope, fn)

    def build(self, spec):
        return Ticker(spec.params["start"])

    # per packet
    def setup(self, sw, program, ns):
        sw.ticker_keeper = None

    def runtime_methods(self):
        return {"ticker_keep": _keep}

    def reset(self, sw):
        sw.ticker_keeper = None

    def after_ingress(self, sw, port, frame, hdr, meta, sm, passes):
        t = sw.ticker_keeper
        if t is None:
            return False
        t.kept.append(frame)
        return True  # consumed: no multicast, no unicast, no resubmit

    # operations
    def api(self):
        return {"ticker_read": lambda sw, name: _ticker(sw, name).next}

    def stf_commands(self):
        return {"ticker_set": _stf_set, "check_ticker": _stf_check}


def _keep(sw, t):
    sw.ticker_keeper = t
    sw.request()


def _ticker(sw, name):
    names = [n for n, o in sw.extern_objects.items() if isinstance(o, Ticker)]
    return sw.extern_objects[resolve_name(name, names, "ticker")]


def _stf_set(r, c):
    """ticker_set NAME VALUE"""
    _ticker(r.sw, c.args[0]).next = int(c.args[1])


def _stf_check(r, c):
    got = r.sw.ticker_read(c.args[0])
    if got != int(c.args[1]):
        r.fail(f"{r.path}:{c.line}: ticker {c.args[0]} is {got}, expected {c.args[1]}")
'''

TOY_DECL = "extern ticker { ticker(bit<8> start); bit<8> tick(); void keep(); }"


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
    return program(
        tmp_path,
        decls=TOY_DECL,
        ig_locals="    ticker(8w5) tk;",
        ig="        hdr.data.b = tk.tick();",
    )


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
    # its STF commands are listed by `p4sim stf --help` (found through the registry)
    assert main(["stf", "--help"]) == 0
    out = capsys.readouterr().out
    assert "  ticker_set NAME VALUE\n" in out and "  check_ticker\n" in out


KEEP_IG = """
        hdr.data.b = tk.tick();
        if (hdr.data.a == 2) {
            clone(CloneType.I2E, 32w5);
            tk.keep();
            resubmit_preserving_field_list(8w0);
        }
"""


def _keep_program(tmp_path) -> str:
    return program(
        tmp_path, decls=TOY_DECL, ig_locals="    ticker(8w5) tk;", ig=KEEP_IG, name="keep.p4"
    )


def test_toy_extern_hook_and_stf_commands_run_end_to_end(tmp_path, toy):
    from p4sim.stf import StfError, StfRunner

    sw = Switch(_keep_program(tmp_path))
    kept = frame(a=2, b=0x44)
    stf = "\n".join(
        [
            "ticker_set tk 9",  # the toy's own STF command
            "mirroring_add 5 3",
            f"packet 0 {frame(a=1).hex()}",
            f"expect 1 {frame(a=1, b=9).hex()}",
            f"packet 0 {kept.hex()}",
            # the ingress clone (hook order 10) still leaves; the original is kept by the toy
            # (20), so it is neither forwarded nor resubmitted (30)
            f"expect 3 {kept.hex()}",
            "check_ticker tk 11",
        ]
    )
    res = StfRunner(sw, "toy.stf").run_text(stf)
    assert res.ok, res.report()
    assert res.packets_checked == 2
    assert sw.extern_objects["IG.tk"].kept == [kept]
    assert sw.ticker_read("tk") == 11  # the toy's SwitchAPI operation
    # the toy's check fails when it should, and its commands report missing arguments
    bad = StfRunner(Switch(_keep_program(tmp_path)), "bad.stf").run_text("check_ticker tk 6")
    assert not bad.ok and "bad.stf:1: ticker tk is 5, expected 6" in bad.messages
    with pytest.raises(StfError, match=r"m.stf:1: ticker_set: missing argument\(s\)"):
        StfRunner(Switch(_keep_program(tmp_path)), "m.stf").run_text("ticker_set tk")


def test_stage_hooks_run_in_their_declared_order(tmp_path, toy, monkeypatch):
    prog = load_program(_keep_program(tmp_path))
    before = Switch(prog)
    # negative control: the toy's hook after resubmit's; the hooks are resolved when a switch
    # is built, so only a new switch sees it
    monkeypatch.setattr(type(toy), "after_ingress_order", 40)
    after = Switch(prog)
    for sw in (before, after):
        sw.clone_session_set(5, [(3, 0)])
        sw.send(0, frame(a=2))
        sw.run_until_idle()
    outs = {sw: [o.port for o in sw.receive()] for sw in (before, after)}
    assert outs[before] == [3] and before.extern_objects["IG.tk"].kept == [frame(a=2)]
    # resubmitted first, every pass clones again until the reinjection guard drops it:
    # passes 0..16, 17 clones, nothing kept
    assert outs[after] == [3] * 17 and after.extern_objects["IG.tk"].kept == []
    assert after.ticker_read("tk") == 5 + 17


def test_stage_hooks_are_resolved_when_the_switch_is_built(tmp_path, toy):
    plain = Switch(program(tmp_path, name="plain.p4"))
    assert (plain._after_ingress, plain._after_egress, plain._after_deparse, plain._resets) == (
        (),
        (),
        (),
        (),
    )
    clone = externs.function("clone")
    sw = Switch(program(tmp_path, ig="        clone(CloneType.I2E, 32w5);", name="clone.p4"))
    assert sw._after_ingress == (clone.after_ingress,) and sw._after_egress == (clone.after_egress,)
    assert sw._after_deparse == ()
    toy_sw = Switch(_keep_program(tmp_path))
    resub = externs.function("resubmit")
    assert toy_sw._after_ingress == (clone.after_ingress, toy.after_ingress, resub.after_ingress)
    assert toy_sw._after_deparse == (resub.after_deparse,)  # recirculate's side of the module


# ---------------------------------------------------------------- the driver names no extern

_DRIVERS = [P4SIM / "runtime" / "switch.py", P4SIM / "stf.py"]
# identifiers that contain an extern kind's word but name something else
_NOT_EXTERNS = {
    "verify",  # V1Switch's VerifyChecksum control (`Pipeline.verify`), not core's verify()
    "_verify",
}


def _kind_words() -> list[list[str]]:
    names = {e.name for e in externs.all_externs() if e.name}
    names |= {f for e in externs.all_externs() for f in e.functions}
    names -= {"packet_in", "packet_out"}  # the parser's and deparser's parameter types
    # and what the registry treats as an extern without a type name (value_set)
    names |= {e.model_field[:-1] for e in externs.all_externs() if e.model_field.endswith("s")}
    return [re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", n).lower().split("_") for n in names]


def _words(ident: str) -> list[str]:
    return [w for w in re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", ident).lower().split("_") if w]


def _names_a_kind(ident: str, kinds: list[list[str]]) -> bool:
    if ident in _NOT_EXTERNS or (ident.startswith("__") and ident.endswith("__")):
        return False
    ws = _words(ident)
    for k in kinds:
        n = len(k)
        for i in range(len(ws) - n + 1):
            part = ws[i : i + n]
            if part[:-1] == k[:-1] and part[-1] in (k[-1], k[-1] + "s"):
                return True
    return False


def _extern_mentions(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, identifier) of every name, attribute, definition, argument, import and
    non-docstring string constant that names an extern kind."""
    kinds = _kind_words()
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    hits = []
    for node in ast.walk(tree):
        idents: list[str] = []
        if isinstance(node, ast.Name):
            idents = [node.id]
        elif isinstance(node, ast.Attribute):
            idents = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            idents = [node.name]
        elif isinstance(node, ast.arg):
            idents = [node.arg]
        elif isinstance(node, ast.keyword) and node.arg:
            idents = [node.arg]
        elif isinstance(node, ast.alias):
            idents = [*node.name.split("."), *([node.asname] if node.asname else [])]
        elif isinstance(node, ast.ImportFrom) and node.module:
            idents = node.module.split(".")
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        ):
            idents = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value)
        hits += [(getattr(node, "lineno", 0), i) for i in idents if _names_a_kind(i, kinds)]
    return hits


def test_switch_and_stf_name_no_extern_kind():
    found = {}
    for f in _DRIVERS:
        hits = _extern_mentions(ast.parse(f.read_text(), str(f)))
        if hits:
            found[f.name] = hits
    assert not found, found


@pytest.mark.parametrize(
    "src",
    [
        "self.clone_req = None\n",
        "def counter_read(self, name):\n    pass\n",
        "x = sw.meters[n]\n",
        "from p4sim.externs import hash as H\n",
        "NORMAL, I2E_CLONE = 0, 1\n",
        "try:\n    pass\nexcept AssertFailed:\n    pass\n",
        "op = 'register_write'\n",
        "self.value_sets = {}\n",
        "def f(recirculate=None):\n    pass\n",
    ],
)
def test_the_extern_name_scan_sees_a_planted_name(src):
    # negative control: each line names an extern the way switch.py and stf.py once did
    assert _extern_mentions(ast.parse(src)), src


def test_the_extern_name_scan_ignores_docstrings_and_unrelated_names():
    src = (
        '"""clone, resubmit and recirculate, in simple_switch order."""\n'
        "def _egress_pass(self):\n    self._verify(hdr)\n    registry.lookup(k)\n    __hash__ = 1\n"
    )
    assert _extern_mentions(ast.parse(src)) == []


def test_without_its_module_the_toy_extern_is_refused_by_name(tmp_path):
    assert externs.lookup("ticker") is None
    path = _toy_program(tmp_path)
    with pytest.raises(P4Unsupported) as ei:
        load_program(path)
    assert "extern ticker" in ei.value.reason
    assert ei.value.span.line == next(
        n
        for n, line in enumerate(Path(path).read_text().splitlines(), 1)
        if "ticker(8w5) tk;" in line
    )


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
