"""Constructor calls as constructor arguments, as p4c's MoveConstructors pass moves them
(frontends/p4/moveConstructors.cpp): inside a parser or control, `Outer(Inner()) o;` is
`Inner() tmp; Outer(tmp) o;`. The new instance's name is ReferenceMap::newName("tmp"): `tmp`
unless a declaration of the program (architecture files included) has that name, else
`tmp_0`, `tmp_1`... (lib/cstring make_unique); one name per constructor call of the source,
in program order, nested calls first (the pass rewrites in postorder), so every instance of
a control shares it, as the pass rewrites the control's declaration once.

Top-level instances (package arguments) are outside the pass: there a constructor call
stays an anonymous argument, which p4sim refuses by name.
"""

from __future__ import annotations

from p4sim.frontend import ast


def constructor_arg_names(program: ast.Program) -> dict[int, str]:
    """id(constructor call node) -> the name of the instance it becomes."""
    types = {
        d.name
        for d in program.declarations
        if isinstance(d, (ast.ControlDecl, ast.ParserDecl, ast.ExternDecl))
    }
    used = {
        getattr(n, "name", None)
        for n in ast.walk(program)
        if isinstance(n, (ast.Declaration, ast.Parameter, ast.Field))
    }
    out: dict[int, str] = {}

    def fresh() -> str:
        name, i = "tmp", 0
        while name in used:
            name, i = f"tmp_{i}", i + 1
        used.add(name)
        return name

    def visit_args(args: list[ast.Argument]) -> None:
        for a in args:
            e = a.value
            if (
                isinstance(e, ast.MethodCall)
                and isinstance(e.callee, ast.Name)
                and e.callee.name in types
            ):
                visit_args(e.args)  # postorder: a nested constructor call is moved first
                out[id(e)] = fresh()

    for d in program.declarations:
        if isinstance(d, (ast.ControlDecl, ast.ParserDecl)):
            for loc in d.locals:
                if isinstance(loc, ast.Instantiation):
                    visit_args(loc.args)
    return out


def move(
    d: ast.Instantiation, names: dict[int, str]
) -> tuple[list[ast.Instantiation], ast.Instantiation]:
    """The instances to declare before `d` (in order) and `d` with them passed by name."""
    if not any(id(a.value) in names for a in d.args):
        return [], d
    before: list[ast.Instantiation] = []
    args: list[ast.Argument] = []
    for a in d.args:
        e = a.value
        name = names.get(id(e))
        if name is None:
            args.append(a)
            continue
        assert isinstance(e, ast.MethodCall) and isinstance(e.callee, ast.Name)
        base = ast.NamedType(e.callee.name, top_level=e.callee.top_level, span=e.callee.span)
        ty: ast.Type = (
            ast.SpecializedType(base, list(e.type_args), span=e.span) if e.type_args else base
        )
        before.append(ast.Instantiation(name=name, type=ty, args=list(e.args), span=e.span))
        args.append(ast.Argument(ast.Name(name, span=e.span), name=a.name, span=a.span))
    return before, ast.Instantiation(
        name=d.name,
        type=d.type,
        args=args,
        initializer=d.initializer,
        annotations=d.annotations,
        span=d.span,
    )
