"""Direct type invocation (`E.apply(...)`): the hidden instances p4c's InstantiateDirectCalls
(frontends/p4/directCalls.cpp) creates, with its names."""

from __future__ import annotations

from pathlib import Path

from p4sim.check.direct_calls import instantiate_direct_calls
from p4sim.frontend import ast, parse_program

PROG = Path(__file__).parent / "programs" / "direct_apply.p4"


def _block(program: ast.Program, name: str):
    return next(d for d in program.declarations if getattr(d, "name", None) == name)


def test_one_instance_per_call_site_named_as_p4c_names_it(tmp_path):
    src = PROG.read_text().replace(
        "        Bump.apply(hdr.h.r);\n",
        "        Bump.apply(hdr.h.r);\n        Bump.apply(hdr.h.k);\n",
    )
    # a declaration named Bump_inst already exists: newName moves on to Bump_inst_0, _1
    src = src.replace("struct meta_t { }", "struct meta_t { bit<8> Bump_inst; }")
    p = tmp_path / "two.p4"
    p.write_text(src)
    program = parse_program(str(p))
    instantiate_direct_calls(program)
    ing = _block(program, "I")
    inst = [d for d in ing.locals if isinstance(d, ast.Instantiation)]
    assert [d.name for d in inst] == ["Bump_inst_0", "Bump_inst_1"]
    assert [d.annotation("name").string_value() for d in inst] == ["Bump", "Bump"]
    assert all(
        isinstance(d.type, ast.NamedType) and d.type.name == "Bump" and not d.args for d in inst
    )
    calls = [
        n
        for n in ast.walk(ing.apply)
        if isinstance(n, ast.MethodCall)
        and isinstance(n.callee, ast.Member)
        and n.callee.member == "apply"
    ]
    assert [c.callee.expr.name for c in calls] == ["Bump_inst_0", "Bump_inst_1"]
    sub = [d.name for d in _block(program, "P").locals if isinstance(d, ast.Instantiation)]
    assert sub == ["Sub_inst"]


def test_a_local_of_the_same_name_shadows_the_type(tmp_path):
    src = PROG.read_text().replace(
        "    apply {\n        Bump.apply(hdr.h.r);",
        "    Bump2() Bump;\n    apply {\n        Bump.apply(hdr.h.r);",
    )
    src = src.replace(
        "control I(", "control Bump2(inout bit<8> x) { apply { x = 9; } }\n\ncontrol I("
    )
    p = tmp_path / "shadow.p4"
    p.write_text(src)
    program = parse_program(str(p))
    instantiate_direct_calls(program)
    assert [d.name for d in _block(program, "I").locals] == ["Bump"]  # nothing added
