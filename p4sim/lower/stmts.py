"""Statement lowering: blocks, if/switch/for, variable declarations, assignment and
stores, stack-index guards, table apply and inlined actions.
A part of `codegen.Compiler` (a mixin: it uses the compiler's state and the other parts)."""

from __future__ import annotations

from p4sim.check.names import Sym
from p4sim.check.types import (
    TBits,
    TStack,
    TStruct,
    TVarbit,
    Type,
    mask,
    width_of,
)
from p4sim.frontend import ast
from p4sim.frontend.errors import LoweringError as LoweringError  # re-exported: tests, callers
from p4sim.frontend.errors import P4SourceError, bug
from p4sim.spec import TableSpec

from .env import Env
from .values import (
    V,
    _Fn,
    fld,
    vbw,
)


class StmtLowering:
    """Statements: methods of `codegen.Compiler`."""

    # ======================================================================= statements

    def block(self, b: ast.BlockStatement, scope: Env, fn: _Fn) -> None:
        inner = Env(scope)
        start = len(fn.lines)
        for s in b.statements:
            self.stmt(s, inner, fn)
        if len(fn.lines) == start:
            fn.emit("pass")

    def body(self, s: ast.Statement, scope: Env, fn: _Fn) -> None:
        fn.ind += 1
        start = len(fn.lines)
        if isinstance(s, ast.BlockStatement):
            self.block(s, scope, fn)
        else:
            self.stmt(s, Env(scope), fn)
        if len(fn.lines) == start:
            fn.emit("pass")
        fn.ind -= 1

    def stmt(self, s: ast.Node, scope: Env, fn: _Fn) -> None:
        if isinstance(s, ast.Unsupported):
            raise bug(s.what, s)
        if isinstance(s, ast.EmptyStatement):
            return
        if isinstance(s, ast.BlockStatement):
            fn.emit("if True:")
            self.body(s, scope, fn)
            return
        guards = self.stack_index_guards(s, scope, fn)
        if guards:
            # p4c (midend/hsIndexSimplify.cpp, HSIndexSimplifier::eliminateArrayIndexes) turns a
            # statement using hs[i] with a run-time i into `if (i == 0) ... else if (i == 1) ...`
            # with no final else: with i out of range the statement does nothing (an `if` takes
            # its else branch). BMv2 runs that; p4sim guards the statement the same way.
            if isinstance(s, ast.IfStatement):
                c = self.cond(s.cond, scope, fn)
                fn.emit(f"if {' and '.join(guards)} and {c}:")
                self.body(s.then, scope, fn)
                if s.else_ is not None:
                    fn.emit("else:")
                    self.body(s.else_, scope, fn)
                return
            if isinstance(s, ast.VariableDecl) and s.init is not None:
                # declared unguarded (default value), initialised under the guard
                self.var_decl(s, scope, fn, guards)
                return
            fn.emit(f"if {' and '.join(guards)}:")
            fn.ind += 1
            start = len(fn.lines)
            self.stmt_unguarded(s, scope, fn)
            if len(fn.lines) == start:
                fn.emit("pass")
            fn.ind -= 1
            return
        self.stmt_unguarded(s, scope, fn)

    def stack_index_guards(self, s: ast.Node, scope: Env, fn: _Fn) -> list[str]:
        """`index < size` for each run-time header-stack index the statement itself uses."""
        if id(s) not in self.checked.run_time_index_stmts:
            return []
        if isinstance(s, (ast.Assignment, ast.MethodCallStatement)):
            roots: list[ast.Node] = [s]
        elif isinstance(s, ast.IfStatement):
            roots = [s.cond]
        elif isinstance(s, ast.SwitchStatement):
            roots = [s.expr]
        elif isinstance(s, ast.VariableDecl) and s.init is not None:
            roots = [s.init]
        else:
            return []
        self.hoist_call_indexes(roots, scope, fn)
        return self._index_guards(roots, scope)

    def _index_guards(self, roots: list[ast.Node], scope: Env) -> list[str]:
        out: list[str] = []
        scratch = _Fn([], 0, self.tmp_counter)  # typing only: nothing it emits is kept
        stack = list(reversed(roots))
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Index):
                try:
                    base = self.expr(n.expr, scope, scratch)
                    idx = self.expr(n.index, scope, scratch)
                except P4SourceError:
                    return []  # the statement's own lowering reports it, located
                if isinstance(base.type, TStack) and not idx.is_const:
                    code = (
                        f"sx({idx.code}, {idx.type.width})"
                        if isinstance(idx.type, TBits) and idx.type.signed
                        else idx.code
                    )
                    out.append(f"0 <= {code} < {base.type.size}")
                if id(n.index) in self.index_memo:
                    # a hoisted index: what it read was guarded when it was computed
                    stack.append(n.expr)
                    continue
            stack.extend(reversed(list(n.children())))
        return out

    def hoist_call_indexes(self, roots: list[ast.Node], scope: Env, fn: _Fn) -> None:
        """A run-time stack index with a call in it is computed once, into a temporary, before
        the statement (check allows it in the statements stmt_index_guards handles). p4c does
        the same: frontends/p4/sideEffects.cpp (SideEffectOrdering, DoSimplifyExpressions) moves
        each call into a temporary in evaluation order (an assignment's left-hand side before
        its right-hand side), then midend/hsIndexSimplify.cpp guards each use of the
        temporary index. Inner indexes first; an index computed from an element at an
        out-of-range inner index is 0, the value BMv2 gives an unassigned local."""
        self.index_memo = {}
        order: list[ast.Index] = []

        def visit(n: ast.Node) -> None:  # postorder: an inner index before the one around it
            for c in n.children():
                visit(c)
            if isinstance(n, ast.Index) and any(
                isinstance(x, ast.MethodCall) for x in ast.walk(n.index)
            ):
                order.append(n)

        for root in roots:
            for part in [root.lhs, root.rhs] if isinstance(root, ast.Assignment) else [root]:
                visit(part)
        for n in order:
            obj, idx = self.checked.value(n.expr, self.inst), self.checked.value(n.index, self.inst)
            if obj is None or idx is None or not isinstance(obj[0], TStack) or idx[1] is not None:
                continue
            guards = self._index_guards([n.index], scope)
            idx_type = idx[0]
            t = fn.tmp("hi")
            if guards:
                fn.emit(f"{t} = 0")
                fn.emit(f"if {' and '.join(guards)}:")
                fn.ind += 1
            fn.emit(f"{t} = {self.expr(n.index, scope, fn).code}")
            if guards:
                fn.ind -= 1
            self.index_memo[id(n.index)] = V(t, idx_type)

    def stmt_unguarded(self, s: ast.Node, scope: Env, fn: _Fn) -> None:
        if isinstance(s, ast.VariableDecl):
            self.var_decl(s, scope, fn, [])
            return
        if isinstance(s, ast.ConstDecl):
            self.declare_const(s, scope)
            return
        if isinstance(s, ast.Assignment):
            self.assign(s.lhs, s.rhs, scope, fn)
            return
        if isinstance(s, ast.IfStatement):
            c = self.cond(s.cond, scope, fn)
            fn.emit(f"if {c}:")
            self.body(s.then, scope, fn)
            if s.else_ is not None:
                fn.emit("else:")
                self.body(s.else_, scope, fn)
            return
        if isinstance(s, ast.MethodCallStatement):
            self.call(s.call, scope, fn, stmt=True)
            return
        if isinstance(s, ast.SwitchStatement):
            self.switch(s, scope, fn)
            return
        if isinstance(s, (ast.ForStatement, ast.ForInStatement)):
            self.for_loop(s, scope, fn)
            return
        if isinstance(s, (ast.BreakStatement, ast.ContinueStatement)):
            fn.emit("break" if isinstance(s, ast.BreakStatement) else "continue")
            return
        if isinstance(s, ast.ReturnStatement):
            if fn.once_stack and fn.loops:
                # a Python break would leave only the loop: raise a flag every enclosing loop
                # of this body tests after it ends, then break
                flag = fn.loops[0][0] or fn.tmp("ret_flag")
                for lp in fn.loops:
                    lp[0] = flag
            if fn.once_stack:
                rv = fn.once_stack[-1]
                if s.value is not None:
                    # typed against the declared return type: `return {a, b};`, casts, ints
                    v = self.convert(self.expr(s.value, scope, fn), rv.type)
                    fn.emit(f"{rv.code} = {self.copy_code(v)}")
                if fn.loops:
                    fn.emit(f"{fn.loops[0][0]} = True")
                fn.emit("break")
            else:
                fn.emit(f"return {fn.parser_ret}" if fn.in_parser else "return")
            return
        if isinstance(s, ast.ExitStatement):
            fn.emit("raise Exit()")
            return
        raise bug(f"statement {type(s).__name__}", s)

    def var_decl(self, s: ast.VariableDecl, scope: Env, fn: _Fn, guards: list[str]) -> None:
        """A local variable; with guards (a run-time stack index in its initializer) it is
        declared with its default value and initialised only when the guards hold."""
        t = self.resolve_type(s.type, scope)
        py = "v_" + self.uid(s.name)
        if isinstance(t, TVarbit):
            # a box, so that the bits and their width move together as a field's do
            fn.emit(f"{py} = VarbitBox()")
            scope.add(Sym("var", s.name, s, t, py=py + ".f_v"))
            if s.init is not None:
                v = self.expr(s.init, scope, fn)
                fn.emit(f"{py}.f_v = {v.code}")
                fn.emit(f"{py}.wf_v = {vbw(v.code)}")
            return
        if s.init is not None and not guards:
            v = self.expr(s.init, scope, fn)
            fn.emit(f"{py} = {self.copy_code(self.convert(v, t))}")
        else:
            fn.emit(f"{py} = {self.default_value(t)}")
        scope.add(Sym("var", s.name, s, t, py=py))
        if s.init is not None and guards:
            fn.emit(f"if {' and '.join(guards)}:")
            fn.ind += 1
            if isinstance(s.init, (ast.ListExpression, ast.StructExpression)) and isinstance(
                t, TStruct
            ):
                self.assign_fields(V(py, t), t, s.init, scope, fn)
            else:
                fn.emit(f"{py} = {self.copy_code(self.convert(self.expr(s.init, scope, fn), t))}")
            fn.ind -= 1

    LOOP_LIMIT = 1 << 20  # iterations of one for loop per packet before p4sim gives up on it

    def for_loop(self, s: ast.ForStatement | ast.ForInStatement, scope: Env, fn: _Fn) -> None:
        """P4_16 1.2.4 loops. The C-style form runs its update before every test but the first
        (so `continue` still updates) and is capped at LOOP_LIMIT iterations: a loop that
        never ends (`bit<8> i; i < 300`) drops the packet with a logged error, not a hang."""
        inner = Env(scope)
        frame: list[str | None] = [None]
        outermost, at, ind = not fn.loops, len(fn.lines), fn.ind
        if isinstance(s, ast.ForInStatement):
            t = self.resolve_type(s.type, inner)
            py = "v_" + self.uid(s.var)
            if s.hi is not None:
                lo = self.convert(self.expr(s.collection, scope, fn), t)
                hi = self.convert(self.expr(s.hi, scope, fn), t)
                if t.signed:
                    rng = f"range(sx({lo.code}, {t.width}), sx({hi.code}, {t.width}) + 1)"
                    fn.emit(f"for {py} in {rng}:")
                    fn.emit(f"    {py} &= {mask(t.width)}")
                else:
                    fn.emit(f"for {py} in range({lo.code}, {hi.code} + 1):")
            else:
                coll = self.expr(s.collection, scope, fn)
                el = fn.tmp("el")
                # the loop variable is a copy of each element, in index order
                fn.emit(f"for {el} in {coll.code}.a:")
                fn.emit(f"    {py} = {el}.copy()")
            inner.add(Sym("var", s.var, s, t, py=py))
            fn.loops.append(frame)
            self.body(s.body, inner, fn)
            fn.loops.pop()
        else:
            for st in s.init:
                self.stmt(st, inner, fn)
            first, count = fn.tmp("first"), fn.tmp("iter")
            fn.emit(f"{first} = True")
            fn.emit(f"{count} = 0")
            fn.emit("while True:")
            fn.ind += 1
            if s.update:
                fn.emit(f"if {first}:")
                fn.emit(f"    {first} = False")
                fn.emit("else:")
                fn.ind += 1
                for st in s.update:
                    self.stmt(st, inner, fn)
                fn.ind -= 1
            if s.cond is not None:
                fn.emit(f"if not ({self.cond(s.cond, inner, fn)}): break")
            fn.emit(f"{count} += 1")
            fn.emit(
                f"if {count} > {self.LOOP_LIMIT}: "
                f"raise OverflowError('for loop at {s.span} ran {self.LOOP_LIMIT} iterations')"
            )
            fn.ind -= 1  # body() indents the loop body itself
            fn.loops.append(frame)
            self.body(s.body, inner, fn)
            fn.loops.pop()
        if frame[0] is not None:
            # a `return` inside: leave the enclosing loop too, or the inlined body
            fn.emit(f"if {frame[0]}: break")
            if outermost:
                fn.lines.insert(at, "    " * ind + f"{frame[0]} = False")

    def cond(self, e: ast.Expression, scope: Env, fn: _Fn) -> str:
        v = self.expr(e, scope, fn)
        return v.code

    def switch(self, s: ast.SwitchStatement, scope: Env, fn: _Fn) -> None:
        e = s.expr
        if isinstance(e, ast.Member) and e.member == "action_run":
            tsym = self.table_of(e.expr.callee.expr, scope)
            _, aid = self.table_apply(tsym, scope, fn)
            spec: TableSpec = tsym.value
            first = True
            pending: list[str] = []
            for case in s.cases:
                if isinstance(case.label, ast.DefaultKeyset):
                    cond = "True"
                else:
                    asym = self.sym(case.label, scope)
                    idx = next(
                        (i for i, a in enumerate(spec.actions) if a.name == asym.value), None
                    )
                    cond = f"{aid} == {idx}"
                pending.append(cond)
                if case.body is None:
                    continue
                c = " or ".join(f"({x})" for x in pending) if "True" not in pending else "True"
                pending = []
                fn.emit(f"{'if' if first else 'elif'} {c}:")
                first = False
                self.body(case.body, scope, fn)
            return
        v = self.expr(e, scope, fn)
        k = fn.tmp("sw")
        fn.emit(f"{k} = {v.code}")
        first = True
        pending = []
        for case in s.cases:
            if isinstance(case.label, ast.DefaultKeyset):
                pending.append("True")
            else:
                cv = self.convert(self.expr(case.label, scope, fn), v.type)
                pending.append(f"{k} == {cv.code}")
            if case.body is None:
                continue
            c = "True" if "True" in pending else " or ".join(pending)
            pending = []
            fn.emit(f"{'if' if first else 'elif'} {c}:")
            first = False
            self.body(case.body, scope, fn)

    # ------------------------------------------------------------------ assignment

    def copy_code(self, v: V) -> str:
        if isinstance(v.type, (TStruct, TStack)) and not v.code.endswith("()"):
            return f"{v.code}.copy()"
        return v.code

    def assign(self, lhs: ast.Expression, rhs: ast.Expression | V, scope: Env, fn: _Fn) -> None:
        lt = self.lvalue_type(lhs, scope, fn)
        if isinstance(rhs, V):
            rv = rhs
        else:
            if isinstance(rhs, ast.InvalidExpression):
                target = self.expr(lhs, scope, fn)
                fn.emit(f"{target.code}._v = False")  # check allows `{#}` for headers only
                return
            if isinstance(rhs, (ast.ListExpression, ast.StructExpression)) and isinstance(
                lt, TStruct
            ):
                self.assign_fields(self.expr(lhs, scope, fn), lt, rhs, scope, fn)
                return
            rv = self.expr(rhs, scope, fn)
        rv = self.convert(rv, lt)
        code = self.copy_code(rv)
        if isinstance(lt, TVarbit):
            # a varbit value is its bits and their current width: both move together
            dst = self.expr(lhs, scope, fn).code
            fn.emit(f"{dst} = {rv.code}")
            fn.emit(f"{vbw(dst)} = {vbw(rv.code)}")
            return
        self.store(lhs, code, scope, fn)

    def assign_fields(
        self, target: V, lt: TStruct, rhs: ast.Expression, scope: Env, fn: _Fn
    ) -> None:
        t = fn.tmp("o")
        fn.emit(f"{t} = {target.code}")
        names = [f for f, _ in lt.fields]
        if isinstance(rhs, ast.ListExpression):
            n = len(rhs.elements)
            pairs = list(zip(names[:n], rhs.elements, strict=True))
        else:
            pairs = [(nf.name, nf.value) for nf in rhs.fields]  # type: ignore[union-attr]
        given = {f for f, _ in pairs}
        if getattr(rhs, "dots", False):
            # `...`: the fields not written take their default values (zero, false,
            # invalid headers), as p4c's DefaultValues pass expands them
            pairs += [(f, None) for f in names if f not in given]
        # evaluate every value before writing any field: `p = {b = p.a, a = p.b}` swaps
        staged = []
        for fname, e in pairs:
            ft = lt.field_type(fname)
            if e is None and ft is not None:
                staged.append((fname, self.default_value(ft)))
                continue
            v = self.convert(self.expr(e, scope, fn), ft)  # nested {..}: a fresh temporary
            nested = isinstance(ft, TStruct) and isinstance(
                e, (ast.ListExpression, ast.StructExpression)
            )
            code = v.code if nested else self.copy_code(v)
            if not v.is_const:
                tv = fn.tmp("f")
                fn.emit(f"{tv} = {code}")
                code = tv
            staged.append((fname, code))
        for fname, code in staged:
            fn.emit(f"{t}.{fld(fname)} = {code}")
        if lt.kind == "header":
            fn.emit(f"{t}._v = True")

    def lvalue_type(self, e: ast.Expression, scope: Env, fn: _Fn) -> Type:
        if isinstance(e, ast.Name):
            return self.etype(e)
        # (lowered, not only typed: a stack's `next` writes its bounds test here, and the
        # generated code is kept as it was)
        return self.expr(e, scope, fn).type

    def store(self, lhs: ast.Expression, code: str, scope: Env, fn: _Fn) -> None:
        if isinstance(lhs, ast.Name):
            sym = self.sym(lhs, scope)
            if (
                isinstance(sym.type, (TStruct, TStack))
                and "." not in sym.py
                and sym.extra.get("dir") in ("inout", "out")
            ):
                # keep the caller's object: copy fields in place
                fn.emit(f"_src = {code}")
                self.copy_into(sym.py, "_src", sym.type, fn)
                return
            fn.emit(f"{sym.py} = {code}")
            return
        if isinstance(lhs, ast.Slice):
            base = self.expr(lhs.expr, scope, fn)
            hi = self.const_eval(lhs.hi, scope)
            lo = self.const_eval(lhs.lo, scope)
            m = mask(hi - lo + 1)
            newv = f"(({base.code}) & {~(m << lo) & mask(width_of(base.type))}) | ((({code}) & {m}) << {lo})"
            self.store(lhs.expr, newv, scope, fn)
            return
        if isinstance(lhs, ast.Member):
            obj = self.expr(lhs.expr, scope, fn)
            if isinstance(obj.type, TStack) and lhs.member in ("next", "last"):
                target = self.expr(lhs, scope, fn)
                fn.emit(f"_src = {code}")
                self.copy_into(target.code, "_src", obj.type.elem, fn)
                return
            if isinstance(obj.type, TStruct) and obj.type.kind == "union":
                ft = obj.type.field_type(lhs.member)
                fn.emit(f"{obj.code}.{fld(lhs.member)} = {code}")
                if isinstance(ft, TStruct):
                    for other, _ in obj.type.fields:
                        if other != lhs.member:
                            fn.emit(
                                f"if {obj.code}.{fld(lhs.member)}._v: {obj.code}.{fld(other)}._v = False"
                            )
                return
            fn.emit(f"{obj.code}.{fld(lhs.member)} = {code}")
            return
        if isinstance(lhs, ast.Index):
            obj = self.expr(lhs.expr, scope, fn)
            idx = self.expr(lhs.index, scope, fn)
            if isinstance(obj.type, TStack):
                fn.emit(f"{obj.code}.a[{self.stack_index(obj, idx, lhs)}] = {code}")
                return
        raise bug("this expression cannot be assigned to", lhs)

    def copy_into(self, dst: str, src: str, t: Type, fn: _Fn) -> None:
        if isinstance(t, TStruct):
            if t.kind == "header":
                fn.emit(f"{dst}._v = {src}._v")
            for fname, ft in t.fields:
                fn.emit(
                    f"{dst}.{fld(fname)} = {src}.{fld(fname)}"
                    + (".copy()" if isinstance(ft, (TStruct, TStack)) else "")
                )
                if isinstance(ft, TVarbit):
                    fn.emit(f"{dst}.w{fld(fname)} = {src}.w{fld(fname)}")
        elif isinstance(t, TStack):
            fn.emit(f"{dst}.a[:] = [h.copy() for h in {src}.a]")
            fn.emit(f"{dst}.n = {src}.n")

    def stack_index(self, obj: V, idx: V, node: ast.Node) -> str:
        assert isinstance(obj.type, TStack)
        if idx.is_const:
            return str(idx.const)
        return idx.code
