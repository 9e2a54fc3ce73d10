"""P4 types as the checker and the code generator see them, and constant folding.

Values at run time: bit<N>, int<N> (two's complement, stored unsigned), bool, enums and
errors are Python ints/bools; headers, structs and unions are instances of generated
classes; stacks are `p4sim.lower.rt.Stack`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4sim.frontend import ast
from p4sim.frontend.errors import P4SourceError, P4Unsupported, Span, source_line


class P4TypeError(P4SourceError):
    """A name or type error found by the checker."""


class Type:
    def __repr__(self) -> str:
        return self.show()

    def show(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, repr=False)
class TBits(Type):
    width: int
    signed: bool = False

    def show(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True, repr=False)
class TInt(Type):
    """Arbitrary-precision integer (literals without width, compile-time ints)."""

    def show(self) -> str:
        return "int"


@dataclass(frozen=True, repr=False)
class TBool(Type):
    def show(self) -> str:
        return "bool"


@dataclass(frozen=True, repr=False)
class TVarbit(Type):
    width: int

    def show(self) -> str:
        return f"varbit<{self.width}>"


@dataclass(frozen=True, repr=False)
class TString(Type):
    def show(self) -> str:
        return "string"


@dataclass(frozen=True, repr=False)
class TVoid(Type):
    def show(self) -> str:
        return "void"


@dataclass(frozen=True, repr=False)
class TError(Type):
    def show(self) -> str:
        return "error"


@dataclass(frozen=True, repr=False)
class TMatchKind(Type):
    def show(self) -> str:
        return "match_kind"


@dataclass(frozen=True, repr=False)
class TDontCare(Type):
    def show(self) -> str:
        return "_"


@dataclass(eq=False, repr=False)
class TStruct(Type):
    """struct, header or header_union (kind)."""

    kind: str  # 'struct' | 'header' | 'union'
    name: str
    fields: list[tuple[str, Type]]
    decl: ast.Node | None = None
    pycls: str = ""
    annotations: dict[str, list] = field(default_factory=dict)  # field -> annotations

    def field_type(self, name: str) -> Type | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    def show(self) -> str:
        return self.name

    @property
    def is_header(self) -> bool:
        return self.kind == "header"


@dataclass(eq=False, repr=False)
class TStack(Type):
    elem: Type
    size: int

    def show(self) -> str:
        return f"{self.elem.show()}[{self.size}]"


@dataclass(eq=False, repr=False)
class TEnum(Type):
    name: str
    members: dict[str, int]
    underlying: TBits | None = None

    def show(self) -> str:
        return self.name


@dataclass(eq=False, repr=False)
class TTuple(Type):
    elems: list[Type]

    def show(self) -> str:
        return "tuple<" + ", ".join(t.show() for t in self.elems) + ">"


@dataclass(eq=False, repr=False)
class TExtern(Type):
    name: str
    decl: ast.ExternDecl | None
    args: list[Type] = field(default_factory=list)

    def show(self) -> str:
        return self.name


@dataclass(eq=False, repr=False)
class TTypeVar(Type):
    name: str

    def show(self) -> str:
        return self.name


@dataclass(eq=False, repr=False)
class TNamedBlock(Type):
    """A parser/control/package type or declaration used as a type."""

    kind: str
    name: str
    decl: ast.Node | None = None

    def show(self) -> str:
        return self.name


# a node checked to different results in different instances of one block (a width or a
# value taken from a constructor parameter): lowering works it out in each instance
VARIES = object()

BOOL = TBool()
INT = TInt()
ERROR = TError()
VOID = TVoid()
STRING = TString()


def width_of(t: Type) -> int:
    """Bit width of a fixed-width scalar (bool = 1); 0 otherwise."""
    if isinstance(t, TBits):
        return t.width
    if isinstance(t, TBool):
        return 1
    if isinstance(t, TEnum) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, TStruct) and t.kind in ("header", "struct"):
        return sum(width_of(ft) for _, ft in t.fields)
    return 0


def is_scalar(t: Type) -> bool:
    return isinstance(t, (TBits, TInt, TBool, TEnum, TError, TVarbit))


def mask(w: int) -> int:
    return (1 << w) - 1


def to_signed(v: int, w: int) -> int:
    v &= mask(w)
    return v - (1 << w) if v >> (w - 1) else v


def same_type(a: Type, b: Type) -> bool:
    if a is b:
        return True
    if isinstance(a, TBits) and isinstance(b, TBits):
        return a == b
    return type(a) is type(b) and isinstance(a, (TBool, TInt, TError, TString, TVoid, TMatchKind))


def identical(a: object, b: object) -> bool:
    """The same type by structure (types made twice for two uses compare equal)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(b, (TStruct, TEnum)):
        return a.name == b.name  # type: ignore[attr-defined]
    if isinstance(b, TStack):
        return identical(a.elem, b.elem) and a.size == b.size  # type: ignore[attr-defined]
    if isinstance(b, TTuple):
        return len(a.elems) == len(b.elems) and all(map(identical, a.elems, b.elems))  # type: ignore[attr-defined]
    if isinstance(b, TExtern):
        return (
            a.name == b.name
            and len(a.args) == len(b.args)
            and all(  # type: ignore[attr-defined]
                map(identical, a.args, b.args)
            )
        )  # type: ignore[attr-defined]
    if isinstance(b, TNamedBlock):
        return a.name == b.name  # type: ignore[attr-defined]
    return a == b


def err(msg: str, node: ast.Node | None) -> P4TypeError:
    span = node.span if node is not None else Span("<unknown>", 0, 0)
    return P4TypeError(msg, span)


def unsupported(what: str, node: ast.Node) -> P4Unsupported:
    return P4Unsupported(what, node.span)


def name_span(node: ast.Node) -> Span:
    """The span of a declaration's name (p4c points duplicate-name errors at the name)."""
    span = node.span
    name = getattr(node, "name", None)
    text = source_line(span) if isinstance(name, str) else None
    if text is None or not name:
        return span
    i = text.find(name, max(span.column - 1, 0))
    while i >= 0:
        before = text[i - 1] if i > 0 else " "
        after = text[i + len(name)] if i + len(name) < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return Span(span.file, span.line, i + 1, span.line, i + len(name))
        i = text.find(name, i + 1)
    return span


def check_type_args(base: TExtern, args: list[Type], node: ast.Node) -> None:
    """A specialised extern type must give exactly one argument per type parameter.

    p4c (frontends/p4/typeChecking/typeChecker.cpp, TypeInference::canonicalize, the
    Type_Specialized case) reports "Type counter has 0 type parameter(s), but it is
    specialized with 1" at the specialised type: so `counter<bit<32>>` fails under v1model's
    default version 20180101, and `register<bit<32>>` (one argument for `register<T, I>`)
    fails under 20200408; type arguments are never inferred in a declaration."""
    params = base.decl.type_params if base.decl is not None else []
    if len(params) != len(args):
        shown = base.name + "<" + ", ".join(a.show() for a in args) + ">"
        raise err(
            f"{shown}: Type {base.name} has {len(params)} type parameter(s), "
            f"but it is specialized with {len(args)}",
            node,
        )
