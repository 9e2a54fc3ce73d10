"""Direct invocation of a control or parser by its type name, `E.apply(...)`, as p4c's
InstantiateDirectCalls pass (frontends/p4/directCalls.cpp, `DoInstantiateCalls::postorder`)
rewrites it: one fresh instance per call site, `@name("E") E() E_inst;`, declared among the
enclosing control's (or parser's) locals, and the call becomes `E_inst.apply(...)`. The
instance's name is ReferenceMap::newName("E_inst"): `E_inst` unless a declaration of the
program has that name, else `E_inst_0`, `E_inst_1`... (lib/cstring make_unique); its
control-plane name comes from the @name annotation, so tables and counters inside it are
named `<caller>.E.<name>`, as in p4c's P4Info.

The rewrite is done on the tree itself, before checking, so check and lowering both see an
ordinary instance. A name that is a local, parameter or constructor parameter of the block
is left alone (it shadows the type), and so is a parser type applied in a control or a
control type in a parser (the apply check refuses those by name). A type with constructor
parameters cannot be applied this way (P4_16 spec, "Direct type invocation": only types
without constructor parameters; p4c refuses the instance it creates for lacking arguments).
"""

from __future__ import annotations

from p4sim.frontend import ast

from .types import err


def instantiate_direct_calls(program: ast.Program) -> None:
    types = {
        d.name: d for d in program.declarations if isinstance(d, (ast.ControlDecl, ast.ParserDecl))
    }
    used = {
        getattr(n, "name", None)
        for n in ast.walk(program)
        if isinstance(n, (ast.Declaration, ast.Parameter, ast.Field))
    }

    def fresh(base: str) -> str:
        name, i = base, 0
        while name in used:
            name, i = f"{base}_{i}", i + 1
        used.add(name)
        return name

    for d in program.declarations:
        if not isinstance(d, (ast.ControlDecl, ast.ParserDecl)):
            continue
        shadow = {p.name for p in [*d.params, *d.ctor_params]} | {loc.name for loc in d.locals}
        bodies: list[ast.Node] = [d.apply] if isinstance(d, ast.ControlDecl) else list(d.states)
        added: list[ast.Declaration] = []
        for body in bodies:
            for n in ast.walk(body):
                if not (
                    isinstance(n, ast.MethodCall)
                    and isinstance(n.callee, ast.Member)
                    and n.callee.member == "apply"
                    and isinstance(n.callee.expr, ast.Name)
                ):
                    continue
                base = n.callee.expr
                target = types.get(base.name)
                if target is None or (base.name in shadow and not base.top_level):
                    continue
                if type(target) is not type(d):
                    continue
                if target.ctor_params:
                    raise err(
                        f"{base.name} has constructor parameters: it cannot be applied by "
                        f"its type name (declare an instance with arguments)",
                        n,
                    )
                name = fresh(f"{base.name}_inst")
                label = ast.Annotation(
                    "name", exprs=[ast.StringLiteral(base.name, span=base.span)], span=base.span
                )
                added.append(
                    ast.Instantiation(
                        name=name,
                        type=ast.NamedType(base.name, span=base.span),
                        args=[],
                        annotations=[label],
                        span=n.span,
                    )
                )
                n.callee.expr = ast.Name(name, span=base.span)
        d.locals.extend(added)  # appended after the block's own locals, as the pass does
