"""Lowering translates what check decided: it reads each expression's type, and what each
name stands for, from the CheckedProgram instead of deriving them again.

- an AST scan of p4sim/lower (the expression-lowering functions live in exprs.py): they construct no
  type and there is no typing of lowering's own (`coerce`, `unify`, check's resolver or
  `fold`), with a planted negative control for each rule;
- a forged type in the check results is followed by the generated code (so the code
  really comes from check's types, not from a second derivation);
- a type that differs between two instances of one control is read per instance;
- an AST scan: no name is looked up again by its string in p4sim/lower or in the extern
  modules' lowering hooks (planted negative controls), and a forged Sym of one name is
  followed by the code; a name check never resolved is a located internal error.
"""

from __future__ import annotations

import ast as pyast
import re
from pathlib import Path

from p4sim.check import check
from p4sim.check.names import Sym
from p4sim.check.types import TBits
from p4sim.frontend import ast
from tests.p4sim.p4sim_helpers import program
from tests.p4sim.test_check_pass import parsed

CODEGEN = Path(__file__).resolve().parents[2] / "p4sim" / "lower" / "codegen.py"
PROGRAMS = Path(__file__).parent / "programs"

# the functions that turn one expression into code: they get its type from check
EXPR_FUNCS = {"expr", "_expr", "member", "binary", "cast", "lazy"}
# type constructors and type constants of p4sim.check.types
TYPE_NAMES = {
    "TBits",
    "TInt",
    "TBool",
    "TTuple",
    "TNamedBlock",
    "TDontCare",
    "TStruct",
    "TStack",
    "TEnum",
    "TError",
    "TVarbit",
    "TVoid",
    "TExtern",
    "BOOL",
    "INT",
    "ERROR",
    "STRING",
    "VOID",
}
# lowering's former typing, and check internals it must not call again
GONE = {"coerce", "unify", "fold", "resolver", "varies", "type_mismatches"}


def typing_in_lowering(source: str) -> list[str]:
    """Where `source` (a lowering module) builds a type while lowering an expression (any use
    of a type name other than as isinstance's second argument) or uses the removed typing."""
    found = []
    tree = pyast.parse(source)
    for node in pyast.walk(tree):
        if isinstance(node, (pyast.FunctionDef, pyast.Attribute, pyast.Name)):
            name = (
                node.name
                if isinstance(node, pyast.FunctionDef)
                else (node.attr if isinstance(node, pyast.Attribute) else node.id)
            )
            if name in GONE:
                found.append(f"{node.lineno}: {name}")
        if isinstance(node, pyast.FunctionDef) and node.name in EXPR_FUNCS:
            allowed = set()
            for sub in pyast.walk(node):
                if (
                    isinstance(sub, pyast.Call)
                    and isinstance(sub.func, pyast.Name)
                    and sub.func.id == "isinstance"
                    and len(sub.args) == 2
                ):
                    allowed.update(id(x) for x in pyast.walk(sub.args[1]))
            for sub in pyast.walk(node):
                if isinstance(sub, pyast.Name) and sub.id in TYPE_NAMES and id(sub) not in allowed:
                    found.append(f"{sub.lineno}: {sub.id} in {node.name}")
    return found


def test_lowering_derives_no_expression_type():
    sources = {p.name: p.read_text() for p in sorted(CODEGEN.parent.glob("*.py"))}
    assert (
        "def _expr(" in sources["exprs.py"] and "def binary(" in sources["exprs.py"]
    )  # the real functions
    assert {name: typing_in_lowering(src) for name, src in sources.items()} == dict.fromkeys(
        sources, []
    )


def test_the_scan_sees_a_derived_type_and_the_old_typing():
    """Negative controls: each planted form is reported."""
    planted = {
        "def binary(self, e, t):\n    return V('x', TBits(8))\n": "TBits in binary",
        "def member(self, e):\n    return V('x', BOOL)\n": "BOOL in member",
        "def _expr(self, e):\n    if isinstance(t, TBits):\n        return V('x', t)\n    return V('y', INT)\n": "INT in _expr",
        "def coerce(self, v, t):\n    return v\n": "coerce",
        "def f(self, e):\n    return self.checked.fold(e, None)\n": "fold",
        "def f(self, a, b):\n    return self.unify(a, b)\n": "unify",
    }
    for src, what in planted.items():
        found = typing_in_lowering(src)
        assert found and what in found[0], (src, found)
    # allowed: a type name as isinstance's class argument, outside the expression functions
    assert (
        typing_in_lowering("def _expr(self, e, t):\n    return isinstance(t, (TBits, TInt))\n")
        == []
    )
    assert typing_in_lowering("def gen_class(self, t):\n    return TBits(8)\n") == []


SUM = """
control Sum(inout headers_t hdr) {
    apply { hdr.data.b = hdr.data.a + hdr.data.b; }
}
"""


def _lower(cp, path) -> str:
    import p4sim.lower.codegen as cg

    return cg.Compiler(cp, str(path)).compile()


def test_lowering_follows_the_type_check_recorded(tmp_path):
    """Forge check's type of one non-constant expression (a bit<8> sum said to be bit<4>):
    the generated code masks with the forged width. A lowering with typing of its own would
    still write 0xff."""
    path = program(tmp_path, ig="        hdr.data.b = hdr.data.a + hdr.data.b;")
    cp = check(parsed(path))
    ig = next(
        d for d in cp.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "IG"
    )
    plus = next(n for n in ast.walk(ig) if isinstance(n, ast.Binary) and n.op == "+")
    assert cp.values[id(plus)] == (TBits(8), None)
    assert re.search(r"\(\(\S+ \+ \S+\) & 255\)", _lower(cp, path))
    cp = check(parsed(path))
    plus = next(
        n
        for d in cp.program.declarations
        if isinstance(d, ast.ControlDecl) and d.name == "IG"
        for n in ast.walk(d)
        if isinstance(n, ast.Binary) and n.op == "+"
    )
    cp.values[id(plus)] = (TBits(4), None)
    py = _lower(cp, path)
    assert re.search(r"\(\(\S+ \+ \S+\) & 15\)", py) and not re.search(
        r"\(\(\S+ \+ \S+\) & 255\)", py
    )


def test_a_type_per_instance_is_read_per_instance():
    """rt_ctor_width_per_instance: `t = t - 1` is bit<2> in one instance and bit<4> in the
    other; check keeps both and lowering writes `& 3` in one body and `& 15` in the other.
    Forging one instance's entry changes only that body."""
    path = PROGRAMS / "rt_ctor_width_per_instance.p4"
    cp = check(parsed(path))
    sub = next(
        d for d in cp.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "Sub"
    )
    minus = next(n for n in ast.walk(sub) if isinstance(n, ast.Binary) and n.op == "-")
    assert {k[0]: v for k, v in cp.inst_values.items() if k[1] == id(minus)} == {
        "IG.s2": (TBits(2), None),
        "IG.s4": (TBits(4), None),
    }
    py = _lower(cp, path)
    assert set(re.findall(r"\(\(\S+ - 1\) & (\d+)\)", py)) == {
        "3",
        "15",
    }  # each body: defined, spliced
    cp.inst_values[("IG.s4", id(minus))] = (TBits(3), None)
    assert set(re.findall(r"\(\(\S+ - 1\) & (\d+)\)", _lower(cp, path))) == {"3", "7"}


# ---------------------------------------------------------------------------- names

LOWER_DIR = CODEGEN.parent
EXTERNS_DIR = CODEGEN.parents[1] / "externs"


def name_lookups(source: str) -> list[str]:
    """Where `source` looks a P4 name up again by its string (a Scope's resolve/lookup, or
    check's Scope class itself) instead of reading the Sym check recorded."""
    found = []
    for node in pyast.walk(pyast.parse(source)):
        if (
            isinstance(node, pyast.Call)
            and isinstance(node.func, pyast.Attribute)
            and node.func.attr in ("resolve", "lookup")
        ):
            recv = node.func.value
            # the extern registry's lookup(kind) and a table's run-time lookup are not names
            if isinstance(recv, pyast.Name) and recv.id == "registry":
                continue
            if (
                isinstance(recv, pyast.Attribute)
                and recv.attr == "g"
                and node.args
                and isinstance(node.args[0], pyast.Constant)
                and node.args[0].value == "NoAction"
            ):
                continue  # the implicit default action p4c adds by name, no Name node
            found.append(f"{node.lineno}: .{node.func.attr}(")
        if (
            isinstance(node, pyast.ImportFrom)
            and node.module == "p4sim.check.names"
            and any(a.name == "Scope" for a in node.names)
        ):
            found.append(f"{node.lineno}: imports Scope")
    return found


def test_lowering_resolves_no_name_again():
    """p4sim/lower and the extern modules' lowering read check's Sym of each name."""
    files = sorted(LOWER_DIR.glob("*.py"))
    assert CODEGEN in files
    for path in files:
        assert name_lookups(path.read_text()) == [], path.name
    for path in sorted(EXTERNS_DIR.glob("*.py")):
        src = path.read_text()
        # only the lowering hooks (they take `cc`, the compiler); check hooks take `ck`
        for node in pyast.walk(pyast.parse(src)):
            if (
                isinstance(node, pyast.FunctionDef)
                and node.args.args[1:2]
                and node.args.args[1].arg == "cc"
            ):
                assert name_lookups(pyast.unparse(node)) == [], f"{path.name}: {node.name}"


def test_the_name_scan_sees_a_lookup():
    planted = [
        "sym = scope.resolve(e.name, e)\n",
        "sym = scope.lookup(x.name)\n",
        "from p4sim.check.names import Scope, Sym\n",
        "s = self.g.lookup('x')\n",
    ]
    for src in planted:
        assert name_lookups(src), src
    assert name_lookups("ext = registry.lookup(t.name)\nn = self.g.lookup('NoAction')\n") == []


def test_lowering_follows_the_declaration_check_resolved(tmp_path):
    """Forge check's Sym of one name (x made to stand for y): the generated code reads y's
    Python variable. A lowering looking `x` up again by its string would still read x."""
    ig = (
        "        bit<8> x = hdr.data.a;\n        bit<8> y = hdr.data.b;\n"
        "        hdr.data.c = (bit<16>)x;\n"
    )
    path = program(tmp_path, ig=ig)

    def assigned(cp) -> str:
        m = re.search(r"f_data\.f_c = (\w+)", _lower(cp, path))
        assert m, "no assignment to c"
        return m.group(1)

    def names(cp):
        ctl = next(
            d for d in cp.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "IG"
        )
        use = next(n for n in ast.walk(ctl) if isinstance(n, ast.Cast)).expr
        decl_y = next(n for n in ast.walk(ctl) if isinstance(n, ast.VariableDecl) and n.name == "y")
        return use, decl_y

    cp = check(parsed(path))
    assert assigned(cp).startswith("v_x_")
    cp = check(parsed(path))
    use, decl_y = names(cp)
    assert isinstance(use, ast.Name) and cp.names[id(use)].decl is not decl_y
    cp.names[id(use)] = Sym("var", "x", decl_y, TBits(8))  # the name x, declared by y's node
    assert assigned(cp).startswith("v_y_")


def test_a_name_check_never_resolved_is_an_internal_error(tmp_path):
    import pytest

    import p4sim.lower.codegen as cg

    path = program(tmp_path, ig="        hdr.data.b = hdr.data.a;")
    cp = check(parsed(path))
    ctl = next(
        d for d in cp.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "IG"
    )
    hdr = next(n for n in ast.walk(ctl.apply) if isinstance(n, ast.Name) and n.name == "hdr")
    del cp.names[id(hdr)]
    with pytest.raises(cg.LoweringError, match="a name the checker never resolved: 'hdr'"):
        _lower(cp, path)


# ---------------------------------------------------------------------------- no re-checks


def user_errors_raised(source: str) -> list[str]:
    """The raises in the lowering hooks of an extern module's source (methods taking the
    compiler `cc`) or in a lowering module, other than lowering's internal error."""
    found = []
    for node in pyast.walk(pyast.parse(source)):
        if not isinstance(node, pyast.FunctionDef):
            continue
        params = [a.arg for a in node.args.args]
        if "cc" not in params[:2] and not source.startswith("# lowering"):
            continue
        for sub in pyast.walk(node):
            if isinstance(sub, pyast.Raise) and sub.exc is not None:
                f = sub.exc.func if isinstance(sub.exc, pyast.Call) else sub.exc
                name = f.id if isinstance(f, pyast.Name) else getattr(f, "attr", "?")
                if name not in ("bug", "_internal"):
                    found.append(f"{node.name}:{sub.lineno}: {name}")
        for sub in pyast.walk(node):
            if isinstance(sub, pyast.Attribute) and sub.attr == "check_nargs":
                found.append(f"{node.name}:{sub.lineno}: check_nargs")
    return found


def test_extern_lowering_hooks_re_check_nothing():
    """check refused every wrong use of an extern (its declaration, the module's check_*
    hooks, and a use the module does not lower): the lowering hooks raise only lowering's
    internal error, and no hook counts arguments again."""
    seen = 0
    for path in sorted(EXTERNS_DIR.glob("*.py")):
        src = path.read_text()
        assert user_errors_raised(src) == [], path.name
        seen += "cc" in src
    assert seen > 10
    assert not any("def check_nargs" in p.read_text() for p in CODEGEN.parent.glob("*.py"))


def test_the_raise_scan_sees_a_user_error():
    planted = (
        "def call(self, cc, name, argv, c, scope, fn):\n"
        "    if not argv:\n        raise unsupported('x', c)\n"
    )
    assert user_errors_raised(planted) == ["call:3: unsupported"]
    assert user_errors_raised("def call(self, cc, argv, c):\n    cc.check_nargs('f', argv, c, 1)\n")
    # a check hook (it takes `ck`) raises the user's errors: not reported
    assert user_errors_raised("def check_call(self, ck, c):\n    raise unsupported('x', c)\n") == []
    assert user_errors_raised("def call(self, cc, c):\n    raise bug('x', c)\n") == []


UNLOWERED = '''
from p4sim.externs import Extern, extern
from p4sim.spec import ExternSpec


@extern
class Half(Extern):
    """Instances are lowered; no method is."""
    name = "half"

    def instantiate(self, cc, d, t, scope, name):
        return ExternSpec("", self.name, name)
'''


def test_a_method_the_module_does_not_lower_is_refused_by_check(tmp_path, monkeypatch):
    """What used to be found only by lowering's default hook (an extern method declared
    but with no lowering in its module) is refused by check, by name, at the call."""
    import sys

    import pytest

    from p4sim import externs
    from p4sim.frontend.errors import P4Unsupported

    pkg = tmp_path / "halfexterns"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "half.py").write_text(UNLOWERED)
    monkeypatch.syspath_prepend(str(tmp_path))
    externs.load_package("halfexterns")
    ext = externs.lookup("half")
    try:
        decl = "extern half { half(); bit<8> get(); }"
        ok = program(tmp_path, decls=decl, ig_locals="    half() h;", name="ok.p4")
        check(parsed(ok))  # an instance alone is fine
        bad = program(
            tmp_path,
            decls=decl,
            ig_locals="    half() h;",
            ig="        hdr.data.b = h.get();",
            name="bad.p4",
        )
        with pytest.raises(P4Unsupported, match="method get of extern half") as ei:
            check(parsed(bad))
        assert "h.get()" in Path(bad).read_text().splitlines()[ei.value.span.line - 1]
    finally:
        externs.unregister(type(ext))
        for m in [m for m in sys.modules if m.startswith("halfexterns")]:
            del sys.modules[m]


# ---------------------------------------------------------------------------- check without runtime


def test_check_imports_nothing_of_the_runtime():
    """check's const-entry rules are its own (p4sim/check/entries.py): no module of
    p4sim/check imports p4sim.runtime, lazily or not (the scan of test_externs_registry)."""
    from tests.p4sim.test_externs_registry import _imports

    files = sorted((CODEGEN.parents[1] / "check").glob("*.py"))
    assert len(files) > 5
    bad = {f"{f.name}: {m}" for f in files for m in _imports(f) if m.startswith("p4sim.runtime")}
    assert not bad, bad


def _entry_cases():
    from p4sim.model import Exact, KeyField, Lpm, Optional_, Range, TableEntry, Ternary
    from p4sim.spec import ActionSpec

    ex = [KeyField("a", "exact", 8, 1)]
    tern = [KeyField("a", "exact", 8, 1), KeyField("b", "ternary", 8, 2)]
    lpm = [KeyField("a", "lpm", 16, 1)]
    rng = [KeyField("r", "range", 8, 1)]
    opt = [KeyField("o", "optional", 8, 1)]
    acts = [ActionSpec("a1", (("v", 8),)), ActionSpec("d", (), "DEFAULT_ONLY")]

    def e(match, prio=0, action="a1"):
        return TableEntry("t", match, action, {"v": 1} if action == "a1" else {}, priority=prio)

    return [
        ("exact ok", ex, acts, [e({"a": Exact(1)}), e({"a": Exact(2)})]),
        ("exact duplicate", ex, acts, [e({"a": Exact(1)}), e({"a": Exact(1)})]),
        ("exact missing", ex, acts, [e({})]),
        ("mask on an exact key", ex, acts, [e({"a": Ternary(1, 0xF)})]),
        ("priority 0", tern, acts, [e({"a": Exact(1), "b": Ternary(1, 1)}, 0)]),
        (
            "same value, other priority",
            tern,
            acts,
            [e({"a": Exact(1), "b": Ternary(1, 1)}, 2), e({"a": Exact(1), "b": Ternary(1, 1)}, 1)],
        ),
        (
            "same value and priority",
            tern,
            acts,
            [e({"a": Exact(1), "b": Ternary(3, 1)}, 2), e({"a": Exact(1), "b": Ternary(1, 1)}, 2)],
        ),
        (
            "exact value on a ternary key",
            tern,
            acts,
            [e({"a": Exact(1), "b": Exact(5)}, 1), e({"a": Exact(1), "b": Ternary(5, 0xFF)}, 1)],
        ),
        ("ternary key left out", tern, acts, [e({"a": Exact(1)}, 1), e({"a": Exact(1)}, 1)]),
        ("lpm host bits", lpm, acts, [e({"a": Lpm(0x1234, 8)}), e({"a": Lpm(0x1299, 8)})]),
        ("lpm exact value", lpm, acts, [e({"a": Exact(0x1234)}), e({"a": Lpm(0x1234, 16)})]),
        ("range on an lpm key", lpm, acts, [e({"a": Range(1, 2)})]),
        ("bad range", rng, acts, [e({"r": Range(5, 2)}, 1)]),
        ("bad range by one", rng, acts, [e({"r": Range(3, 2)}, 1)]),
        ("one-value range", rng, acts, [e({"r": Range(3, 3)}, 1)]),
        ("range duplicate", rng, acts, [e({"r": Range(2, 5)}, 1), e({"r": Range(2, 5)}, 1)]),
        ("range from a value", rng, acts, [e({"r": Exact(3)}, 1), e({"r": Range(3, 3)}, 1)]),
        ("optional duplicate", opt, acts, [e({"o": Optional_(4)}, 1), e({"o": Exact(4)}, 1)]),
        ("mask on an optional key", opt, acts, [e({"o": Ternary(4, 4)}, 1)]),
        ("default-only action", ex, acts, [e({"a": Exact(1)}, 0, "d")]),
        ("keyless", [], acts, [e({}), e({})]),
    ]


def test_const_entry_rules_are_the_switch_table_rules():
    """Differential: on each case check's rules (check/entries.py) refuse the same entry
    with the same message as the switch's Table.add, or both accept every entry."""
    import copy

    from p4sim.check.entries import const_entry_error
    from p4sim.model import P4SimError, TableInfo
    from p4sim.runtime.tables import Table

    refused = 0
    for what, keys, acts, entries in _entry_cases():
        table = Table(TableInfo(name="t", keys=tuple(keys)), acts)
        want = None
        for i, te in enumerate(copy.deepcopy(entries)):
            try:
                table.add(te, const=True)
            except P4SimError as ex:
                want = (i, str(ex))
                break
        got = const_entry_error("t", keys, acts, entries)
        assert got == want, what
        refused += want is not None
    assert 8 <= refused < len(_entry_cases())  # both outcomes are exercised
