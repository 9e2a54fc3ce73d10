"""The pass boundary: `p4sim.check.check()` finds every error; `p4sim.lower` only translates.

- every reject program of the corpus (and the inline error cases) fails inside check()
  alone, lowering never called, at the line:column and with the message its header gives;
- check() alone accepts every corpus program that runs, and roce_switch.p4;
- no module of p4sim/lower raises or imports P4TypeError (an AST scan).
"""

from __future__ import annotations

import ast as pyast
import os
from pathlib import Path

import pytest

from p4sim.check import CheckedProgram, check
from p4sim.check.types import TBits, TStruct
from p4sim.frontend import ast, parse_program
from p4sim.frontend.errors import P4SourceError, P4Unsupported
from p4sim.lower import ARCH_DIR
from tests.p4sim.p4sim_helpers import program
from tests.p4sim.test_corpus import P4SRC, REJECT, RUN, _expectation

LOWER = Path(__file__).resolve().parents[2] / "p4sim" / "lower"


def parsed(path: Path | str, include=()) -> ast.Program:
    dirs = [str(d) for d in include] + [os.path.dirname(os.path.abspath(path)), ARCH_DIR]
    return parse_program(str(path), include_dirs=dirs)


def check_only(path: Path | str, monkeypatch: pytest.MonkeyPatch, include=()) -> CheckedProgram:
    """check() with lowering made unusable: whatever it reports, lowering did not."""
    import p4sim.lower.codegen as cg

    def no_lowering(*a, **k):
        raise AssertionError("lowering was called")

    monkeypatch.setattr(cg.Compiler, "__init__", no_lowering)
    return check(parsed(path, include))


@pytest.mark.parametrize("prog", REJECT, ids=lambda p: p.stem)
def test_reject_program_fails_in_check(prog: Path, monkeypatch):
    line, col, fragment = _expectation(prog)
    try:
        tree = parsed(prog)
    except P4SourceError as e:
        # refused before checking (preprocessor/parser): that refusal is the expected one
        assert (e.span.line, e.span.column) == (line, col), e.headline()
        assert fragment in e.headline(), e.headline()
        return
    import p4sim.lower.codegen as cg

    monkeypatch.setattr(
        cg.Compiler, "__init__", lambda *a, **k: (_ for _ in ()).throw(AssertionError)
    )
    with pytest.raises(P4SourceError) as ei:
        check(tree)
    e = ei.value
    assert (e.span.line, e.span.column) == (line, col), e.headline()
    assert fragment in e.headline(), e.headline()


@pytest.mark.parametrize("prog", RUN, ids=lambda p: p.stem)
def test_check_accepts_corpus_program(prog: Path, monkeypatch):
    cp = check_only(prog, monkeypatch)
    assert isinstance(cp.hdr_type, TStruct) and cp.hdr_type.kind == "struct"


def test_check_accepts_roce_switch_and_types_every_expression(monkeypatch):
    cp = check_only(P4SRC / "roce_switch.p4", monkeypatch, include=[P4SRC])
    # every expression of the user's own code has its type (nothing left for lowering to infer)
    main_file = cp.program.main_file
    mine = [d for d in cp.program.declarations if d.span.file.startswith(str(P4SRC))]
    # not values: callees, annotation arguments, state names, action references
    skip = {
        id(x)
        for d in mine
        for n in ast.walk(d)
        for x in (
            [n.callee]
            if isinstance(n, ast.MethodCall)
            else [n.state]
            if isinstance(n, ast.SelectCase)
            else [n.target]
            if isinstance(n, ast.TransitionStatement)
            else [n.name]
            if isinstance(n, ast.ActionRef)
            else [y for a in n.annotations for y in ast.walk(a)]
            if isinstance(n, ast.Annotated)
            else []
        )
    }
    untyped = [
        n
        for d in mine
        for n in ast.walk(d)
        if isinstance(n, ast.Expression)
        and not isinstance(n, (ast.DefaultKeyset, ast.TupleKeyset, ast.SelectExpression))
        and n.checked_type is None
        and id(n) not in skip
    ]
    assert main_file.endswith("roce_switch.p4")
    assert not untyped, [f"{n.span}: {type(n).__name__}" for n in untyped[:5]]
    # every name is resolved, and what it resolves to is recorded (annotation arguments and
    # the accept/reject states are not names)
    anns = {
        id(y)
        for d in mine
        for n in ast.walk(d)
        if isinstance(n, ast.Annotated)
        for a in n.annotations
        for y in ast.walk(a)
    }
    names = [
        n
        for d in mine
        for n in ast.walk(d)
        if isinstance(n, ast.Name) and id(n) not in anns and n.name not in ("accept", "reject")
    ]
    unresolved = [f"{n.span}: {n.name}" for n in names if id(n) not in cp.names]
    assert len(names) > 300 and not unresolved, unresolved[:5]
    hdr = next(n for n in names if n.name == "hdr")
    assert cp.names[id(hdr)].kind == "var" and cp.names[id(hdr)].type is cp.hdr_type
    # what lowering reads: constants folded, error codes, resolved types of written types
    assert cp.errors["NoError"] == 0 and "HeaderTooShort" in cp.errors
    sm = cp.std_meta_type
    assert sm.name == "standard_metadata_t" and sm.field_type("egress_spec") == TBits(9)


@pytest.mark.parametrize(
    "ig, fragment",
    [
        ("hdr.data.nosuch = 1;", "has no field 'nosuch'"),
        ("undefined_var = 1;", "unknown name 'undefined_var'"),
        ("hdr.data.a = hdr.data.c;", "cannot assign bit<16> to bit<8>"),
        ("if (hdr.data.a) { }", "condition must be bool"),
        ("hdr.data.a = hdr.data.a + hdr.data.c;", "different types"),
        ("hdr.data.a = hdr.data.a[9:2];", "out of range"),
        ("nosuch_table.apply();", "unknown name 'nosuch_table'"),
        ("hdr.data.a = (bit<8>)hdr;", "cannot cast headers_t to bit<8>"),
        ("bit<8> z = 1; z.apply();", "only tables and control instances can be applied"),
        ("mark_to_drop(sm, sm);", "mark_to_drop takes 0 or 1 arguments, 2 given"),
        (
            "hash(hdr.data.a, HashAlgorithm.crc16, 8w0, { hdr.data.a, true, 1 }, 8w4);",
            "cannot put a int in",
        ),
        ("random(4, 8w0, 8w1);", "this expression cannot be assigned to"),
        ("hdr.data.setValid(); exit; return 1;", "return with a value in a control"),
        ("sm.egress_spec = hdr.data.a;", "cannot assign bit<8> to bit<9> without a cast"),
        ("pkt_nosuch.emit(hdr);", "unknown name 'pkt_nosuch'"),
        ("switch (hdr.data.a) { 1w1: {} }", "cannot assign bit<1> to bit<8>"),
    ],
)
def test_body_errors_found_by_check_alone(tmp_path, monkeypatch, ig, fragment):
    path = program(tmp_path, ig="        " + ig)
    with pytest.raises(P4SourceError) as ei:
        check_only(path, monkeypatch)
    assert fragment in ei.value.reason
    assert ei.value.span.file.endswith("prog.p4")


@pytest.mark.parametrize(
    "local, fragment",
    [
        ("packet_out() po;", "packet_out declares no constructor"),
        ("counter(32w8) c;", "counter's constructor takes 2 arguments, 1 given"),
        (
            "counter(32w8, CounterType.packets) c; action a() { c.count(8w1); }",
            "cannot assign bit<8> to bit<32>",
        ),
        (
            "register<bit<8>>(4) r; action a() { r.write(0, 16w1); }",
            "cannot assign bit<16> to bit<8>",
        ),
        (
            "register<bit<8>>(4) r; action a() { r.read(8w1, 0); }",
            "this expression cannot be assigned to",
        ),
        ("action a() { clone(CloneType.I2E); }", "clone takes 2 arguments, 1 given"),
        (
            "action a() { hash(hdr.data.a, HashAlgorithm.crc16, 8w0, { hdr.data.a }); }",
            "hash takes 5 arguments",
        ),
    ],
)
def test_extern_uses_checked_against_their_declarations(tmp_path, monkeypatch, local, fragment):
    """Extern instances and calls are typed from arch/v1model.p4's declarations (the
    constructor, the method's and function's parameters with their type parameters bound)."""
    path = program(tmp_path, ig_locals="    " + local)
    with pytest.raises(P4SourceError) as ei:
        check_only(path, monkeypatch)
    assert fragment in ei.value.reason, ei.value.headline()


def test_bad_const_entry_and_unused_action_found_by_check_alone(tmp_path, monkeypatch):
    locals_ = """
    action a(bit<8> v) { hdr.data.b = v; }
    table t { key = { hdr.data.a: exact; } actions = { a; } const entries = { 1: a(1); 1: a(2); } }
    """
    with pytest.raises(P4SourceError, match="already exists"):
        check_only(program(tmp_path, ig_locals=locals_), monkeypatch)
    unused = "    action never_used(bit<8> v) { hdr.data.nope = v; }\n"
    with pytest.raises(P4SourceError, match="no field 'nope'"):
        check_only(program(tmp_path, ig_locals=unused, name="p2.p4"), monkeypatch)


def _lower_sources() -> list[Path]:
    return sorted(LOWER.glob("*.py"))


def test_lower_never_raises_type_errors():
    """An AST scan: no p4sim/lower module imports P4TypeError, P4Unsupported or check's error
    builders (`err`, `unsupported`), nor names P4TypeError; every `raise` there is
    `bug(...)` (an internal error: the checker let something through), but for the
    located wrapper of a RecursionError of the whole load."""
    assert _lower_sources(), LOWER
    raised: dict[str, int] = {}
    for path in _lower_sources():
        tree = pyast.parse(path.read_text(), str(path))
        for node in pyast.walk(tree):
            if isinstance(node, pyast.ImportFrom):
                names = {a.name for a in node.names}
                bad = names & {"P4TypeError", "P4Unsupported", "err", "unsupported"}
                assert not bad, f"{path.name}:{node.lineno} imports {bad}"
            if isinstance(node, pyast.Name):
                assert node.id not in ("P4TypeError", "P4Unsupported"), f"{path.name}:{node.lineno}"
            if isinstance(node, pyast.Attribute):
                assert node.attr not in ("P4TypeError", "P4Unsupported"), (
                    f"{path.name}:{node.lineno}"
                )
            if isinstance(node, pyast.Raise) and node.exc is not None:
                assert isinstance(node.exc, pyast.Call) and isinstance(node.exc.func, pyast.Name), (
                    f"{path.name}:{node.lineno}"
                )
                raised[node.exc.func.id] = raised.get(node.exc.func.id, 0) + 1
    assert raised.pop("P4SourceError", 0) <= 1  # "program too deeply nested"
    assert set(raised) == {"bug"}, raised
    assert raised["bug"] > 20  # the scan saw lowering's internal-error raises


def test_type_varying_per_instance_is_left_to_each_instance(monkeypatch):
    """`bit<W>` with W a constructor parameter has one type per instance: check marks the
    node (type_of None) and keeps each instance's type, which lowering reads."""
    prog = Path(__file__).parent / "programs" / "rt_ctor_width_per_instance.p4"
    cp = check_only(prog, monkeypatch)
    sub = next(
        d for d in cp.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "Sub"
    )
    decl = sub.apply.statements[0]
    assert isinstance(decl, ast.VariableDecl) and cp.type_of(decl.type) is None
    assert [cp.type_of(decl.type, inst) for inst in ("IG.s2", "IG.s4")] == [TBits(2), TBits(4)]
    # a type the same in every instance is read from the check results
    assert cp.type_of(sub.params[0].type) is cp.hdr_type


MARK_TO_DROP = """
action drop_old() { mark_to_drop(); }
"""


def test_bare_mark_to_drop_needs_standard_metadata_at_the_call(tmp_path, monkeypatch):
    """The deprecated mark_to_drop() of a top-level action acts on the standard metadata of
    the block that runs it: fine in ingress, refused (by check) where there is none."""
    ok = program(tmp_path, decls=MARK_TO_DROP, ig="        drop_old();")
    check_only(ok, monkeypatch)
    bad = program(
        tmp_path,
        name="bad.p4",
        decls=MARK_TO_DROP,
        eg_locals="    table t { actions = { drop_old; } default_action = drop_old(); }",
        eg="        t.apply();",
    )
    check_only(bad, monkeypatch)  # egress has standard_metadata too
    src = (
        Path(bad)
        .read_text()
        .replace(
            "control VC(inout headers_t hdr, inout meta_t meta) { apply { } }",
            "control VC(inout headers_t hdr, inout meta_t meta) { apply { drop_old(); } }",
        )
    )
    Path(bad).write_text(src)
    with pytest.raises(P4Unsupported, match="no standard_metadata is in scope") as ei:
        check_only(bad, monkeypatch)
    assert src.splitlines()[ei.value.span.line - 1].strip().startswith("action drop_old()")


def test_what_check_let_through_is_a_located_internal_error(tmp_path):
    """Lowering never reports a user's error; if it meets something check should have
    refused (here a statement forged into the tree after checking) it says so, located,
    as one P4SourceError line, not a traceback."""
    import p4sim.lower.codegen as cg

    path = program(tmp_path, ig="        hdr.data.a = 1;")
    cp = check(parsed(path))
    ig = next(
        d for d in cp.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "IG"
    )
    stmt = ig.apply.statements[-1]
    ig.apply.statements[-1] = ast.Unsupported("forged", span=stmt.span)
    with pytest.raises(cg.LoweringError) as ei:
        cg.Compiler(cp, path).compile()
    e = ei.value
    assert not isinstance(e, P4Unsupported)
    assert e.headline().startswith(
        f"{path}:{stmt.span.line}:{stmt.span.column}: error: internal error"
    )
    assert "\n" not in e.headline()
