"""The typed emission: the generated Python made into Cython pure-Python-mode code whose
headers and structs are `cython.cclass` types with C integer fields, and whose arithmetic
runs in C only where that is provably exact.

Input is the generated module (lowered from the same checked program, parser as a state
dispatch: `Compiler(parser_inline_limit=0)`) and the program's header/struct types. The
rewrite is on the Python syntax tree and changes no operation's value:

- header/struct classes become `@cython.cclass`: a field of type bit<W>/int<W> with
  W <= 62 is a C `long long`, a nested header/struct its class, `_v` a `bint`, anything else
  (wider fields, bool, enum, error, stacks, varbit) `object`; `copy()` copies field by field.
- pipeline entry points get their parameters typed (hdr/meta/standard_metadata), functions
  called only from generated code get the types their call sites agree on, and locals
  assigned only from typed header/struct expressions are declared of that class.
- the module runs with `infer_types=False`: every other local is a Python object. Cython
  computes an operator in C when its operands are C values; C differs from Python ints on
  overflow and on shifts by >= 64 or by negative amounts. Each operator's value range is
  bounded from its operands' (field widths, constants); one that is not proven to stay
  exact (within +-2**62, shift counts known in range) gets its operands cast to `object`,
  so Python computes it. `//` and `%` keep Cython's default cdivision=False (Python's
  floor semantics and ZeroDivisionError).
"""

from __future__ import annotations

import ast
import copy
import textwrap
from typing import Any

from p4sim.check.types import TBits, TStack, TStruct, TVarbit
from p4sim.lower import CompiledProgram
from p4sim.lower.codegen import fld

from .build import CompileUnavailable
from .drive import IMPORTS as DRIVE_IMPORTS
from .drive import drive_source

BOUND = 1 << 62  # |value| a C long long expression may reach (int64 with a margin)
MAX_C_WIDTH = 62
FREELIST = 16  # freed objects of each cclass kept for reuse

Iv = tuple[int, int] | None  # value interval, None: unknown (a Python object, or unbounded)
# static type of an expression: ("cls", name) | ("ll",) | ("bint",) | None (object)
T = tuple | None


class Typing:
    """Field types of the generated header/struct classes."""

    def __init__(self, struct_types: dict[str, TStruct]):
        self.classes: dict[str, dict[str, tuple[T, Iv]]] = {}
        self.nested: dict[str, list[str]] = {}  # fields copied with .copy() (structs, stacks)
        # struct.Struct formats of the headers' extract: class name and its module alias -> format
        self.formats: dict[str, str] = {}
        self.no_init: set[str] = set()  # cclasses without __init__ (every field a zeroed C field)
        # cclasses with an __init__ of field assignments that a C function `_p4new_<name>()`
        # also makes: the same object without a call of the type (tp_call, tp_init)
        self.makers: set[str] = set()
        self.wide: dict[
            str, dict[str, int]
        ] = {}  # bit<W> fields kept as objects: class -> field -> W
        for t in struct_types.values():
            if t.kind in ("header", "struct") and t.pycls:
                self.classes[t.pycls] = {}
        for t in struct_types.values():
            if t.pycls not in self.classes:
                continue
            f: dict[str, tuple[T, Iv]] = {}
            nested = []
            if t.kind == "header":
                f["_v"] = (("bint",), (0, 1))
            for pname, ft in t.fields:
                a = fld(pname)
                if type(ft) is TBits and ft.width <= MAX_C_WIDTH:
                    lo = -(1 << (ft.width - 1)) if ft.signed and ft.width else 0
                    f[a] = (("ll",), (lo, (1 << ft.width) - 1))
                elif isinstance(ft, TStruct) and ft.pycls in self.classes:
                    f[a] = (("cls", ft.pycls), None)
                else:
                    f[a] = (None, None)  # wide, bool, enum, error, union, stack, varbit
                    if type(ft) is TBits and not ft.signed:
                        self.wide.setdefault(t.pycls, {})[a] = ft.width
                if isinstance(ft, (TStruct, TStack)):
                    nested.append(a)  # copied with .copy(), as the generated copy() does
                if isinstance(ft, TVarbit):
                    f["w" + a] = (None, None)
            self.classes[t.pycls] = f
            self.nested[t.pycls] = nested


# ---------------------------------------------------------------------- intervals


def _ok(lo: int, hi: int) -> Iv:
    return (lo, hi) if -BOUND <= lo and hi <= BOUND else None


def _bits_iv(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    if a[0] >= 0 and b[0] >= 0:
        return (0, (1 << max(a[1].bit_length(), b[1].bit_length())) - 1)
    k = max(abs(x).bit_length() for x in (*a, *b)) + 1
    return (-(1 << k), (1 << k) - 1)


def binop_iv(op: ast.operator, a: Iv, b: Iv) -> Iv:
    """The interval of `a op b` when C long long arithmetic gives Python's value for every
    operand in the intervals; None when it may not (then Python must compute it)."""
    if a is None or b is None:
        return None
    (al, ah), (bl, bh) = a, b
    if isinstance(op, ast.Add):
        return _ok(al + bl, ah + bh)
    if isinstance(op, ast.Sub):
        return _ok(al - bh, ah - bl)
    if isinstance(op, ast.Mult):
        c = [al * bl, al * bh, ah * bl, ah * bh]
        return _ok(min(c), max(c))
    if isinstance(op, ast.BitAnd):
        if al >= 0 and bl >= 0:
            return (0, min(ah, bh))
        if al >= 0:
            return (0, ah)
        if bl >= 0:
            return (0, bh)
        return _bits_iv(a, b)
    if isinstance(op, (ast.BitOr, ast.BitXor)):
        return _bits_iv(a, b)
    if isinstance(op, ast.LShift):
        # C: a negative left operand or a count >= 64 (or < 0) is undefined
        if al < 0 or bl < 0 or bh > MAX_C_WIDTH:
            return None
        return _ok(al << bl, ah << bh)
    if isinstance(op, ast.RShift):
        if bl < 0 or bh > 63:
            return None
        c = [al >> bl, al >> bh, ah >> bl, ah >> bh]
        return (min(c), max(c))
    if isinstance(op, ast.FloorDiv) and bl >= 1:
        c = [al // bl, al // bh, ah // bl, ah // bh]
        return (min(c), max(c))
    if isinstance(op, ast.Mod) and bl >= 1:
        return (0, bh - 1)
    return None  # /, **, @, a divisor that may be 0 or negative


def _union(ivs: list[Iv]) -> Iv:
    if any(iv is None for iv in ivs):
        return None
    return (min(iv[0] for iv in ivs), max(iv[1] for iv in ivs))  # type: ignore[index]


def _fold(node: ast.BinOp) -> ast.Constant | None:
    """`c1 op c2` of two int constants, computed by Python (None when not both ints, or a
    shift/power too large to compute)."""
    a, b = node.left, node.right
    if not (
        isinstance(a, ast.Constant)
        and isinstance(b, ast.Constant)
        and type(a.value) is int
        and type(b.value) is int
    ):
        return None
    x, y = a.value, b.value
    if isinstance(node.op, (ast.LShift, ast.Pow)) and not 0 <= y <= 4096:
        return None
    ops = {
        ast.Add: x.__add__,
        ast.Sub: x.__sub__,
        ast.Mult: x.__mul__,
        ast.BitAnd: x.__and__,
        ast.BitOr: x.__or__,
        ast.BitXor: x.__xor__,
        ast.LShift: x.__lshift__,
        ast.RShift: x.__rshift__,
    }
    f = ops.get(type(node.op))
    if f is None or (isinstance(node.op, ast.RShift) and y < 0):
        return None
    v = f(y)
    return ast.Constant(v) if v >= 0 else None  # a negative literal would be a UnaryOp again


def to_object(node: ast.expr) -> ast.expr:
    """`cython.cast(object, node)`: Python computes whatever uses it."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, (bool, int)):
        return node
    return ast.Call(
        ast.Attribute(ast.Name("cython", ast.Load()), "cast", ast.Load()),
        [ast.Name("object", ast.Load()), node],
        [],
    )


# ---------------------------------------------------------------------- functions


class _Expr(ast.NodeTransformer):
    """Types expressions in one function (env: name -> class) and casts the operands of
    every operator not proven exact in C."""

    def __init__(
        self, typing: Typing, env: dict[str, str], ints: dict[str, tuple[int, int]] | None = None
    ):
        self.ty = typing
        self.env = env
        self.ints = ints or {}  # C long long locals and their intervals

    def an(self, node: ast.expr) -> tuple[ast.expr, T, Iv]:
        new = self.visit(node)
        # on the node itself (an id() could be reused by a node made later); a node type
        # not handled here is a Python object (tuple, list, f-string...)
        t, iv = getattr(new, "_p4t", (None, None))
        return new, t, iv

    def _set(self, node: ast.expr, t: T, iv: Iv) -> ast.expr:
        node._p4t = (t, iv)  # type: ignore[attr-defined]
        return node

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.ints:
            return self._set(node, ("ll",), self.ints[node.id])
        c = self.env.get(node.id)
        return self._set(node, ("cls", c) if c else None, None)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if (
            ast.unparse(node.func) == "cython.cast"
            and len(node.args) == 2
            and ast.unparse(node.args[0]) == "cython.longlong"
            and isinstance(node.args[1], ast.Subscript)
            and isinstance(node.args[1].value, ast.Name)
            and node.args[1].value.id == BYTES_PTR
        ):
            return self._set(node, ("ll",), (0, 255))  # a byte of the packet (typed_extracts')
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "_csum_fold"
            and len(node.args) == 1
            and not node.keywords
        ):
            node.args[0], _, a = self.an(node.args[0])
            if a is not None and a[0] >= 0:  # p4sim.lower.rt.csum_fold's steps, in C (CSUM_FOLD)
                node.func = ast.Name("_csum_fold_c", ast.Load())
                return self._set(node, ("ll",), (0, 65535))
            node.args[0] = to_object(node.args[0])
            return self._set(node, None, None)
        self.generic_visit(node)
        return self._set(node, None, None)

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        v = node.value
        if isinstance(v, bool):
            return self._set(node, ("bint",), (int(v), int(v)))
        if isinstance(v, int) and -BOUND <= v <= BOUND:
            return self._set(node, ("ll",), (v, v))
        return self._set(node, None, None)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        base, bt, _ = self.an(node.value)
        node.value = base
        if bt is not None and bt[0] == "cls":
            ft = self.ty.classes.get(bt[1], {}).get(node.attr)
            if ft is not None:
                return self._set(node, ft[0], ft[1])
        return self._set(node, None, None)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        node.left, ta, a = self.an(node.left)
        node.right, tb, b = self.an(node.right)
        folded = _fold(node)
        if folded is not None:
            # C would compute constant operands in (32-bit) int: Python folds them here
            return self.visit_Constant(folded)
        if isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant):
            ta = tb = ("bint",)  # not folded: Python computes it (C literals may be 32-bit)
        # bool op bool is a bool in Python (True & True is True), an int in C
        iv = None if ("bint",) in (ta, tb) else binop_iv(node.op, a, b)
        if iv is None:
            node.left, node.right = to_object(node.left), to_object(node.right)
            return self._set(node, None, None)
        return self._set(node, ("ll",), iv)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        node.operand, t, a = self.an(node.operand)
        if isinstance(node.op, ast.Not):
            return self._set(node, ("bint",), (0, 1))
        if a is not None:
            lo, hi = a
            iv = {ast.USub: (-hi, -lo), ast.UAdd: (lo, hi), ast.Invert: (-hi - 1, -lo - 1)}[
                type(node.op)
            ]
            iv = _ok(*iv)
            if iv is not None:
                return self._set(node, t if isinstance(node.op, ast.UAdd) else ("ll",), iv)
        node.operand = to_object(node.operand)
        return self._set(node, None, None)

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)  # C comparisons of C integers are exact
        return self._set(node, ("bint",), (0, 1))

    def _same(self, nodes: list[ast.expr]) -> tuple[list[ast.expr], T, Iv]:
        res = [self.an(n) for n in nodes]
        ts = {r[1] for r in res}
        iv = _union([r[2] for r in res])
        if len(ts) != 1 or iv is None:
            # mixed C types (a bint and a long long: Python's `and` keeps bool vs int) or unknown
            return [to_object(r[0]) for r in res], None, None
        return [r[0] for r in res], ts.pop(), iv

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        node.values, t, iv = self._same(node.values)
        return self._set(node, t, iv)

    def test(self, node: ast.expr) -> ast.expr:
        """A condition: only its truth is used, so `and`/`or` may mix C and Python values."""
        if isinstance(node, ast.BoolOp):
            node.values = [self.test(v) for v in node.values]
            return self._set(node, None, None)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node.operand = self.test(node.operand)
            return self._set(node, ("bint",), (0, 1))
        return self.visit(node)

    def visit_If(self, node: ast.If) -> ast.stmt:
        node.test = self.test(node.test)
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        return node

    def visit_While(self, node: ast.While) -> ast.stmt:
        node.test = self.test(node.test)
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        node.test = self.test(node.test)
        (node.body, node.orelse), t, iv = self._same([node.body, node.orelse])
        return self._set(node, t, iv)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        load = ast.parse(ast.unparse(node.target), mode="eval").body
        _, tt, a = self.an(load)
        node.value, _, b = self.an(node.value)
        self.generic_visit_target(node.target)
        if binop_iv(node.op, a, b) is not None:
            return node
        if tt is not None:  # a C field: Python computes, the field stores the result
            value = ast.BinOp(
                to_object(self.visit(ast.parse(ast.unparse(node.target), mode="eval").body)),
                node.op,
                to_object(node.value),
            )
            return ast.copy_location(
                ast.Assign(targets=[node.target], value=value, type_comment=None), node
            )
        node.value = to_object(node.value)
        return node

    def generic_visit_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Attribute):
            target.value = self.visit(target.value)
        elif isinstance(target, ast.Subscript):
            target.value = self.visit(target.value)
            target.slice = self.visit(target.slice)

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        raise CompileUnavailable("generated code has a lambda: not typed")


def static_class(node: ast.expr, env: dict[str, str], ty: Typing) -> str | None:
    """The class a Name/Attribute chain statically has (None: object)."""
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Attribute):
        b = static_class(node.value, env, ty)
        if b is not None:
            ft = ty.classes.get(b, {}).get(node.attr)
            if ft is not None and ft[0] is not None and ft[0][0] == "cls":
                return ft[0][1]
    return None


_TOP = "?"  # no typed assignment seen yet
_OBJ = ""


def local_classes(fn: ast.FunctionDef, params: dict[str, str], ty: Typing) -> dict[str, str]:
    """Locals (params included) that only ever hold one class: name -> class."""
    simple: dict[str, list[ast.expr]] = {}
    other: set[str] = set()
    targets: set[int] = set()  # the Name of each `x = value` (walked after its Assign)
    for node in ast.walk(fn):
        if node is not fn and isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
        ):
            raise CompileUnavailable("generated code has a nested definition: not typed")
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            raise CompileUnavailable("generated code has global/nonlocal: not typed")
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            simple.setdefault(node.targets[0].id, []).append(node.value)
            targets.add(id(node.targets[0]))
            continue
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, (ast.Store, ast.Del))
            and id(node) not in targets
        ):
            other.add(node.id)
        if isinstance(node, ast.ExceptHandler) and node.name:
            other.add(node.name)
        if isinstance(node, ast.NamedExpr):
            other.add(node.target.id)
    for a in fn.args.args:
        if a.arg not in params:
            other.add(a.arg)
    env: dict[str, str] = {}
    state: dict[str, str] = {n: _TOP for n in simple if n not in other}
    for p, c in params.items():
        if p not in other:
            state[p] = c
    for _ in range(50):
        env = {n: c for n, c in state.items() if c not in (_TOP, _OBJ)}
        new = dict(state)
        for n in state:
            cur = params.get(n, _TOP)
            for v in simple.get(n, []):
                if isinstance(v, ast.Name) and state.get(v.id) == _TOP:
                    continue  # flows from a local not yet typed
                c = static_class(v, env, ty)
                if c is None:
                    cur = _OBJ
                elif cur == _TOP:
                    cur = c
                elif cur != c:
                    cur = _OBJ
            new[n] = cur
        if new == state:
            break
        state = new
    else:
        raise CompileUnavailable("typing locals did not converge")
    return {n: c for n, c in state.items() if c not in (_TOP, _OBJ)}


# ---------------------------------------------------------------------- extracts and C locals

# rt.csum_fold for a C argument in [0, 2**62]: the same steps, every value stays below the argument
CSUM_FOLD = """@cython.cfunc
@cython.inline
def _csum_fold_c(s: cython.longlong) -> cython.longlong:
    while s >> 32:
        s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF
"""

BYTES_PTR = "_tp"  # the packet's bytes in an extract's fast path (const unsigned char *)
BYTES_OFF = "_to"  # the extract's offset there (Py_ssize_t)
_SIZES = {"B": 1, "H": 2, "I": 4, "Q": 8}


def _fmt_items(fmt: str) -> list[int] | None:
    """Byte widths of a '>'-format's items; None for anything else."""
    if not fmt.startswith(">") or any(ch not in _SIZES for ch in fmt[1:]):
        return None
    return [_SIZES[ch] for ch in fmt[1:]]


def _read(at: int, width: int) -> str:
    """Big-endian bytes [at, at + width) of the packet as C (width <= 4: below 2**32)."""
    # each byte widened first: C would compute `unsigned char << 24` in (32-bit) int
    parts = [
        f"(cython.cast(cython.longlong, {BYTES_PTR}[{BYTES_OFF} + {at + i}]) << {8 * (width - 1 - i)})"
        for i in range(width)
    ]
    return " | ".join(parts)


def _unpack_site(
    st: ast.stmt, fmts: dict[str, str], self_fmt: str | None
) -> tuple[str, list[int], ast.expr] | None:
    """(format, item widths, the Struct expression) when `st` is `_t = S.unpack_from(buf, off)`."""
    if not (
        isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Name)
        and st.targets[0].id == "_t"
        and isinstance(st.value, ast.Call)
        and not st.value.keywords
        and isinstance(st.value.func, ast.Attribute)
        and st.value.func.attr == "unpack_from"
        and len(st.value.args) == 2
        and all(isinstance(a, ast.Name) for a in st.value.args)
    ):
        return None
    obj = st.value.func.value
    fmt = None
    if isinstance(obj, ast.Name):
        fmt = fmts.get(obj.id)
    elif (
        isinstance(obj, ast.Attribute)
        and isinstance(obj.value, ast.Name)
        and obj.value.id == "self"
        and obj.attr == "_S"
    ):
        fmt = self_fmt
    items = _fmt_items(fmt) if fmt else None
    return (fmt, items, obj) if items else None  # type: ignore[return-value]


class _TupleItems(ast.NodeTransformer):
    def __init__(self, names: list[str]):
        self.names = names
        self.bad = False

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        if isinstance(node.value, ast.Name) and node.value.id == "_t":
            k = node.slice
            if (
                isinstance(k, ast.Constant)
                and type(k.value) is int
                and 0 <= k.value < len(self.names)
            ):
                return ast.Name(self.names[k.value], ast.Load())
            self.bad = True
        self.generic_visit(node)
        return node


def typed_extracts(
    fn: ast.FunctionDef, ty: Typing, self_fmt: str | None
) -> dict[str, tuple[int, int] | None]:
    """Each `_t = S.unpack_from(buf, off)` followed by reads of `_t[k]` becomes reads of the
    packet's bytes into C locals when buf is bytes and the header lies inside it (else the
    same unpack_from, which raises what it raised). Returns the new locals: name -> interval
    (None: a Python object, the 8-byte items). Leaves `fn` unchanged if `_t` is used otherwise."""
    if any(isinstance(n, ast.Name) and n.id in (BYTES_PTR, BYTES_OFF) for n in ast.walk(fn)):
        return {}
    work = ast.parse(ast.unparse(fn)).body[0]
    assert isinstance(work, ast.FunctionDef)
    new_locals: dict[str, tuple[int, int] | None] = {}
    site = [0]
    ok = [True]

    blocks = ("body", "orelse", "finalbody", "handlers")

    def own(cur: _TupleItems, st: ast.stmt) -> ast.stmt:
        """`_t[k]` -> its local in st's own expressions (not in its nested blocks)."""
        if not any(isinstance(getattr(st, b, None), list) and getattr(st, b) for b in blocks):
            return cur.visit(st)
        for f in st._fields:
            v = getattr(st, f)
            if f in blocks:
                continue
            if isinstance(v, ast.AST):
                setattr(st, f, cur.visit(v))
            elif isinstance(v, list):
                setattr(st, f, [cur.visit(x) if isinstance(x, ast.AST) else x for x in v])
        return st

    def stores_t(st: ast.stmt) -> bool:
        return any(
            isinstance(n, ast.Name) and n.id == "_t" and isinstance(n.ctx, ast.Store)
            for n in ast.walk(st)
        )

    def block(stmts: list[ast.stmt], cur: _TupleItems | None) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in stmts:
            got = _unpack_site(st, ty.formats, self_fmt)
            if got is not None:
                fmt, items, obj = got
                site[0] += 1
                names = [f"_t{site[0]}_{k}" for k in range(len(items))]
                buf, off = (a.id for a in st.value.args)  # type: ignore[attr-defined]
                size = sum(items)
                fast, slow, at = [], [f"_t = {ast.unparse(obj)}.unpack_from({buf}, {off})"], 0
                for name, w in zip(names, items, strict=True):
                    if w == 8:
                        fast.append(
                            f"{name} = (cython.cast(object, {_read(at, 4)}) << 32) | {_read(at + 4, 4)}"
                        )
                        new_locals[name] = None
                    else:
                        fast.append(f"{name} = {_read(at, w)}")
                        new_locals[name] = (0, (1 << (8 * w)) - 1)
                    slow.append(f"{name} = _t[{names.index(name)}]")
                    at += w
                text = (
                    f"if isinstance({buf}, bytes) and 0 <= {off} and {off} + {size} <= len({buf}):\n"
                    f"    {BYTES_PTR} = {buf}\n    {BYTES_OFF} = {off}\n"
                    + "".join(f"    {x}\n" for x in fast)
                    + "else:\n"
                    + "".join(f"    {x}\n" for x in slow)
                )
                out.extend(ast.parse(text).body)
                cur = _TupleItems(names)
                continue
            inner = stores_t(st)
            if isinstance(st, ast.Assign) and inner:
                cur = None
            if cur is not None:
                st = own(cur, st)
                if cur.bad:
                    ok[0] = False
            for name in ("body", "orelse", "finalbody"):
                sub = getattr(st, name, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    setattr(st, name, block(sub, cur))
            if isinstance(st, ast.Try):
                for h in st.handlers:
                    h.body = block(h.body, cur)
            if inner:
                cur = None  # which tuple `_t` holds after a nested extract depends on the path
            out.append(st)
        return out

    work.body = block(work.body, None)
    if not new_locals or not ok[0]:
        return {}
    # every remaining `_t` is in a slow path we wrote: `_t = ...unpack_from` and `_t[k]` reads
    for node in ast.walk(work):
        if isinstance(node, (ast.If,)) and isinstance(node.test, ast.BoolOp):
            continue
    slow_ok = set()
    for node in ast.walk(work):
        if (
            isinstance(node, ast.If)
            and node.orelse
            and isinstance(node.test, ast.BoolOp)
            and any(
                isinstance(b, ast.Name) and b.id == BYTES_PTR
                for st in node.body
                for b in ast.walk(st)
            )
        ):
            for st in node.orelse:
                for n in ast.walk(st):
                    slow_ok.add(id(n))
    if any(
        isinstance(n, ast.Name) and n.id == "_t" and id(n) not in slow_ok for n in ast.walk(work)
    ):
        return {}
    fn.body = work.body
    return new_locals


def int_locals(
    fn: ast.FunctionDef, env: dict[str, str], ty: Typing, fixed: dict[str, tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    """Locals that can be C long long: only ever assigned (`x = e`) C integer expressions of a
    bounded range, never used as an object (attribute, call, subscript base). name -> interval
    (the union of its assignments', to a fixpoint; a range still growing becomes an object)."""
    simple: dict[str, list[ast.expr]] = {}
    other: set[str] = set(env) | {a.arg for a in fn.args.args}
    targets: set[int] = set()
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            simple.setdefault(node.targets[0].id, []).append(node.value)
            targets.add(id(node.targets[0]))
        elif (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, (ast.Store, ast.Del))
            and id(node) not in targets
        ):
            other.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            other.add(node.name)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name):
            other.add(node.value.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            other.add(node.func.id)
    cand = [n for n in simple if n not in other and n not in fixed]
    top, obj = "top", "obj"
    state: dict[str, Any] = {n: top for n in cand}

    def iv_of(v: ast.expr, cur: dict[str, Any]) -> Any:
        names = {n.id for n in ast.walk(v) if isinstance(n, ast.Name)}
        if any(cur.get(n) == top for n in names):
            return top  # depends on a local not yet seen
        ints = {**fixed, **{n: x for n, x in cur.items() if isinstance(x, tuple)}}
        tr = _Expr(ty, env, ints)
        _, t, iv = tr.an(ast.parse(ast.unparse(v), mode="eval").body)
        return iv if t == ("ll",) and iv is not None else obj

    for it in range(40):
        new: dict[str, Any] = {}
        for n in cand:
            acc: Any = top if state[n] != obj else obj
            for v in simple[n] if acc != obj else []:
                x = iv_of(v, state)
                if x == obj:
                    acc = obj
                    break
                if x != top:
                    acc = x if acc == top else (min(acc[0], x[0]), max(acc[1], x[1]))
            if it >= 8 and isinstance(acc, tuple) and acc != state[n]:
                acc = obj  # still growing: a loop-carried value
            new[n] = acc
        if new == state:
            break
        state = new
    else:
        raise CompileUnavailable("typing integer locals did not converge")
    res = {n: x for n, x in state.items() if isinstance(x, tuple)}
    # every assignment of a C local must fit its interval (what the fixpoint promises)
    for n in res:
        for v in simple[n]:
            x = iv_of(v, {**{m: obj for m in state if m not in res}, **res})
            if not (isinstance(x, tuple) and res[n][0] <= x[0] and x[1] <= res[n][1]):
                raise CompileUnavailable(f"typing integer local {n} is not sound")
    return res


def _dict_update(node: ast.stmt) -> ast.stmt:
    """`dst.__dict__.update(src.copy().__dict__)` (an extern's whole-struct copy) becomes
    `dst._p4assign(src.copy())`: cclass instances have no __dict__."""
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "update"
        and isinstance(node.value.func.value, ast.Attribute)
        and node.value.func.value.attr == "__dict__"
        and len(node.value.args) == 1
        and isinstance(node.value.args[0], ast.Attribute)
        and node.value.args[0].attr == "__dict__"
    ):
        dst = node.value.func.value.value
        return ast.Expr(
            ast.Call(ast.Attribute(dst, "_p4assign", ast.Load()), [node.value.args[0].value], [])
        )
    return node


DEPARSE_BUF = "_db"  # the deparser's bytes not yet appended to `_out` (unsigned char array)
DEPARSE_LEN = "_dn"  # how many of them
DEPARSE_VAL = "_dv"  # one packed item (long long)
DEPARSE_U64 = "_dq"  # one packed bit<63..64> field (unsigned long long)


def _pack_site(st: ast.stmt, ty: Typing) -> tuple[list[ast.expr], list[int]] | None:
    """(items, their byte widths) when `st` is `_out.append(S.pack(...))` (an emit,
    p4sim.externs.packet.emit) whose every item is a C value proven inside its word: then
    struct.pack can neither fail nor give other bytes than writing them big-endian does."""
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)):
        return None
    c = st.value
    if not (
        isinstance(c.func, ast.Attribute)
        and c.func.attr == "append"
        and isinstance(c.func.value, ast.Name)
        and c.func.value.id == "_out"
        and len(c.args) == 1
        and not c.keywords
    ):
        return None
    p = c.args[0]
    if not (
        isinstance(p, ast.Call)
        and isinstance(p.func, ast.Attribute)
        and p.func.attr == "pack"
        and isinstance(p.func.value, ast.Name)
        and not p.keywords
    ):
        return None
    fmt = ty.formats.get(p.func.value.id)
    widths = _fmt_items(fmt) if fmt else None
    if widths is None or len(widths) != len(p.args):
        return None
    for a, n in zip(p.args, widths, strict=True):
        t, iv = getattr(a, "_p4t", (None, None))
        if t == ("ll",) and iv is not None and 0 <= iv[0] and iv[1] < 1 << (8 * n):
            continue
        if n == 8 and _wide_field(a, ty) in range(1, 65):
            continue  # a bit<63..64> field, an 8-byte word of its own (read as unsigned long long)
        return None
    return p.args, widths


def _wide_field(node: ast.expr, ty: Typing) -> int:
    """W when `node` reads an unsigned bit<W> field kept as a Python object, else 0."""
    if not isinstance(node, ast.Attribute):
        return 0
    t, _ = getattr(node.value, "_p4t", (None, None))
    return ty.wide.get(t[1], {}).get(node.attr, 0) if t is not None and t[0] == "cls" else 0


def _byte_stores(items: list[ast.expr], widths: list[int]) -> list[ast.stmt]:
    """The items written big-endian at the end of the deparser's buffer."""
    out, at = [], 0
    for item, n in zip(items, widths, strict=True):
        t, _ = getattr(item, "_p4t", (None, None))
        var = DEPARSE_VAL if t == ("ll",) else DEPARSE_U64  # a wide field: Python int -> C
        out.append(f"{var} = {ast.unparse(item)}")
        for j in range(n):
            sh = 8 * (n - 1 - j)
            v = f"({var} >> {sh}) & 255" if sh else f"{var} & 255"
            out.append(f"{DEPARSE_BUF}[{DEPARSE_LEN} + {at + j}] = {v}")
        at += n
    out.append(f"{DEPARSE_LEN} += {at}")
    return ast.parse("\n".join(out)).body


FLUSH = (
    f"if {DEPARSE_LEN}:\n    _out.append(cython.cast(cython.p_char, {DEPARSE_BUF})[:{DEPARSE_LEN}])\n"
    f"    {DEPARSE_LEN} = 0"
)


def _mentions_out(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "_out" for n in ast.walk(node))


def typed_deparser(fn: ast.FunctionDef, ty: Typing) -> int:
    """The deparser's emits of C-valued headers (`_pack_site`) write their bytes into one C
    buffer, appended to `_out` as one bytes object before any other use of `_out` and when
    the deparser ends (also by an exception): `b"".join(_out)` is the same bytes. An emit
    in a loop keeps its pack (the buffer's size is the sum of the sites run at most once).
    Returns that size (0: nothing rewritten, the function is unchanged)."""
    if not fn.args.args or fn.args.args[0].arg != "_out":
        return 0
    size = 0

    def block(stmts: list[ast.stmt]) -> list[ast.stmt]:
        nonlocal size
        res: list[ast.stmt] = []
        for st in stmts:
            site = _pack_site(st, ty)
            if site is not None:
                res += _byte_stores(*site)
                size += sum(site[1])
                continue
            if isinstance(st, ast.If) and not _mentions_out(st.test):
                st.body, st.orelse = block(st.body), block(st.orelse)
            elif isinstance(st, ast.Try):
                st.body, st.orelse, st.finalbody = (
                    block(st.body),
                    block(st.orelse),
                    block(st.finalbody),
                )
                for h in st.handlers:
                    h.body = block(h.body)
            elif _mentions_out(st):  # a loop, a call given `_out`, an `_em()`: bytes so far first
                res += ast.parse(FLUSH).body
            res.append(st)
        return res

    body = block(copy.deepcopy(fn.body))  # a copy: with no site, the flushes are not wanted
    if size == 0:
        return 0
    wrapped = ast.parse(
        f"{DEPARSE_LEN} = 0\ntry:\n    pass\nfinally:\n" + textwrap.indent(FLUSH, "    ")
    ).body
    wrapped[1].body = body  # type: ignore[attr-defined]
    fn.body = wrapped
    return size


def type_function(
    fn: ast.FunctionDef,
    params: dict[str, str],
    ty: Typing,
    method_of: str | None = None,
    deparser: bool = False,
) -> None:
    """Rewrite `fn` in place: typed parameters and locals, exact C arithmetic; `deparser`:
    the pipeline's deparser (its emits of C-valued headers write bytes, `typed_deparser`)."""
    if method_of is not None:
        params = {**params, fn.args.args[0].arg: method_of}  # self: typed by Cython already
    env = local_classes(fn, params, ty)
    if method_of is None:  # a method's self is typed by Cython already
        for a in fn.args.args:
            if a.arg in env and a.arg in params:
                a.annotation = ast.Name(env[a.arg], ast.Load())
    fn.body = [_dict_update(s) for s in fn.body]
    for node in ast.walk(fn):
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list):
                setattr(
                    node, name, [_dict_update(s) if isinstance(s, ast.stmt) else s for s in stmts]
                )
    items = typed_extracts(fn, ty, ty.formats.get(method_of or ""))
    fixed = {n: iv for n, iv in items.items() if iv is not None}
    ints = {**fixed, **int_locals(fn, env, ty, fixed)}
    tr = _Expr(ty, env, ints)
    fn.body = [tr.visit(s) for s in fn.body]
    argnames = {a.arg for a in fn.args.args}
    decls = [f"{n} = cython.declare({c})" for n, c in sorted(env.items()) if n not in argnames]
    decls += [f"{n} = cython.declare(cython.longlong)" for n in sorted(ints)]
    nbuf = typed_deparser(fn, ty) if deparser else 0
    if nbuf:
        decls += [
            f"{DEPARSE_BUF} = cython.declare(cython.uchar[{nbuf}])",
            f"{DEPARSE_LEN} = cython.declare(cython.Py_ssize_t)",
            f"{DEPARSE_VAL} = cython.declare(cython.longlong)",
            f"{DEPARSE_U64} = cython.declare(cython.ulonglong)",
        ]
    if items:
        decls += [
            f"{BYTES_PTR} = cython.declare(cython.p_const_uchar)",
            f"{BYTES_OFF} = cython.declare(cython.Py_ssize_t)",
        ]
    fn.body = [ast.parse(d).body[0] for d in decls] + fn.body


# ---------------------------------------------------------------------- classes


def _class_text(cls: ast.ClassDef, ty: Typing) -> str:
    """The cclass version of a generated header/struct class."""
    name = cls.name
    fields = ty.classes[name]
    nested = ty.nested[name]
    defaults: dict[str, str] = {}
    body: list[str] = []
    for st in cls.body:
        if (
            isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and st.targets[0].id in fields
        ):
            defaults[st.targets[0].id] = ast.unparse(st.value)
        elif isinstance(st, ast.FunctionDef) and st.name == "__init__":
            for s in st.body:
                if not (
                    isinstance(s, ast.Assign)
                    and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Attribute)
                ):
                    raise CompileUnavailable(f"{name}.__init__ is not field assignments: not typed")
                defaults[s.targets[0].attr] = ast.unparse(s.value)
        elif isinstance(st, ast.FunctionDef) and st.name == "copy":
            continue
        elif isinstance(st, ast.FunctionDef):
            type_function(st, {}, ty, method_of=name)
            body.append(ast.unparse(st))
        else:
            body.append(ast.unparse(st))
    # a freelist: a packet allocates ~20 header objects and frees them at its end; reusing
    # their memory skips malloc/free (Cython: the object is zeroed as a new one)
    out = [f"@cython.freelist({FREELIST})", "@cython.cclass", f"class {name}:"]
    for a, (t, _) in fields.items():
        ct = (
            "object"
            if t is None
            else {"ll": "cython.longlong", "bint": "cython.bint"}.get(t[0], t[-1])
        )
        out.append(f"    {a} = cython.declare({ct}, visibility='public')")
    for line in body:
        out.append("\n".join("    " + x for x in line.splitlines()))
    init = []
    for a, (t, _) in fields.items():
        d = defaults.get(a)
        if d is None:
            if t is None or t[0] == "cls":
                raise CompileUnavailable(f"{name}.{a} has no default: not typed")
            continue
        if t is not None and t[0] in ("ll", "bint") and d in ("0", "False"):
            continue  # C fields start zeroed
        if t is not None and t[0] == "cls" and d == f"{t[1]}()":
            d = new_expr(t[1], ty)  # the same object, without a call of the type
        init.append(f"        self.{a} = {d}")
    maker = ""
    if init:
        out += ["    def __init__(self):", *init]
        if not any(
            isinstance(n, ast.Name) and n.id == "self"
            for line in init
            for n in ast.walk(ast.parse(line.split("=", 1)[1].strip(), mode="eval"))
        ):
            # __init__'s assignments on a fresh object (its values never read `self`)
            maker = (
                "\n".join(
                    [
                        "@cython.cfunc",
                        f"def _p4new_{name}() -> {name}:",
                        f"    self: {name} = {name}.__new__({name})",
                        *(x[4:] for x in init),
                        "    return self",
                    ]
                )
                + "\n"
            )
            ty.makers.add(name)
    else:
        ty.no_init.add(name)
    out += ["    def copy(self):", f"        o = {name}.__new__({name})"]
    for a in fields:
        out.append(
            f"        o.{a} = self.{a}.copy()" if a in nested else f"        o.{a} = self.{a}"
        )
    out += ["        return o", "    def _p4assign(self, src):"]
    out += [f"        self.{a} = src.{a}" for a in fields] or ["        pass"]
    return "\n".join(out) + "\n" + maker


def new_expr(cls: str, ty: Typing) -> str:
    """An expression giving what `cls()` gives, as cheaply as the class allows."""
    if cls in ty.no_init:
        return f"{cls}.__new__({cls})"
    if cls in ty.makers:
        return f"_p4new_{cls}()"
    return f"{cls}()"


# ---------------------------------------------------------------------- module


def _refs(tree: ast.Module) -> tuple[dict[str, list[ast.Call]], set[str]]:
    """Per top-level function name: its direct calls; and the names used otherwise."""
    calls: dict[str, list[ast.Call]] = {}
    used: set[str] = set()
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    callee_ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in funcs:
            calls.setdefault(node.func.id, []).append(node)
            callee_ids.add(id(node.func))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in funcs and id(node) not in callee_ids:
            used.add(node.id)
    return calls, used


def entry_params(program: CompiledProgram) -> dict[str, list[str | None]]:
    pl = program.pipeline
    h, m, s = pl.new_hdr, pl.new_meta, pl.new_sm
    return {
        pl.parser: [None, h, m, s],
        pl.verify: [h, m],
        pl.ingress: [h, m, s],
        pl.egress: [h, m, s],
        pl.compute: [h, m],
        pl.deparser: [None, h],
    }


def typed_module(
    python: str, program: CompiledProgram, struct_types: dict[str, TStruct]
) -> tuple[str, str]:
    """(module-level text: imports and cclasses, functions text) of the typed emission."""
    ty = Typing(struct_types)
    tree = ast.parse(python)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for st in node.body:
                if (
                    isinstance(st, ast.Assign)
                    and ast.unparse(st.targets[0]) == "_S"
                    and isinstance(st.value, ast.Call)
                    and ast.unparse(st.value.func) == "_struct.Struct"
                    and len(st.value.args) == 1
                    and isinstance(st.value.args[0], ast.Constant)
                ):
                    ty.formats[node.name] = st.value.args[0].value
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "_S"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in ty.formats
        ):
            ty.formats[node.targets[0].id] = ty.formats[node.value.value.id]
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    calls, used = _refs(tree)
    entries = entry_params(program)
    # parameter classes: the entry points' from the pipeline, the others' from their call sites
    ptypes: dict[str, dict[str, str]] = {}
    for fname, types in entries.items():
        fn = funcs.get(fname)
        if fn is None or len(fn.args.args) != len(types) or fn.args.vararg or fn.args.kwonlyargs:
            continue
        ptypes[fname] = {
            a.arg: c for a, c in zip(fn.args.args, types, strict=True) if c in ty.classes
        }
    for _ in range(20):
        envs = {f: local_classes(fn, ptypes.get(f, {}), ty) for f, fn in funcs.items()}
        changed = False
        for f, fn in funcs.items():
            if (
                f in entries
                or f in used
                or f not in calls
                or fn.args.vararg
                or fn.args.kwonlyargs
                or fn.args.defaults
            ):
                continue
            agreed: dict[str, str] = {}
            names = [a.arg for a in fn.args.args]
            for i, pname in enumerate(names):
                cs = set()
                for call in calls[f]:
                    if len(call.args) != len(names) or call.keywords:
                        cs.add(None)
                        continue
                    caller = next(
                        g for g, gfn in funcs.items() if any(c is call for c in ast.walk(gfn))
                    )
                    cs.add(static_class(call.args[i], envs[caller], ty))
                if len(cs) == 1 and None not in cs:
                    agreed[pname] = cs.pop()  # type: ignore[assignment]
            if agreed != ptypes.get(f, {}):
                ptypes[f] = agreed
                changed = True
        if not changed:
            break
    head: list[str] = []
    body: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in ty.classes:
            head.append(_class_text(node, ty))
        elif isinstance(node, ast.FunctionDef):
            type_function(
                node, ptypes.get(node.name, {}), ty, deparser=node.name == program.pipeline.deparser
            )
            body.append(ast.unparse(node) + "\n")
        else:
            head.append(ast.unparse(node) + "\n")
    head.append(CSUM_FOLD)
    # cclass instances have no __dict__ (a P4 field named `__dict__` is `f___dict__`: fine)
    for part in [*body, *(h for h in head if "@cython.cclass" in h.split("\n", 2)[:2])]:
        if any(
            isinstance(n, ast.Attribute) and n.attr == "__dict__" for n in ast.walk(ast.parse(part))
        ):
            raise CompileUnavailable("generated code reads __dict__: not typed")
    # after that check: the driver fills an OutputPacket's __dict__ (a Python object's)
    drive = drive_source(program, ty.classes, set(funcs), lambda c: new_expr(c, ty))
    if drive:  # the switch's common case as one typed function (p4sim.compiled.drive)
        head.append(DRIVE_IMPORTS)
        body.append(drive)
    return "".join(head), "".join(body)
