"""Recursive-descent parser for P4_16: preprocessed tokens -> `ast.Program`.

The grammar's ambiguities are settled the way p4c's parser settles them:
- Type names are tracked as they are declared (header, struct, enum, typedef, type,
  extern, parser, control, package, and type parameters in scope), so a statement
  starting with a type name is a declaration and `(T) x` is a cast.
- After a name or member, `<` is tried as a type-argument list followed by `(` (a generic
  call like `pkt.lookahead<bit<8>>()`); if that does not parse it is a comparison.
- `>` is a single token: two adjacent `>` make a right shift in expressions, and close two
  type-argument lists in types.
- `x[a:b]` is a slice, `x[a]` an index.
- Operator precedence is p4c's (bitwise operators bind tighter than comparisons).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from . import ast as A
from .ast import Token
from .errors import P4SyntaxError, Span
from .preprocess import Preprocessor

T = TypeVar("T")

# Words that can never be a name.
RESERVED = frozenset(
    """
    abstract action bit bool const control default else enum error exit extern false
    for header header_union if in inout int match_kind out package parser return select
    string struct switch table this transition true tuple typedef value_set varbit void
    break continue list
""".split()
)
# Keywords that are still valid names (p4c's nonTypeName).
CONTEXTUAL = frozenset({"apply", "key", "actions", "state", "entries", "type", "priority"})

TYPE_KEYWORDS = frozenset(
    {"bit", "int", "varbit", "bool", "error", "match_kind", "string", "void", "tuple", "list"}
)

# p4c's precedence, loosest first.
BINARY_PREC = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    ">": 4,
    "<=": 4,
    ">=": 4,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8,
    ">>": 8,
    "++": 9,
    "+": 9,
    "-": 9,
    "|+|": 9,
    "|-|": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
COMPOUND_ASSIGN = {
    "+=": "+",
    "-=": "-",
    "*=": "*",
    "/=": "/",
    "%=": "%",
    "&=": "&",
    "|=": "|",
    "^=": "^",
    "<<=": "<<",
}


class _Backtrack(Exception):
    """Internal: a speculative parse failed."""


class Parser:
    def __init__(self, tokens: list[Token]):
        self.toks = tokens
        self.pos = 0
        self.types: set[str] = set()
        self.scopes: list[set[str]] = []  # type parameters in scope
        self.speculating = 0
        self.warnings: list[
            str
        ] = []  # "file:line:col: warning: ..." for accepted-but-deprecated forms

    # ------------------------------------------------------------------ token helpers

    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def peek(self, k: int = 1) -> Token:
        i = self.pos + k
        return self.toks[i] if i < len(self.toks) else self.toks[-1]

    def at(self, text: str) -> bool:
        t = self.toks[self.pos]
        return t.text == text and t.kind in ("op", "ident")

    def at_op(self, text: str) -> bool:
        t = self.toks[self.pos]
        return t.kind == "op" and t.text == text

    def advance(self) -> Token:
        t = self.toks[self.pos]
        if t.kind != "eof":
            self.pos += 1
        return t

    def accept(self, text: str) -> Token | None:
        t = self.toks[self.pos]
        if t.text == text and t.kind in ("op", "ident"):
            self.pos += 1
            return t
        return None

    def error(self, msg: str, tok: Token | None = None) -> P4SyntaxError:
        if self.speculating:
            raise _Backtrack
        tok = tok or self.tok
        return P4SyntaxError(msg, tok.span)

    def _found(self, t: Token) -> str:
        if t.kind == "eof":
            return "end of file"
        if t.kind == "string":
            return f'"{t.text}"'
        return f"'{t.text}'"

    def expect(self, text: str, what: str | None = None) -> Token:
        t = self.toks[self.pos]
        if t.text == text and t.kind in ("op", "ident"):
            self.pos += 1
            return t
        raise self.error(f"expected {what or repr(text)} but found {self._found(t)}")

    def span(self, start: Token | Span) -> Span:
        """Span from `start` to the end of the last consumed token."""
        s = start.span if isinstance(start, Token) else start
        if self.pos == 0:
            return s
        last = self.toks[self.pos - 1].span
        if last.file != s.file:
            return s
        return Span(
            s.file, s.line, s.column, last.end_line or last.line, last.end_column or last.column
        )

    def speculate(self, fn: Callable[[], T]) -> T | None:
        """Run fn; on failure restore the position and return None."""
        saved = self.pos
        self.speculating += 1
        try:
            return fn()
        except (_Backtrack, P4SyntaxError):
            self.pos = saved
            return None
        finally:
            self.speculating -= 1

    # ------------------------------------------------------------------ names and types

    def is_type_name(self, name: str) -> bool:
        if name in self.types:
            return True
        return any(name in s for s in self.scopes)

    def name(self, what: str = "a name") -> Token:
        t = self.tok
        if t.kind == "ident" and (t.text not in RESERVED or t.text in CONTEXTUAL):
            self.pos += 1
            return t
        raise self.error(f"expected {what} but found {self._found(t)}")

    def declare_type(self, name: str) -> None:
        self.types.add(name)

    def starts_type(self) -> bool:
        t = self.tok
        if t.kind != "ident":
            return (
                t.kind == "op"
                and t.text == "."
                and self.peek().kind == "ident"
                and self.is_type_name(self.peek().text)
            )
        return t.text in TYPE_KEYWORDS or t.text == "_" or self.is_type_name(t.text)

    def type_params(self) -> list[A.TypeParam]:
        params: list[A.TypeParam] = []
        if not self.at_op("<"):
            return params
        self.advance()
        while True:
            t = self.name("a type parameter")
            params.append(A.TypeParam(t.text, span=t.span))
            if self.accept(","):
                continue
            self.expect(">")
            return params

    def push_scope(self, params: list[A.TypeParam]) -> None:
        self.scopes.append({p.name for p in params})

    def pop_scope(self) -> None:
        self.scopes.pop()

    def width(self) -> A.Expression:
        """The N of bit<N>: an integer, a name, or a parenthesized expression."""
        t = self.tok
        if t.kind == "int":
            self.advance()
            return self._int_literal(t)
        if self.at_op("("):
            self.advance()
            e = self.expression()
            self.expect(")")
            return e
        if t.kind == "ident" and t.text not in RESERVED:
            self.advance()
            return A.Name(t.text, span=t.span)
        raise self.error(f"expected a width but found {self._found(t)}")

    def type_ref(self, allow_stack: bool = True) -> A.Type:
        t = self.tok
        start = t
        typ: A.Type
        if t.kind == "ident":
            word = t.text
            if word == "bit" or word == "int" or word == "varbit":
                self.advance()
                if self.at_op("<"):
                    self.advance()
                    w = self.width()
                    self.expect(">")
                    cls = {"bit": A.BitType, "int": A.IntType, "varbit": A.VarbitType}[word]
                    typ = cls(w, span=self.span(start))
                elif word == "bit":
                    typ = A.BitType(A.IntLiteral(1, span=t.span, text="1"), span=t.span)
                elif word == "int":
                    typ = A.InfIntType(span=t.span)
                else:
                    raise self.error("varbit needs a width: varbit<N>")
            elif word in ("bool", "error", "match_kind", "string", "void"):
                self.advance()
                cls2 = {
                    "bool": A.BoolType,
                    "error": A.ErrorType,
                    "match_kind": A.MatchKindType,
                    "string": A.StringType,
                    "void": A.VoidType,
                }[word]
                typ = cls2(span=t.span)
            elif word == "_":
                self.advance()
                typ = A.DontCareType(span=t.span)
            elif word == "tuple":
                self.advance()
                typ = A.TupleType(self.type_args(), span=self.span(start))
            elif word == "list":
                self.advance()
                args = self.type_args()
                if len(args) != 1:
                    raise self.error("list takes one type argument: list<T>")
                typ = A.ListType(args[0], span=self.span(start))
            elif word not in RESERVED or word in CONTEXTUAL:
                self.advance()
                named = A.NamedType(word, span=t.span)
                if self.at_op("<"):
                    typ = A.SpecializedType(named, self.type_args(), span=self.span(start))
                else:
                    typ = named
            else:
                raise self.error(f"expected a type but found {self._found(t)}")
        elif t.kind == "op" and t.text == "." and self.peek().kind == "ident":
            self.advance()
            n = self.advance()
            typ = A.NamedType(n.text, top_level=True, span=self.span(start))
            if self.at_op("<"):
                typ = A.SpecializedType(typ, self.type_args(), span=self.span(start))
        else:
            raise self.error(f"expected a type but found {self._found(t)}")
        while allow_stack and self.at_op("["):
            self.advance()
            size = self.expression()
            self.expect("]")
            typ = A.StackType(typ, size, span=self.span(start))
        return typ

    def type_args(self) -> list[A.Type]:
        self.expect("<")
        args: list[A.Type] = []
        if self.at_op(">"):
            self.advance()
            return args
        while True:
            args.append(self.type_ref())
            if self.accept(","):
                continue
            self.expect(">", "'>' closing the type arguments")
            return args

    # ------------------------------------------------------------------ annotations

    def annotations(self) -> list[A.Annotation]:
        result: list[A.Annotation] = []
        while self.at_op("@"):
            at = self.advance()
            nt = self.tok
            if nt.kind != "ident":
                raise self.error(f"expected an annotation name but found {self._found(nt)}")
            self.advance()
            ann = A.Annotation(nt.text, span=at.span)
            # a body must touch the name: `@name("x")`
            if self.tok.kind == "op" and self.tok.text in ("(", "[") and not self.tok.space_before:
                open_ = self.advance()
                close = ")" if open_.text == "(" else "]"
                ann.structured = close == "]"
                depth = 0
                body: list[Token] = []
                while True:
                    b = self.tok
                    if b.kind == "eof":
                        raise self.error(f"unterminated annotation body of @{nt.text}", open_)
                    if b.kind == "op" and b.text in ("(", "[", "{"):
                        depth += 1
                    elif b.kind == "op" and b.text in (")", "]", "}"):
                        if depth == 0:
                            if b.text != close:
                                raise self.error(f"expected '{close}' closing @{nt.text}")
                            self.advance()
                            break
                        depth -= 1
                    body.append(b)
                    self.advance()
                ann.body = body
                ann.exprs, ann.kv = _parse_annotation_body(body)
            elif nt.text == "pragma":
                # @pragma name tokens... to end of line
                line = nt.span.line
                body = []
                while self.tok.kind != "eof" and self.tok.span.line == line:
                    body.append(self.advance())
                ann.body = body
            ann.span = self.span(at)
            result.append(ann)
        return result

    # ------------------------------------------------------------------ program

    def program(self, main_file: str, files: list[str]) -> A.Program:
        decls: list[A.Node] = []
        start = self.tok
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            decls.append(self.declaration())
        return A.Program(decls, main_file=main_file, files=files, span=start.span)

    def declaration(self) -> A.Node:
        anns = self.annotations()
        t = self.tok
        word = t.text if t.kind == "ident" else None
        d: A.Node
        if word == "const":
            d = self.const_decl()
        elif word == "extern":
            d = self.extern_decl()
        elif word == "action":
            d = self.action_decl()
        elif word == "parser":
            d = self.parser_decl()
        elif word == "control":
            d = self.control_decl()
        elif word == "package":
            d = self.package_decl()
        elif word in ("header", "header_union", "struct"):
            d = self.struct_like_decl()
        elif word == "enum":
            d = self.enum_decl()
        elif word in ("typedef", "type") and not (
            word == "type" and self.peek().text in ("=", ";")
        ):
            d = self.typedef_decl()
        elif word in ("error", "match_kind") and self.peek().text == "{":
            d = self.error_like_decl()
        elif self.starts_type() or (
            t.kind == "ident" and self.peek().kind == "ident" and self.peek(2).text in ("(", "<")
        ):
            # the second form: a generic function whose return type is its own type
            # parameter, `T max<T>(in T a, in T b) { ... }`
            d = self.function_or_instantiation()
        else:
            raise self.error(f"expected a declaration but found {self._found(t)}")
        if isinstance(d, A.Annotated):
            d.annotations = anns + d.annotations
        return d

    def const_decl(self) -> A.ConstDecl:
        start = self.expect("const")
        typ = self.type_ref()
        n = self.name()
        self.expect("=")
        value = self.expression()
        self.expect(";")
        return A.ConstDecl(n.text, typ, value, span=self.span(start))

    def struct_like_decl(self) -> A.Declaration:
        kw = self.advance()
        n = self.name("a type name")
        self.declare_type(n.text)
        tparams = self.type_params()
        self.push_scope(tparams)
        self.expect("{")
        fields: list[A.Field] = []
        while not self.at_op("}"):
            fstart = self.tok
            fanns = self.annotations()
            ftype = self.type_ref()
            fname = self.name("a field name")
            self.expect(";")
            fields.append(A.Field(ftype, fname.text, annotations=fanns, span=self.span(fstart)))
        self.expect("}")
        self.pop_scope()
        cls = {"header": A.HeaderDecl, "header_union": A.HeaderUnionDecl, "struct": A.StructDecl}[
            kw.text
        ]
        return cls(n.text, fields, tparams, span=self.span(kw))

    def enum_decl(self) -> A.EnumDecl:
        kw = self.expect("enum")
        underlying: A.Type | None = None
        if not (self.tok.kind == "ident" and self.peek().text == "{"):
            underlying = self.type_ref()
        n = self.name("an enum name")
        self.declare_type(n.text)
        self.expect("{")
        members: list[A.EnumMember] = []
        while not self.at_op("}"):
            mstart = self.tok
            manns = self.annotations()
            m = self.name("an enum member")
            value = None
            if self.accept("="):
                value = self.expression()
            members.append(A.EnumMember(m.text, value, annotations=manns, span=self.span(mstart)))
            if not self.accept(","):
                break
        self.expect("}")
        return A.EnumDecl(n.text, members, underlying, span=self.span(kw))

    def typedef_decl(self) -> A.Declaration:
        kw = self.advance()
        typ = self.type_ref()
        n = self.name("a type name")
        self.declare_type(n.text)
        self.expect(";")
        cls = A.TypedefDecl if kw.text == "typedef" else A.NewTypeDecl
        return cls(n.text, typ, span=self.span(kw))

    def error_like_decl(self) -> A.Node:
        kw = self.advance()
        self.expect("{")
        members: list[A.Ident] = []
        while not self.at_op("}"):
            m = self.name("a member name")
            members.append(A.Ident(m.text, span=m.span))
            if not self.accept(","):
                break
        self.expect("}")
        cls = A.ErrorDecl if kw.text == "error" else A.MatchKindDecl
        return cls(members, span=self.span(kw))

    def parameters(self) -> list[A.Parameter]:
        self.expect("(")
        params: list[A.Parameter] = []
        if self.accept(")"):
            return params
        while True:
            pstart = self.tok
            panns = self.annotations()
            direction = ""
            if self.tok.kind == "ident" and self.tok.text in ("in", "out", "inout"):
                direction = self.advance().text
            ptype = self.type_ref()
            pname = self.name("a parameter name")
            default = None
            if self.accept("="):
                default = self.expression()
            params.append(
                A.Parameter(
                    direction, ptype, pname.text, default, annotations=panns, span=self.span(pstart)
                )
            )
            if self.accept(","):
                continue
            self.expect(")", "',' or ')' in the parameter list")
            return params

    def extern_decl(self) -> A.Declaration:
        kw = self.expect("extern")
        # extern object: NAME [<T, ...>] {
        is_object = False
        if self.tok.kind == "ident" and self.tok.text not in RESERVED:
            nxt = self.peek()
            if nxt.text == "{":
                is_object = True
            elif nxt.text == "<":
                save = self.pos
                self.advance()
                self.speculate(self.type_params)
                is_object = self.at_op("{")
                self.pos = save
        if not is_object:
            proto = self.method_prototype(extern_name=None)
            return A.ExternFunctionDecl(proto.name, proto, span=self.span(kw))
        n = self.name("an extern name")
        self.declare_type(n.text)
        tparams = self.type_params()
        self.push_scope(tparams)
        self.expect("{")
        methods: list[A.MethodPrototype] = []
        while not self.at_op("}"):
            mstart = self.tok
            manns = self.annotations()
            m = self.method_prototype(extern_name=n.text)
            m.annotations = manns + m.annotations
            m.span = self.span(mstart)
            methods.append(m)
        self.expect("}")
        self.pop_scope()
        return A.ExternDecl(n.text, tparams, methods, span=self.span(kw))

    def method_prototype(self, extern_name: str | None) -> A.MethodPrototype:
        start = self.tok
        is_abstract = bool(self.accept("abstract"))
        # constructor: NAME ( ...
        if extern_name is not None and self.tok.text == extern_name and self.peek().text == "(":
            n = self.advance()
            params = self.parameters()
            self.expect(";")
            return A.MethodPrototype(
                n.text, params, [], None, is_constructor=True, span=self.span(start)
            )
        # the return type may name type parameters declared after the name: `T f<T>()`;
        # any identifier is a type in this position, so parse it first.
        rtype = self.type_ref()
        n = self.name("a method name")
        tparams = self.type_params()
        self.push_scope(tparams)
        params = self.parameters()
        self.pop_scope()
        self.expect(";")
        return A.MethodPrototype(
            n.text, params, tparams, rtype, is_abstract=is_abstract, span=self.span(start)
        )

    def package_decl(self) -> A.PackageTypeDecl:
        kw = self.expect("package")
        n = self.name("a package name")
        self.declare_type(n.text)
        tparams = self.type_params()
        self.push_scope(tparams)
        params = self.parameters()
        self.pop_scope()
        self.expect(";")
        return A.PackageTypeDecl(n.text, tparams, params, span=self.span(kw))

    def action_decl(self) -> A.ActionDecl:
        kw = self.expect("action")
        n = self.name("an action name")
        params = self.parameters()
        body = self.block()
        return A.ActionDecl(n.text, params, body, span=self.span(kw))

    def function_or_instantiation(self) -> A.Node:
        start = self.tok
        typ = self.type_ref()
        if self.at_op("("):
            return self.instantiation_rest(typ, start)
        n = self.name("a function name")
        tparams = self.type_params()
        self.push_scope(tparams)
        params = self.parameters()
        if not self.at_op("{"):
            raise self.error(f"expected a function body '{{' but found {self._found(self.tok)}")
        body = self.block()
        self.pop_scope()
        return A.FunctionDecl(n.text, typ, params, tparams, body, span=self.span(start))

    def instantiation_rest(self, typ: A.Type, start: Token) -> A.Instantiation:
        args = self.arguments()
        n = self.name("an instance name")
        initializer = None
        if self.accept("="):
            # abstract-method implementations: `= { void f() { ... } }`
            self.expect("{")
            initializer = []
            while not self.at_op("}"):
                initializer.append(self.declaration())
            self.expect("}")
        self.expect(";")
        return A.Instantiation(n.text, typ, args, initializer, span=self.span(start))

    # ------------------------------------------------------------------ parser / control

    def _block_head(
        self, keyword: str
    ) -> tuple[Token, Token, list[A.TypeParam], list[A.Parameter], list[A.Parameter] | None]:
        """`parser`/`control` NAME <T...> (params): (keyword, name, type params, params,
        constructor params). Constructor params are None for a type declaration (`;`,
        scope already closed); otherwise the body's `{` is consumed and the scope is open."""
        kw = self.expect(keyword)
        n = self.name(f"a {keyword} name")
        self.declare_type(n.text)
        tparams = self.type_params()
        self.push_scope(tparams)
        params = self.parameters()
        if self.accept(";"):
            self.pop_scope()
            return kw, n, tparams, params, None
        ctor = self.parameters() if self.at_op("(") else []
        self.expect("{")
        return kw, n, tparams, params, ctor

    def parser_decl(self) -> A.Declaration:
        kw, n, tparams, params, ctor = self._block_head("parser")
        if ctor is None:
            return A.ParserTypeDecl(n.text, tparams, params, span=self.span(kw))
        locals_: list[A.Declaration] = []
        states: list[A.ParserState] = []
        while not self.at_op("}"):
            if self.accept(";"):
                continue
            anns = self.annotations()
            if self.at("state") and self.peek().kind == "ident":
                st = self.parser_state()
                st.annotations = anns
                states.append(st)
                continue
            if self.at("value_set"):
                d: A.Node = self.value_set_decl()
            elif self.at("const"):
                d = self.const_decl()
            elif self.starts_type():
                d = self.local_declaration()
            else:
                raise self.error(
                    f"expected a state or local declaration in parser "
                    f"'{n.text}' but found {self._found(self.tok)}"
                )
            assert isinstance(d, A.Declaration)
            d.annotations = anns + d.annotations
            locals_.append(d)
        self.expect("}")
        self.pop_scope()
        return A.ParserDecl(n.text, tparams, params, ctor, locals_, states, span=self.span(kw))

    def value_set_decl(self) -> A.ValueSetDecl:
        kw = self.expect("value_set")
        self.expect("<")
        etype = self.type_ref()
        self.expect(">")
        self.expect("(")
        size = self.expression()
        self.expect(")")
        n = self.name("a value_set name")
        self.expect(";")
        return A.ValueSetDecl(n.text, etype, size, span=self.span(kw))

    def parser_state(self) -> A.ParserState:
        kw = self.expect("state")
        n = self.name("a state name")
        self.expect("{")
        stmts: list[A.Statement] = []
        transition: A.TransitionStatement | None = None
        while not self.at_op("}"):
            if self.at("transition"):
                transition = self.transition_statement()
                if not self.at_op("}"):
                    raise self.error("the transition must be the last statement of a state")
                break
            stmts.append(self.statement())
        self.expect("}")
        return A.ParserState(n.text, stmts, transition, span=self.span(kw))

    def transition_statement(self) -> A.TransitionStatement:
        kw = self.expect("transition")
        target: A.Name | A.SelectExpression
        if self.at("select"):
            target = self.select_expression()
            self.accept(";")
        else:
            t = self.name("a state name or select")
            target = A.Name(t.text, span=t.span)
            self.expect(";")
        return A.TransitionStatement(target, span=self.span(kw))

    def select_expression(self) -> A.SelectExpression:
        kw = self.expect("select")
        self.expect("(")
        exprs = [self.expression()]
        while self.accept(","):
            exprs.append(self.expression())
        self.expect(")")
        self.expect("{")
        cases: list[A.SelectCase] = []
        while not self.at_op("}"):
            cstart = self.tok
            anns = self.annotations()
            keyset = self.keyset_expression()
            self.expect(":")
            st = self.name("a state name")
            self.expect(";")
            cases.append(
                A.SelectCase(
                    keyset, A.Name(st.text, span=st.span), annotations=anns, span=self.span(cstart)
                )
            )
        self.expect("}")
        return A.SelectExpression(exprs, cases, span=self.span(kw))

    def simple_keyset(self) -> A.Expression:
        t = self.tok
        if t.kind == "ident" and t.text == "default":
            self.advance()
            return A.DefaultKeyset(span=t.span)
        if t.kind == "ident" and t.text == "_" and self.peek().text in (",", ")", ":"):
            self.advance()
            return A.DontCare(span=t.span)
        e = self.expression()
        if self.at_op("&&&"):
            self.advance()
            mask = self.expression()
            return A.MaskKeyset(e, mask, span=self.span(t))
        if self.at_op(".."):
            self.advance()
            hi = self.expression()
            return A.RangeKeyset(e, hi, span=self.span(t))
        return e

    def keyset_expression(self) -> A.Expression:
        if self.at_op("("):
            start = self.tok

            def tuple_keyset() -> A.Expression:
                self.expect("(")
                elems = [self.simple_keyset()]
                while self.accept(","):
                    elems.append(self.simple_keyset())
                self.expect(")")
                if not self.at_op(":"):
                    raise _Backtrack
                if len(elems) == 1:
                    return elems[0]
                return A.TupleKeyset(elems, span=self.span(start))

            r = self.speculate(tuple_keyset)
            if r is not None:
                return r
        return self.simple_keyset()

    def control_decl(self) -> A.Declaration:
        kw, n, tparams, params, ctor = self._block_head("control")
        if ctor is None:
            return A.ControlTypeDecl(n.text, tparams, params, span=self.span(kw))
        locals_: list[A.Declaration] = []
        apply: A.BlockStatement | None = None
        while not self.at_op("}"):
            if self.accept(";"):
                continue  # a stray ';' (p4c accepts `action a() {};`)
            anns = self.annotations()
            if self.at("apply") and self.peek().text == "{":
                self.advance()
                apply = self.block()
                apply.annotations = anns + apply.annotations
                continue
            d: A.Node
            if self.at("action"):
                d = self.action_decl()
            elif self.at("table"):
                d = self.table_decl()
            elif self.at("const"):
                d = self.const_decl()
            elif self.starts_type():
                d = self.local_declaration(allow_function=True)
            else:
                raise self.error(
                    f"expected a local declaration or 'apply' in control "
                    f"'{n.text}' but found {self._found(self.tok)}"
                )
            assert isinstance(d, A.Declaration)
            d.annotations = anns + d.annotations
            locals_.append(d)
        close = self.expect("}")
        self.pop_scope()
        if apply is None:
            raise P4SyntaxError(f"control '{n.text}' has no apply block", close.span)
        return A.ControlDecl(n.text, tparams, params, ctor, locals_, apply, span=self.span(kw))

    def local_declaration(self, allow_function: bool = False) -> A.Declaration:
        """A variable, instantiation (or a function in a control) starting with a type."""
        start = self.tok
        typ = self.type_ref()
        if self.at_op("("):
            return self.instantiation_rest(typ, start)
        n = self.name("a variable name")
        if allow_function and (self.at_op("(") or self.at_op("<")):
            tparams = self.type_params()
            self.push_scope(tparams)
            params = self.parameters()
            body = self.block()
            self.pop_scope()
            return A.FunctionDecl(n.text, typ, params, tparams, body, span=self.span(start))
        init = None
        if self.accept("="):
            init = self.expression()
        self.expect(";", "';' after the variable declaration")
        return A.VariableDecl(n.text, typ, init, span=self.span(start))

    # ------------------------------------------------------------------ tables

    def table_decl(self) -> A.TableDecl:
        kw = self.expect("table")
        n = self.name("a table name")
        if self.at_op("("):
            # the draft P4_16 form `table t() { ... }`: p4c still takes an empty list, with a warning
            open_ = self.tok
            if self.parameters():
                raise P4SyntaxError(
                    f"table '{n.text}': tables take no parameters "
                    "(pass values through the control's parameters)",
                    self.span(open_),
                )
            if not self.speculating:  # a speculative parse is redone for real
                self.warnings.append(
                    f"{open_.span}: warning: table '{n.text}': the '()' after a table name "
                    f"is deprecated; write 'table {n.text} {{'"
                )
        self.expect("{")
        props: list[A.TableProperty] = []
        while not self.at_op("}"):
            pstart = self.tok
            anns = self.annotations()
            is_const = bool(self.accept("const"))
            pn = self.tok
            if pn.kind != "ident":
                raise self.error(f"expected a table property but found {self._found(pn)}")
            self.advance()
            prop = A.TableProperty(pn.text, is_const, annotations=anns)
            if pn.text == "key":
                self.expect("=")
                prop.keys = self.key_elements()
            elif pn.text == "actions":
                self.expect("=")
                prop.actions = self.action_list()
            elif pn.text == "entries":
                self.expect("=")
                prop.entries = self.entries_list(is_const)
            else:
                self.expect("=", f"'=' after table property '{pn.text}'")
                prop.value = self.expression()
                self.expect(";")
            prop.span = self.span(pstart)
            props.append(prop)
        self.expect("}")
        return A.TableDecl(n.text, props, span=self.span(kw))

    def key_elements(self) -> list[A.KeyElement]:
        self.expect("{")
        keys: list[A.KeyElement] = []
        while not self.at_op("}"):
            kstart = self.tok
            anns = self.annotations()  # p4c's grammar puts them after the kind; accept both
            e = self.expression()
            self.expect(":")
            mk = self.name("a match kind")
            anns += self.annotations()
            self.expect(";")
            keys.append(A.KeyElement(e, mk.text, mk.span, annotations=anns, span=self.span(kstart)))
        self.expect("}")
        self.accept(";")
        return keys

    def action_list(self) -> list[A.ActionRef]:
        self.expect("{")
        refs: list[A.ActionRef] = []
        while not self.at_op("}"):
            rstart = self.tok
            anns = self.annotations()
            top = bool(self.accept("."))
            t = self.name("an action name")
            args = self.arguments() if self.at_op("(") else None
            self.expect(";")
            refs.append(
                A.ActionRef(
                    A.Name(t.text, top, span=t.span), args, annotations=anns, span=self.span(rstart)
                )
            )
        self.expect("}")
        self.accept(";")
        return refs

    def entries_list(self, is_const: bool) -> list[A.Entry]:
        self.expect("{")
        entries: list[A.Entry] = []
        while not self.at_op("}"):
            estart = self.tok
            anns = self.annotations()
            entry_const = bool(self.accept("const"))
            priority = None
            if self.at("priority") and self.peek().text == "=":
                self.advance()
                self.advance()
                priority = self.expression()
                self.expect(":")
            keyset = self.keyset_expression()
            self.expect(":")
            astart = self.tok
            top = bool(self.accept("."))
            an = self.name("an action name")
            callee = A.Name(an.text, top, span=an.span)
            args = self.arguments() if self.at_op("(") else []
            action = A.MethodCall(callee, args, span=self.span(astart))
            anns += self.annotations()
            self.expect(";")
            entries.append(
                A.Entry(
                    keyset,
                    action,
                    priority,
                    entry_const or is_const,
                    annotations=anns,
                    span=self.span(estart),
                )
            )
        self.expect("}")
        self.accept(";")
        return entries

    # ------------------------------------------------------------------ statements

    def block(self) -> A.BlockStatement:
        start = self.expect("{")
        stmts: list[A.Statement] = []
        while not self.at_op("}"):
            if self.tok.kind == "eof":
                raise self.error("expected '}' but found end of file")
            stmts.append(self.statement())
        self.expect("}")
        return A.BlockStatement(stmts, span=self.span(start))

    def statement(self) -> A.Statement:
        anns = self.annotations()
        s = self._statement()
        if anns:
            s.annotations = anns + s.annotations
        return s

    def _statement(self) -> A.Statement:
        t = self.tok
        word = t.text if t.kind == "ident" else None
        if t.kind == "op":
            if t.text == "{":
                return self.block()
            if t.text == ";":
                self.advance()
                return A.EmptyStatement(span=t.span)
        if word == "if":
            self.advance()
            self.expect("(")
            cond = self.expression()
            self.expect(")")
            then = self.statement()
            else_ = None
            if self.accept("else"):
                else_ = self.statement()
            return A.IfStatement(cond, then, else_, span=self.span(t))
        if word == "switch":
            return self.switch_statement()
        if word == "return":
            self.advance()
            value = None if self.at_op(";") else self.expression()
            self.expect(";")
            return A.ReturnStatement(value, span=self.span(t))
        if word == "exit":
            self.advance()
            self.expect(";")
            return A.ExitStatement(span=self.span(t))
        if word == "const":
            return self.const_decl()
        if word == "transition":
            raise self.error("'transition' is only allowed at the end of a parser state")
        if word == "for":
            return self.for_statement()
        if word in ("break", "continue"):
            self.advance()
            self.expect(";")
            node = A.BreakStatement if word == "break" else A.ContinueStatement
            return node(span=self.span(t))
        if self.starts_type() and not (t.kind == "ident" and self.peek().text in (".", "=")):
            # a declaration: `T x;`, `T x = e;`, `T(args) x;`
            return self.local_declaration()
        # expression statement: assignment or call
        lhs = self.expression()
        op = self.tok
        if op.kind == "op" and (op.text == "=" or op.text in COMPOUND_ASSIGN):
            self.advance()
            rhs = self.expression()
            self.expect(";")
            if op.text != "=":
                rhs = A.Binary(COMPOUND_ASSIGN[op.text], lhs, rhs, span=rhs.span)
            return A.Assignment(lhs, rhs, span=self.span(t))
        if (
            op.kind == "op"
            and op.text == ">"
            and self.peek().text == ">="
            and not self.peek().space_before
        ):
            self.advance()
            self.advance()
            rhs = self.expression()
            self.expect(";")
            return A.Assignment(lhs, A.Binary(">>", lhs, rhs, span=rhs.span), span=self.span(t))
        if isinstance(lhs, A.MethodCall):
            self.expect(";", "';' after the call")
            return A.MethodCallStatement(lhs, span=self.span(t))
        raise self.error(f"expected '=' or a call in this statement but found {self._found(op)}")

    def for_statement(self) -> A.Statement:
        """`for (init; cond; update) stmt` or `for (T x in e) stmt` / `for (T x in lo..hi) stmt`."""
        kw = self.expect("for")
        self.expect("(")

        def for_in() -> tuple[A.Type, Token]:
            typ = self.type_ref()
            n = self.name("the loop variable")
            self.expect("in")
            return typ, n

        head = self.speculate(for_in) if self.starts_type() else None
        if head is not None:
            coll = self.expression()
            hi = None
            if self.accept(".."):
                hi = self.expression()
            self.expect(")")
            body = self.statement()
            return A.ForInStatement(head[0], head[1].text, coll, hi, body, span=self.span(kw))
        init = self.for_simple_statements(";")
        self.expect(";")
        cond = None if self.at_op(";") else self.expression()
        self.expect(";")
        update = self.for_simple_statements(")")
        self.expect(")")
        body = self.statement()
        return A.ForStatement(init, cond, update, body, span=self.span(kw))

    def for_simple_statements(self, end: str) -> list[A.Statement]:
        """Comma-separated declarations, assignments and calls of a for-loop header."""
        out: list[A.Statement] = []
        while not self.at_op(end):
            start = self.tok
            if self.starts_type() and not (
                start.kind == "ident" and self.peek().text in (".", "=")
            ):
                typ = self.type_ref()
                n = self.name("a variable name")
                init = self.expression() if self.accept("=") else None
                out.append(A.VariableDecl(n.text, typ, init, span=self.span(start)))
            else:
                lhs = self.expression()
                op = self.tok
                if op.kind == "op" and (op.text == "=" or op.text in COMPOUND_ASSIGN):
                    self.advance()
                    rhs = self.expression()
                    if op.text != "=":
                        rhs = A.Binary(COMPOUND_ASSIGN[op.text], lhs, rhs, span=rhs.span)
                    out.append(A.Assignment(lhs, rhs, span=self.span(start)))
                elif isinstance(lhs, A.MethodCall):
                    out.append(A.MethodCallStatement(lhs, span=self.span(start)))
                else:
                    raise self.error(
                        f"expected '=' or a call in the for-loop header but found {self._found(op)}"
                    )
            if not self.accept(","):
                break
        return out

    def unsupported_loop(self) -> A.Statement:
        t = self.advance()
        if t.text == "for":
            self.expect("(")
            depth = 0
            while not (depth == 0 and self.at_op(")")):
                if self.tok.kind == "eof":
                    raise self.error("unterminated for loop header", t)
                if self.at_op("("):
                    depth += 1
                elif self.at_op(")"):
                    depth -= 1
                self.advance()
            self.expect(")")
            self.statement()
        else:
            self.expect(";")
        return A.Unsupported(f"'{t.text}' statements", span=self.span(t))

    def switch_statement(self) -> A.SwitchStatement:
        kw = self.expect("switch")
        self.expect("(")
        e = self.expression()
        self.expect(")")
        self.expect("{")
        cases: list[A.SwitchCase] = []
        while not self.at_op("}"):
            cstart = self.tok
            label: A.Expression
            if self.at("default"):
                d = self.advance()
                label = A.DefaultKeyset(span=d.span)
            else:
                label = self.expression()
            self.expect(":")
            body = self.block() if self.at_op("{") else None
            cases.append(A.SwitchCase(label, body, span=self.span(cstart)))
        self.expect("}")
        return A.SwitchStatement(e, cases, span=self.span(kw))

    # ------------------------------------------------------------------ expressions

    def expression(self) -> A.Expression:
        cond = self.binary(1)
        if self.at_op("?"):
            self.advance()
            then = self.expression()
            self.expect(":", "':' of the conditional expression")
            else_ = self.expression()
            return A.Ternary(cond, then, else_, span=cond.span.to(else_.span))
        return cond

    def _binop(self) -> tuple[str, int] | None:
        t = self.tok
        if t.kind != "op":
            return None
        text = t.text
        if text == ">":
            nxt = self.peek()
            if nxt.kind == "op" and nxt.text == ">" and not nxt.space_before:
                return ">>", 2
            if nxt.kind == "op" and nxt.text == ">=" and not nxt.space_before:
                return None  # `>>=` compound assignment
        if text in BINARY_PREC:
            return text, 1
        return None

    def binary(self, min_prec: int) -> A.Expression:
        left = self.unary()
        while True:
            b = self._binop()
            if b is None:
                return left
            op, ntoks = b
            prec = BINARY_PREC[op]
            if prec < min_prec:
                return left
            for _ in range(ntoks):
                self.advance()
            right = self.binary(prec + 1)
            left = A.Binary(op, left, right, span=left.span.to(right.span))

    def unary(self) -> A.Expression:
        t = self.tok
        if t.kind == "op":
            if t.text in ("!", "~", "-", "+"):
                self.advance()
                operand = self.unary()
                return A.Unary(t.text, operand, span=t.span.to(operand.span))
            if t.text == "(":
                cast = self.speculate(self._cast)
                if cast is not None:
                    return cast
        return self.postfix(self.primary())

    def _cast(self) -> A.Expression:
        start = self.expect("(")
        nt = self.tok
        if not self.starts_type() or (nt.kind == "ident" and nt.text == "_"):
            raise _Backtrack
        typ = self.type_ref()
        self.expect(")")
        nxt = self.tok
        # `(T) x` needs an operand right after; `(T).m`, `(x) + 1` with non-type x are not casts
        if nxt.kind == "eof" or (
            nxt.kind == "op" and nxt.text not in ("(", "{", "-", "!", "~", "+")
        ):
            raise _Backtrack
        if nxt.kind == "op" and nxt.text in ("-", "+") and isinstance(typ, A.NamedType):
            raise _Backtrack  # `(x) - 1`: x is more likely a value than a type
        operand = self.unary()
        return A.Cast(typ, operand, span=start.span.to(operand.span))

    def primary(self) -> A.Expression:
        t = self.tok
        k = t.kind
        if k == "int":
            self.advance()
            return self._int_literal(t)
        if k == "string":
            self.advance()
            return A.StringLiteral(t.text, span=t.span)
        if k == "op":
            if t.text == "(":
                self.advance()
                e = self.expression()
                self.expect(")")
                return e
            if t.text == "{":
                return self.brace_expression()
            if t.text == "." and self.peek().kind == "ident":
                self.advance()
                n = self.advance()
                return A.Name(n.text, top_level=True, span=t.span.to(n.span))
            raise self.error(f"expected an expression but found {self._found(t)}")
        if k == "ident":
            w = t.text
            if w == "true" or w == "false":
                self.advance()
                return A.BoolLiteral(w == "true", span=t.span)
            if w == "this":
                self.advance()
                return A.This(span=t.span)
            if w == "_":
                self.advance()
                return A.DontCare(span=t.span)
            if w in ("error", "bit", "int", "varbit", "bool", "string", "tuple", "list"):
                typ = self.type_ref(allow_stack=False)
                return A.TypeRef(typ, span=typ.span)
            if w not in RESERVED or w in CONTEXTUAL:
                self.advance()
                return A.Name(w, span=t.span)
        raise self.error(f"expected an expression but found {self._found(t)}")

    def _int_literal(self, t: Token) -> A.IntLiteral:
        value, width, signed = t.value
        return A.IntLiteral(value, width, signed, t.text, span=t.span)

    def brace_expression(self) -> A.Expression:
        start = self.expect("{")
        if self.at_op("#"):
            self.advance()
            self.expect("}")
            return A.InvalidExpression(span=self.span(start))
        if self.accept("}"):
            return A.ListExpression([], span=self.span(start))
        if self.at_op("..."):
            # `{...}`: every field takes its default value
            self.advance()
            self.expect("}")
            return A.StructExpression([], dots=True, span=self.span(start))
        # {name = value, ...} is a struct expression
        dots = False
        if self.tok.kind == "ident" and self.peek().kind == "op" and self.peek().text == "=":
            fields: list[A.NamedExpression] = []
            while True:
                fstart = self.tok
                n = self.name("a field name")
                self.expect("=")
                v = self.expression()
                fields.append(A.NamedExpression(n.text, v, span=self.span(fstart)))
                if not self.accept(","):
                    break
                if self.at_op("}"):
                    break
                if self.at_op("..."):
                    self.advance()
                    dots = True
                    break
            self.expect("}")
            return A.StructExpression(fields, dots=dots, span=self.span(start))
        elems = [self.expression()]
        while self.accept(","):
            if self.at_op("}"):
                break
            if self.at_op("..."):
                self.advance()
                dots = True
                break
            elems.append(self.expression())
        self.expect("}")
        return A.ListExpression(elems, dots=dots, span=self.span(start))

    def arguments(self) -> list[A.Argument]:
        self.expect("(")
        args: list[A.Argument] = []
        if self.accept(")"):
            return args
        while True:
            astart = self.tok
            name = None
            if astart.kind == "ident" and self.peek().kind == "op" and self.peek().text == "=":
                name = self.advance().text
                self.advance()
            value = self.expression()
            args.append(A.Argument(value, name, span=self.span(astart)))
            if self.accept(","):
                continue
            self.expect(")", "',' or ')' in the argument list")
            return args

    def _generic_call_args(self) -> list[A.Type]:
        targs = self.type_args()
        if not self.at_op("("):
            raise _Backtrack
        return targs

    def postfix(self, e: A.Expression) -> A.Expression:
        while True:
            t = self.tok
            if t.kind != "op":
                return e
            if t.text == ".":
                self.advance()
                m = self.tok
                if m.kind != "ident":
                    raise self.error(f"expected a member name after '.' but found {self._found(m)}")
                self.advance()
                e = A.Member(e, m.text, span=e.span.to(m.span))
            elif t.text == "[":
                self.advance()
                idx = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    close = self.expect("]")
                    e = A.Slice(e, idx, lo, span=e.span.to(close.span))
                else:
                    close = self.expect("]")
                    e = A.Index(e, idx, span=e.span.to(close.span))
            elif t.text == "(":
                args = self.arguments()
                e = A.MethodCall(e, args, span=self.span(e.span))
            elif t.text == "<" and isinstance(e, (A.Name, A.Member, A.TypeRef)):
                targs = self.speculate(self._generic_call_args)
                if targs is None:
                    return e
                args = self.arguments()
                e = A.MethodCall(e, args, targs, span=self.span(e.span))
            else:
                return e


def _parse_annotation_body(
    body: list[Token],
) -> tuple[list[A.Expression] | None, dict[str, A.Expression] | None]:
    """Parse an annotation body as an expression list and/or a key=value list."""
    if not body:
        return [], None
    eof = Token("eof", "", body[-1].span, None, True)
    exprs: list[A.Expression] | None = None
    kv: dict[str, A.Expression] | None = None
    p = Parser([*body, eof])
    p.speculating = 1
    try:
        items = [p.expression()]
        while p.accept(","):
            items.append(p.expression())
        if p.tok.kind == "eof":
            exprs = items
    except (_Backtrack, P4SyntaxError):
        exprs = None
    if body[0].kind == "ident" and len(body) > 1 and body[1].text == "=":
        p = Parser([*body, eof])
        p.speculating = 1
        try:
            pairs: dict[str, A.Expression] = {}
            while True:
                k = p.name()
                p.expect("=")
                pairs[k.text] = p.expression()
                if not p.accept(","):
                    break
            if p.tok.kind == "eof":
                kv = pairs
        except (_Backtrack, P4SyntaxError):
            kv = None
    return exprs, kv


def parse_tokens(
    tokens: list[Token],
    main_file: str = "",
    files: list[str] | None = None,
    warnings: list[str] | None = None,
) -> A.Program:
    """Parse preprocessed tokens; `warnings` (the preprocessor's) go first in Program.warnings."""
    parser = Parser(tokens)
    try:
        prog = parser.program(main_file, files or [main_file])
    except RecursionError:
        raise P4SyntaxError("nested too deeply for p4sim's parser", parser.tok.span) from None
    prog.warnings = list(warnings or []) + parser.warnings
    return prog


def _preprocess(run: Callable[[], T], what: str) -> T:
    try:
        return run()
    except RecursionError:
        raise P4SyntaxError(
            f"macro expansion nested too deeply in {what}", Span(what, 0, 0)
        ) from None


def parse_program(path: str, include_dirs=(), defines: dict[str, str] | None = None) -> A.Program:
    """Preprocess and parse the file at `path`."""
    result = _preprocess(lambda: Preprocessor(include_dirs, defines).run_file(path), path)
    return parse_tokens(
        result.tokens, result.files[0] if result.files else path, result.files, result.warnings
    )


def parse_text(
    text: str, filename: str = "<string>", include_dirs=(), defines: dict[str, str] | None = None
) -> A.Program:
    """Preprocess and parse source text (`filename` is used in spans and for "..." includes)."""
    result = _preprocess(
        lambda: Preprocessor(include_dirs, defines).run_text(text, filename), filename
    )
    return parse_tokens(result.tokens, filename, result.files, result.warnings)
