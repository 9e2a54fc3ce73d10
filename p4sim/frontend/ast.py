"""The P4_16 syntax tree produced by `p4sim.frontend.parser`.

Conventions (the checker and the code generator rely on them):
- Every node has a keyword-only `span` (file, line, column in the ORIGINAL source).
- Nodes compare by identity (`eq=False`) so they can key dicts (e.g. a checker's
  `types[expr]`). Use `walk()` / `children()` to traverse generically.
- Names are plain `str`; where a name itself needs a location it is an `Ident`.
- The parser does not resolve names: `Foo.Bar` is `Member(Name('Foo'), 'Bar')` whether
  Foo is an enum, a header instance or an extern; `f(x)` is `MethodCall` whether f is an
  action, a function, an extern method or a constructor (`Checksum16()` in an
  expression). `error.X` is `Member(TypeRef(ErrorType()), 'X')`.
- Widths (`bit<N>`), stack sizes, const values are `Expression`s (usually `IntLiteral`);
  the checker folds them.
- Annotations keep their raw tokens; `exprs`/`kv` hold the parsed forms when the body
  parses as an expression list / key=value list (`@name("x")`, `@id(5)`,
  `@priority(3)`, `@field_list(1)`, `@controller_header("packet_in")`).
- `Unsupported` nodes mark constructs the parser accepts but p4sim refuses; the checker
  raises `P4Unsupported` at their span.

This module is additive-only after phase 1: new fields get defaults, nothing is renamed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import Any

from .errors import NO_SPAN, Span


@dataclass(eq=False)
class Node:
    _: KW_ONLY
    span: Span = field(default=NO_SPAN, repr=False)

    def children(self) -> Iterator[Node]:
        """Direct child nodes, in field order (lists flattened)."""
        for f in fields(self):
            if f.name in ("span", "checked_type"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, Node):
                        yield item


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal of node and all its descendants."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(n.children())))


# ====================================================================== tokens, annotations


@dataclass(eq=False, slots=True)
class Token:
    """A lexical token (the lexer's output; kept raw inside annotation bodies)."""

    kind: str  # 'ident' (keywords included), 'int', 'string', 'op', 'directive', 'eof'
    text: str  # source text as written (string literals: the unescaped value, no quotes)
    span: Span = NO_SPAN
    value: Any = None  # int: (value, width | None, signed); directive: (name, tokens, raw)
    space_before: bool = True  # whitespace, a comment or a line start precedes it


@dataclass(eq=False)
class Ident(Node):
    name: str


@dataclass(eq=False)
class Annotation(Node):
    """@name, @name(body) or @name[structured body]."""

    name: str
    body: list[Token] = field(default_factory=list)  # raw tokens between ( ) / [ ]
    exprs: list[Expression] | None = None  # parsed if the body is an expression list
    kv: dict[str, Expression] | None = None  # parsed if the body is `k = v, ...`
    structured: bool = False  # written with [ ]

    def string_value(self) -> str | None:
        """The value of a single string-literal argument (e.g. @name("x") -> "x")."""
        if self.exprs and len(self.exprs) == 1 and isinstance(self.exprs[0], StringLiteral):
            return self.exprs[0].value
        return None

    def int_value(self) -> int | None:
        """The value of a single integer-literal argument (e.g. @id(5) -> 5)."""
        if self.exprs and len(self.exprs) == 1 and isinstance(self.exprs[0], IntLiteral):
            return self.exprs[0].value
        return None

    def text(self) -> str:
        """The annotation as source text, e.g. '@name("x")' (for P4Info annotations)."""
        if not self.body and not self.structured and self.exprs is None and self.kv is None:
            return f"@{self.name}"
        parts: list[str] = []
        for i, t in enumerate(self.body):
            if i and t.space_before:
                parts.append(" ")  # keep the source's spacing: @my(1, 2), @range(0..7)
            parts.append(
                t.value
                if t.kind == "string" and t.value
                else f'"{t.text}"'
                if t.kind == "string"
                else t.text
            )
        inner = "".join(parts)
        open_, close = ("[", "]") if self.structured else ("(", ")")
        return f"@{self.name}{open_}{inner}{close}"


@dataclass(eq=False)
class Annotated(Node):
    """Mixin base: nodes that can carry annotations."""

    _: KW_ONLY
    annotations: list[Annotation] = field(default_factory=list)

    def annotation(self, name: str) -> Annotation | None:
        for a in self.annotations:
            if a.name == name:
                return a
        return None

    def has_annotation(self, name: str) -> bool:
        return self.annotation(name) is not None


# ====================================================================== types


@dataclass(eq=False)
class Type(Node):
    pass


@dataclass(eq=False)
class BitType(Type):
    """bit<N>; `bit` alone is bit<1>."""

    width: Expression


@dataclass(eq=False)
class IntType(Type):
    """int<N> (signed, fixed width)."""

    width: Expression


@dataclass(eq=False)
class InfIntType(Type):
    """`int` without width (arbitrary precision; compile-time values)."""


@dataclass(eq=False)
class VarbitType(Type):
    width: Expression


@dataclass(eq=False)
class BoolType(Type):
    pass


@dataclass(eq=False)
class ErrorType(Type):
    pass


@dataclass(eq=False)
class MatchKindType(Type):
    pass


@dataclass(eq=False)
class StringType(Type):
    pass


@dataclass(eq=False)
class VoidType(Type):
    pass


@dataclass(eq=False)
class DontCareType(Type):
    """`_` used as a type argument (to be inferred)."""


@dataclass(eq=False)
class NamedType(Type):
    """A reference to a declared type (header, struct, typedef, extern, parser ...)."""

    name: str
    top_level: bool = False  # written with a leading dot: `.name`


@dataclass(eq=False)
class SpecializedType(Type):
    """T<A, B>, e.g. register<bit<32>>, Checksum<bit<16>>."""

    base: NamedType
    args: list[Type]


@dataclass(eq=False)
class StackType(Type):
    """T[N]: a header stack (or array of header unions)."""

    element: Type
    size: Expression


@dataclass(eq=False)
class TupleType(Type):
    elements: list[Type]


@dataclass(eq=False)
class ListType(Type):
    """list<T> (P4_16 1.2.4): a list of elements of one type."""

    element: Type


@dataclass(eq=False)
class TypeParam(Node):
    """A type variable declared by a generic declaration: extern E<T>, parser P<H, M>."""

    name: str


# ====================================================================== expressions


@dataclass(eq=False)
class Expression(Node):
    _: KW_ONLY
    # Free slot for the checker (e.g. its resolved type); the parser leaves it None.
    checked_type: Any = field(default=None, repr=False)


@dataclass(eq=False)
class IntLiteral(Expression):
    """8w5 -> value 5, width 8, signed False; 16s3 -> signed True; 0x10 -> width None."""

    value: int  # as written; negative only through unary minus, never here
    width: int | None = None
    signed: bool = False
    text: str = ""


@dataclass(eq=False)
class BoolLiteral(Expression):
    value: bool


@dataclass(eq=False)
class StringLiteral(Expression):
    value: str  # escapes resolved


@dataclass(eq=False)
class Name(Expression):
    """An identifier in an expression (variable, param, instance, action, enum type ...)."""

    name: str
    top_level: bool = False  # `.name`


@dataclass(eq=False)
class This(Expression):
    pass


@dataclass(eq=False)
class DontCare(Expression):
    """`_` as an expression (out argument ignored, keyset don't care)."""


@dataclass(eq=False)
class TypeRef(Expression):
    """A type used where an expression is expected: `error.NoError`, `bit<8>.minSizeInBits()`."""

    type: Type


@dataclass(eq=False)
class Member(Expression):
    """expr.member (header field, enum member, error member, method, stack .next/.last ...)."""

    expr: Expression
    member: str


@dataclass(eq=False)
class Index(Expression):
    """expr[index] (header stack element)."""

    expr: Expression
    index: Expression


@dataclass(eq=False)
class Slice(Expression):
    """expr[hi:lo], both bounds inclusive."""

    expr: Expression
    hi: Expression
    lo: Expression


UNARY_OPS = ("!", "~", "-", "+")
BINARY_OPS = (
    "*",
    "/",
    "%",
    "+",
    "-",
    "|+|",
    "|-|",
    "<<",
    ">>",
    "<=",
    ">=",
    "<",
    ">",
    "==",
    "!=",
    "&",
    "^",
    "|",
    "++",
    "&&",
    "||",
)


@dataclass(eq=False)
class Unary(Expression):
    op: str  # one of UNARY_OPS
    operand: Expression


@dataclass(eq=False)
class Binary(Expression):
    op: str  # one of BINARY_OPS
    left: Expression
    right: Expression


@dataclass(eq=False)
class Ternary(Expression):
    """cond ? then : else_"""

    cond: Expression
    then: Expression
    else_: Expression


@dataclass(eq=False)
class Cast(Expression):
    """(type) expr"""

    type: Type
    expr: Expression


@dataclass(eq=False)
class Argument(Node):
    """A call argument, positional or named (`f(x = 1)`); value may be DontCare."""

    value: Expression
    name: str | None = None


@dataclass(eq=False)
class MethodCall(Expression):
    """callee<type_args>(args): actions, functions, extern methods and functions,
    `.apply()`, `.isValid()`, constructor calls in expressions (`Checksum16()`)."""

    callee: Expression
    args: list[Argument] = field(default_factory=list)
    type_args: list[Type] = field(default_factory=list)


@dataclass(eq=False)
class ListExpression(Expression):
    """{a, b, c}: tuple / list / struct-by-position initializer; `{a, ...}` (dots) gives
    the remaining fields their default values (P4_16 spec, "Default values")."""

    elements: list[Expression]
    dots: bool = False


@dataclass(eq=False)
class NamedExpression(Node):
    name: str
    value: Expression


@dataclass(eq=False)
class StructExpression(Expression):
    """{f = v, g = w}; `type` set when written as `(T){...}`-free form `T {...}` (rare)."""

    fields: list[NamedExpression]
    type: Type | None = None
    dots: bool = False  # `{f = v, ...}`: the other fields get their default values


@dataclass(eq=False)
class InvalidExpression(Expression):
    """`{#}`: an invalid header / header union value."""


# ---- keysets (select cases, const table entries)


@dataclass(eq=False)
class DefaultKeyset(Expression):
    """`default` in a select case or entry key."""


@dataclass(eq=False)
class MaskKeyset(Expression):
    """value &&& mask"""

    value: Expression
    mask: Expression


@dataclass(eq=False)
class RangeKeyset(Expression):
    """low .. high (inclusive)"""

    low: Expression
    high: Expression


@dataclass(eq=False)
class TupleKeyset(Expression):
    """(k1, k2, ...) for a multi-field select or table key. A single key is NOT wrapped."""

    elements: list[Expression]


# Keyset elements are: any Expression (a value, or the name of a value_set), DontCare,
# DefaultKeyset, MaskKeyset, RangeKeyset; a case/entry keyset is one of those or a TupleKeyset.


@dataclass(eq=False)
class SelectCase(Annotated):
    keyset: Expression
    state: Name  # next state name (accept / reject included)


@dataclass(eq=False)
class SelectExpression(Expression):
    """select(exprs) { cases }"""

    exprs: list[Expression]
    cases: list[SelectCase]


# ====================================================================== statements


@dataclass(eq=False)
class Statement(Annotated):
    pass


@dataclass(eq=False)
class EmptyStatement(Statement):
    pass


@dataclass(eq=False)
class Assignment(Statement):
    lhs: Expression
    rhs: Expression


@dataclass(eq=False)
class MethodCallStatement(Statement):
    call: MethodCall


@dataclass(eq=False)
class BlockStatement(Statement):
    statements: list[Statement] = field(default_factory=list)


@dataclass(eq=False)
class ForStatement(Statement):
    """P4_16 1.2.4 `for (init, ...; cond; update, ...) body` (cond None: no condition)."""

    init: list[Statement]
    cond: Expression | None
    update: list[Statement]
    body: Statement


@dataclass(eq=False)
class ForInStatement(Statement):
    """P4_16 1.2.4 `for (T x in collection) body`; `hi` set for a range `collection..hi`."""

    type: Type
    var: str
    collection: Expression
    hi: Expression | None
    body: Statement


@dataclass(eq=False)
class BreakStatement(Statement):
    pass


@dataclass(eq=False)
class ContinueStatement(Statement):
    pass


@dataclass(eq=False)
class IfStatement(Statement):
    cond: Expression
    then: Statement
    else_: Statement | None = None


@dataclass(eq=False)
class SwitchCase(Node):
    """A case of a switch. `label` is a Name (action name, in `switch (t.apply().action_run)`),
    any other Expression (value switch), or DefaultKeyset for `default`.
    `body` None means fall through to the next case (`a: b: { ... }`)."""

    label: Expression
    body: BlockStatement | None = None


@dataclass(eq=False)
class SwitchStatement(Statement):
    expr: Expression
    cases: list[SwitchCase]


@dataclass(eq=False)
class ReturnStatement(Statement):
    value: Expression | None = None


@dataclass(eq=False)
class ExitStatement(Statement):
    pass


@dataclass(eq=False)
class TransitionStatement(Statement):
    """transition NAME; or transition select(...) { ... };"""

    target: Name | SelectExpression


@dataclass(eq=False)
class Unsupported(Statement):
    """A construct the parser recognised but p4sim refuses (e.g. `for` loops, `break`).
    Also usable as a declaration; the checker raises P4Unsupported(what, span)."""

    what: str


# ====================================================================== declarations


@dataclass(eq=False)
class Declaration(Annotated):
    """Anything with a name introduced into a scope."""

    name: str


@dataclass(eq=False)
class VariableDecl(Declaration, Statement):
    """T x; / T x = init; (local variable, control/parser local, or statement)."""

    type: Type
    init: Expression | None = None


@dataclass(eq=False)
class ConstDecl(Declaration, Statement):
    type: Type
    value: Expression


@dataclass(eq=False)
class Field(Annotated):
    type: Type
    name: str


@dataclass(eq=False)
class FieldsDecl(Declaration):
    """What header, header_union and struct declarations have in common (never made itself)."""

    fields: list[Field] = field(default_factory=list)
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class HeaderDecl(FieldsDecl):
    pass


@dataclass(eq=False)
class HeaderUnionDecl(FieldsDecl):
    pass


@dataclass(eq=False)
class StructDecl(FieldsDecl):
    pass


@dataclass(eq=False)
class EnumMember(Annotated):
    name: str
    value: Expression | None = None  # serializable enums only


@dataclass(eq=False)
class EnumDecl(Declaration):
    """enum E { A, B } or serializable `enum bit<8> E { A = 1, B = 2 }`."""

    members: list[EnumMember] = field(default_factory=list)
    underlying: Type | None = None  # set for serializable enums


@dataclass(eq=False)
class TypedefDecl(Declaration):
    type: Type


@dataclass(eq=False)
class NewTypeDecl(Declaration):
    """`type bit<32> PortId_t;` (a distinct type, unlike typedef)."""

    type: Type


@dataclass(eq=False)
class ErrorDecl(Annotated):
    """error { A, B } (declarations accumulate across the program)."""

    members: list[Ident] = field(default_factory=list)


@dataclass(eq=False)
class MatchKindDecl(Annotated):
    members: list[Ident] = field(default_factory=list)


@dataclass(eq=False)
class Parameter(Annotated):
    direction: str  # 'in' | 'out' | 'inout' | '' (directionless)
    type: Type
    name: str
    default: Expression | None = None


@dataclass(eq=False)
class MethodPrototype(Declaration):
    """A method or constructor of an extern (`E(bit<32> size);`, `void read(out T r, in bit<32> i);`),
    or an extern function's signature. `return_type` None for constructors."""

    params: list[Parameter] = field(default_factory=list)
    type_params: list[TypeParam] = field(default_factory=list)
    return_type: Type | None = None
    is_constructor: bool = False
    is_abstract: bool = False


@dataclass(eq=False)
class ExternDecl(Declaration):
    """extern E<T> { constructors; methods; }"""

    type_params: list[TypeParam] = field(default_factory=list)
    methods: list[MethodPrototype] = field(default_factory=list)  # constructors included


@dataclass(eq=False)
class ExternFunctionDecl(Declaration):
    """extern void mark_to_drop(inout standard_metadata_t sm);"""

    proto: MethodPrototype


@dataclass(eq=False)
class SignatureDecl(Declaration):
    """What parser, control and package type declarations have in common (never made itself)."""

    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)


@dataclass(eq=False)
class ParserTypeDecl(SignatureDecl):
    """parser Parser<H, M>(packet_in b, out H hdr, ...);"""


@dataclass(eq=False)
class ControlTypeDecl(SignatureDecl):
    """control Ingress<H, M>(inout H hdr, ...);"""


@dataclass(eq=False)
class PackageTypeDecl(SignatureDecl):
    """package V1Switch<H, M>(Parser<H, M> p, ...);"""


@dataclass(eq=False)
class Instantiation(Declaration, Statement):
    """Type(args) name; e.g. `counter(8, CounterType.packets) c;`, `V1Switch(...) main;`
    `initializer` holds the abstract-method implementations of `E(...) x = { ... };`."""

    type: Type
    args: list[Argument] = field(default_factory=list)
    initializer: list[Declaration] | None = None


@dataclass(eq=False)
class ValueSetDecl(Declaration):
    """value_set<T>(size) name;"""

    element_type: Type
    size: Expression


@dataclass(eq=False)
class ParserState(Declaration):
    statements: list[Statement] = field(default_factory=list)
    transition: TransitionStatement | None = None  # None => reject (spec), checker may warn


@dataclass(eq=False)
class ParserDecl(Declaration):
    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    ctor_params: list[Parameter] = field(default_factory=list)
    locals: list[Declaration] = field(
        default_factory=list
    )  # variables, consts, instances, value_sets
    states: list[ParserState] = field(default_factory=list)


@dataclass(eq=False)
class ActionDecl(Declaration):
    params: list[Parameter] = field(default_factory=list)
    body: BlockStatement = field(default_factory=BlockStatement)


@dataclass(eq=False)
class FunctionDecl(Declaration):
    return_type: Type
    params: list[Parameter] = field(default_factory=list)
    type_params: list[TypeParam] = field(default_factory=list)
    body: BlockStatement = field(default_factory=BlockStatement)


# ---- tables


@dataclass(eq=False)
class KeyElement(Annotated):
    """`hdr.ipv4.dst : lpm @name("dst");`"""

    expr: Expression
    match_kind: str  # exact | ternary | lpm | range | optional | selector | ...
    match_kind_span: Span = NO_SPAN


@dataclass(eq=False)
class ActionRef(Annotated):
    """An element of `actions = { ... }` (annotations @tableonly/@defaultonly live here).
    `args` are bound arguments when written as `a(1)` (rare)."""

    name: Name
    args: list[Argument] | None = None


@dataclass(eq=False)
class Entry(Annotated):
    """A (const) table entry: `keyset : action(args);` optionally `priority = N :` first."""

    keyset: Expression  # one keyset element, or TupleKeyset for several keys
    action: MethodCall  # callee Name + bound args (args may be empty)
    priority: Expression | None = None
    is_const: bool = False  # per-entry `const` (P4 1.2.4 non-const entries lists)


@dataclass(eq=False)
class TableProperty(Annotated):
    """One table property. Exactly one of the payload fields is used, by `name`:
    key -> keys; actions -> actions; entries -> entries; everything else
    (default_action, size, counters, meters, implementation, custom) -> value."""

    name: str
    is_const: bool = False
    keys: list[KeyElement] | None = None
    actions: list[ActionRef] | None = None
    entries: list[Entry] | None = None
    value: Expression | None = None


@dataclass(eq=False)
class TableDecl(Declaration):
    properties: list[TableProperty] = field(default_factory=list)

    def prop(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None

    @property
    def keys(self) -> list[KeyElement]:
        p = self.prop("key")
        return p.keys or [] if p else []

    @property
    def actions(self) -> list[ActionRef]:
        p = self.prop("actions")
        return p.actions or [] if p else []

    @property
    def entries(self) -> list[Entry]:
        p = self.prop("entries")
        return p.entries or [] if p else []

    @property
    def default_action(self) -> TableProperty | None:
        return self.prop("default_action")


@dataclass(eq=False)
class ControlDecl(Declaration):
    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    ctor_params: list[Parameter] = field(default_factory=list)
    # actions, tables, instantiations, variables, consts, functions (in source order)
    locals: list[Declaration] = field(default_factory=list)
    apply: BlockStatement = field(default_factory=BlockStatement)


@dataclass(eq=False)
class Program(Node):
    """A whole translation unit: the top-level declarations of the main file and its
    includes (core.p4 / v1model.p4 first, as included), in source order."""

    declarations: list[Node] = field(default_factory=list)
    main_file: str = ""
    files: list[str] = field(default_factory=list)  # every file read, in include order
    warnings: list[str] = field(
        default_factory=list
    )  # "file:line:col: warning: ..." (#warning, deprecated forms)

    def find(self, cls: type, name: str | None = None) -> list[Any]:
        """Top-level declarations of a class (and name)."""
        return [
            d
            for d in self.declarations
            if isinstance(d, cls) and (name is None or getattr(d, "name", None) == name)
        ]


# Top-level declarations are: ConstDecl, HeaderDecl, HeaderUnionDecl, StructDecl, EnumDecl,
# TypedefDecl, NewTypeDecl, ErrorDecl, MatchKindDecl, ExternDecl, ExternFunctionDecl,
# ParserTypeDecl, ControlTypeDecl, PackageTypeDecl, ParserDecl, ControlDecl, ActionDecl,
# FunctionDecl, Instantiation, Unsupported.


def dump(node: Any, indent: int = 0) -> str:
    """A readable indented rendering of a tree (for `--emit ast` and tests); no spans."""
    pad = "  " * indent
    if isinstance(node, list):
        if not node:
            return "[]"
        return "[\n" + "".join(f"{pad}  {dump(x, indent + 1)}\n" for x in node) + f"{pad}]"
    if isinstance(node, dict):
        return "{" + ", ".join(f"{k}={dump(v, indent)}" for k, v in node.items()) + "}"
    if isinstance(node, Token):
        return repr(node.text)
    if not isinstance(node, Node):
        return repr(node)
    parts: list[str] = []
    for f in fields(node):
        if f.name in ("span", "checked_type"):
            continue
        value = getattr(node, f.name)
        if (
            value is None
            or value == []
            or (
                f.name
                in (
                    "top_level",
                    "structured",
                    "is_const",
                    "is_constructor",
                    "is_abstract",
                    "signed",
                )
                and value is False
            )
        ):
            continue
        if f.name == "body" and isinstance(node, Annotation):
            continue
        parts.append(f"{f.name}={dump(value, indent + 1)}")
    inline = f"{type(node).__name__}(" + ", ".join(parts) + ")"
    if len(inline) <= 100 and "\n" not in inline:
        return inline
    inner = "".join(f"{pad}  {p}\n" for p in parts)
    return f"{type(node).__name__}(\n{inner}{pad})"


__all__ = [
    n
    for n, v in list(globals().items())
    if not n.startswith("_")
    and (isinstance(v, type) or callable(v) or n.isupper())
    and n not in ("annotations", "Any", "Iterator", "KW_ONLY", "dataclass", "field", "fields")
]
