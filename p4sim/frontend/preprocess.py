"""A C-style preprocessor for P4 source, working on tokens.

Every file is lexed once (cached by path and modification time); directives are
interpreted and macros expanded on the token stream, so each output token keeps the span
of the text the user wrote: a token produced by a macro carries the span of the macro's
use (where an error is best reported), and `#line` rewrites the reported positions.

Supported: #include "f" / <f> (with include dirs; <core.p4> and <v1model.p4> come from
p4sim/arch), #define (object-like and function-like, `#` and `##`, variadic `...`),
#undef, #if / #ifdef / #ifndef / #elif / #else / #endif with defined() and integer
expressions (a small parser, never eval), #line, #error, #warning, #pragma once.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass, field

from .ast import Token
from .errors import P4SyntaxError, Span, register_source
from .lexer import tokenize

ARCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "arch")
MAX_INCLUDE_DEPTH = 64
# tokens one macro use (or the whole output) may grow to: 40 nested doubling #defines
# would otherwise make 2**40 tokens; roce_switch.p4 makes about 10k in all
MAX_TOKENS = 250_000
PREDEFINED = {"__P4SIM__": "1", "__TARGET_BMV2__": "1", "__p4c__": "1"}

# A directory: the program is a closed world (a bundle pushed over P4Runtime). Includes
# then resolve only inside it and p4sim's arch files; absolute and '..' names are refused.
closed_world: ContextVar[str | None] = ContextVar("p4sim_closed_world", default=None)

# arch files are kept for good; other files in a small LRU (a server compiles every
# pushed bundle in a new directory: keyed by path, an unbounded cache grew with each push)
_LEX_CACHE_SIZE = 16
_arch_cache: dict[tuple[str, int, int], list[Token]] = {}
_lex_cache: OrderedDict[tuple[str, int, int], list[Token]] = OrderedDict()


def lex_file(path: str) -> list[Token]:
    """Tokens of a file, cached by (path, mtime, size): v1model.p4 is lexed once per process."""
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    cache = _arch_cache if os.path.dirname(path) == ARCH_DIR else _lex_cache
    toks = cache.get(key)
    if toks is None:
        with open(path, encoding="utf-8", errors="replace") as f:
            toks = tokenize(f.read(), path)
        cache[key] = toks
        if len(_lex_cache) > _LEX_CACHE_SIZE:
            _lex_cache.popitem(last=False)
    elif cache is _lex_cache:
        _lex_cache.move_to_end(key)
    return toks


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.realpath(path), os.path.realpath(root)]) == os.path.realpath(
        root
    )


@dataclass
class Macro:
    name: str
    params: list[str] | None  # None: object-like
    body: list[Token]
    variadic: bool = False


@dataclass
class _Cond:
    active: bool  # this branch's tokens are kept
    taken: bool  # some branch of this #if already chosen
    parent_active: bool
    seen_else: bool = False
    span: Span | None = None


@dataclass
class PreprocessResult:
    tokens: list[Token]  # ends with one 'eof' token
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _raw(tok: Token) -> str:
    """The token as written (string literals with their quotes)."""
    return tok.value if tok.kind == "string" else tok.text


def _err(msg: str, tok: Token | Span) -> P4SyntaxError:
    return P4SyntaxError(msg, tok if isinstance(tok, Span) else tok.span)


class Preprocessor:
    def __init__(self, include_dirs=(), defines: dict[str, str] | None = None):
        self.include_dirs = [os.path.abspath(d) for d in include_dirs]
        self.macros: dict[str, Macro] = {}
        self.files: list[str] = []
        self.once: set[str] = set()
        self.warnings: list[str] = []
        self.out: list[Token] = []
        for name, value in {**PREDEFINED, **(defines or {})}.items():
            body = [t for t in tokenize(str(value), "<command line>") if t.kind != "eof"]
            self.macros[name] = Macro(name, None, body)

    # ------------------------------------------------------------------ files

    def run_file(self, path: str) -> PreprocessResult:
        path = os.path.abspath(path)
        if not os.path.isfile(path):
            raise P4SyntaxError(f"cannot open source file '{path}'", Span(path, 0, 0))
        toks = lex_file(path)
        self._process(path, toks, 0)
        return self._result(toks[-1].span)

    def run_text(self, text: str, filename: str) -> PreprocessResult:
        register_source(filename, text)
        toks = tokenize(text, filename)
        self._process(filename, toks, 0)
        return self._result(toks[-1].span)

    def _result(self, eof_span: Span) -> PreprocessResult:
        self.out.append(Token("eof", "", eof_span, None, True))
        return PreprocessResult(self.out, self.files, self.warnings)

    def _resolve_include(self, name: str, angle: bool, current: str, span: Span) -> str:
        here = os.path.dirname(os.path.abspath(current))
        if angle:
            # our arch files first: p4sim runs only what it declares itself
            dirs = [ARCH_DIR, *self.include_dirs]
        else:
            dirs = [here, *self.include_dirs, ARCH_DIR]
        root = closed_world.get()
        if root is not None:
            if os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
                raise _err(
                    f"#include '{name}': absolute and '..' paths are refused"
                    " (a pushed program may include only its own files)",
                    span,
                )
            dirs = [d for d in dirs if _inside(d, root) or _inside(d, ARCH_DIR)]
        for d in dirs:
            cand = os.path.join(d, name)
            if os.path.isfile(cand):
                if root is not None and not (_inside(cand, root) or _inside(cand, ARCH_DIR)):
                    continue  # a symlink out of the bundle
                return os.path.abspath(cand)
        if root is not None:
            raise _err(f"cannot find include file '{name}' in the program's files", span)
        where = ", ".join(dirs)
        raise _err(f"cannot find include file '{name}' (searched: {where})", span)

    def _process(self, path: str, toks: list[Token], depth: int) -> None:
        if depth > MAX_INCLUDE_DEPTH:
            raise _err(
                f"#include nested more than {MAX_INCLUDE_DEPTH} deep (recursive include?)",
                toks[0].span,
            )
        if path not in self.files:
            self.files.append(path)
        conds: list[_Cond] = []
        pending: list[Token] = []
        line_fix: tuple[int, int, str] | None = None  # (physical line, reported line, file)

        def flush() -> None:
            if pending:
                expanded = self._expand(pending, frozenset())
                if line_fix is not None:
                    expanded = [self._relocate(t, line_fix) for t in expanded]
                self.out.extend(expanded)
                pending.clear()
                if len(self.out) > MAX_TOKENS:
                    raise _err(f"the program grows to more than {MAX_TOKENS} tokens", tok)

        for tok in toks:
            kind = tok.kind
            if kind == "eof":
                break
            if kind != "directive":
                if not conds or conds[-1].active:
                    pending.append(tok)
                continue
            name, body, raw = tok.value
            active = not conds or conds[-1].active
            # conditionals are tracked even inside inactive regions
            if name in ("if", "ifdef", "ifndef"):
                if not active:
                    conds.append(_Cond(False, True, False, span=tok.span))
                    continue
                flush()
                if name == "if":
                    val = self._eval_if(body, tok)
                else:
                    if not body or body[0].kind != "ident":
                        raise _err(f"#{name} needs a macro name", tok)
                    val = (body[0].text in self.macros) == (name == "ifdef")
                conds.append(_Cond(val, val, True, span=tok.span))
                continue
            if name in ("elif", "else", "endif"):
                if not conds:
                    raise _err(f"#{name} without #if", tok)
                c = conds[-1]
                if name == "endif":
                    conds.pop()
                    continue
                if c.seen_else:
                    raise _err(f"#{name} after #else", tok)
                flush()
                if name == "else":
                    c.seen_else = True
                    c.active = c.parent_active and not c.taken
                else:
                    if c.parent_active and not c.taken:
                        c.active = self._eval_if(body, tok)
                    else:
                        c.active = False
                c.taken = c.taken or c.active
                continue
            if not active:
                continue
            flush()
            if name == "include":
                inc = raw.strip()
                if not (inc.startswith('"') or inc.startswith("<")):
                    exp = self._expand(body, frozenset())  # a macro naming the file
                    inc = exp[0].value if len(exp) == 1 and exp[0].kind == "string" else inc
                if len(inc) < 3 or (inc[0], inc[-1]) not in (('"', '"'), ("<", ">")):
                    raise _err('#include expects "FILE" or <FILE>', tok)
                # like cpp, point a missing file at its name, not at the '#'
                where = body[0].span if body else tok.span
                target = self._resolve_include(inc[1:-1], inc[0] == "<", path, where)
                if target in self.once:
                    continue
                self._process(target, lex_file(target), depth + 1)
            elif name == "define":
                self._define(body, raw, tok)
            elif name == "undef":
                if not body or body[0].kind != "ident":
                    raise _err("#undef needs a macro name", tok)
                self.macros.pop(body[0].text, None)
            elif name == "line" or (name == "" and body and body[0].kind == "int"):
                exp = self._expand(body, frozenset())
                if not exp or exp[0].kind != "int":
                    raise _err("#line expects a line number", tok)
                fname = (
                    exp[1].text
                    if len(exp) > 1 and exp[1].kind == "string"
                    else (line_fix[2] if line_fix else path)
                )
                line_fix = (tok.span.line + 1, exp[0].value[0], fname)
            elif name == "error":
                raise _err(f"#error {raw.strip()}", tok)
            elif name == "warning":
                self.warnings.append(f"{tok.span}: warning: {raw.strip()}")
            elif name == "pragma":
                if body and body[0].text == "once":
                    self.once.add(path)
                # other pragmas are for other compilers
            elif name == "":
                pass  # a lone '#' is a null directive
            else:
                raise _err(f"unknown preprocessor directive '#{name}'", tok)
        flush()
        if conds:
            raise _err("unterminated #if (missing #endif)", conds[-1].span or toks[-1].span)

    @staticmethod
    def _relocate(tok: Token, fix: tuple[int, int, str]) -> Token:
        phys, reported, fname = fix
        s = tok.span
        if s.line < phys:
            return tok
        delta = reported - phys
        return Token(
            tok.kind,
            tok.text,
            Span(
                fname,
                s.line + delta,
                s.column,
                s.end_line + delta if s.end_line else 0,
                s.end_column,
            ),
            tok.value,
            tok.space_before,
        )

    # ------------------------------------------------------------------ macros

    def _define(self, body: list[Token], raw: str, tok: Token) -> None:
        if not body or body[0].kind != "ident":
            raise _err("#define needs a macro name", tok)
        name = body[0].text
        rest = body[1:]
        params: list[str] | None = None
        variadic = False
        # function-like only if '(' touches the name
        if rest and rest[0].text == "(" and rest[0].kind == "op" and not rest[0].space_before:
            params = []
            i = 1
            expect_param = True
            while True:
                if i >= len(rest):
                    raise _err(f"unterminated parameter list of macro '{name}'", tok)
                t = rest[i]
                if t.text == ")":
                    i += 1
                    break
                if t.text == "...":
                    variadic = True
                    params.append("__VA_ARGS__")
                elif t.kind == "ident" and expect_param:
                    params.append(t.text)
                elif t.text == "," and not expect_param:
                    expect_param = True
                    i += 1
                    continue
                else:
                    raise _err(f"bad parameter list of macro '{name}'", t)
                expect_param = False
                i += 1
            rest = rest[i:]
        self.macros[name] = Macro(name, params, rest, variadic)

    def _expand(self, toks: list[Token], disabled: frozenset[str]) -> list[Token]:
        out: list[Token] = []
        macros = self.macros
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            if t.kind != "ident" or t.text not in macros or t.text in disabled:
                if t.kind == "ident" and t.text in ("__LINE__", "__FILE__"):
                    t = self._builtin(t)
                out.append(t)
                i += 1
                continue
            m = macros[t.text]
            if m.params is None:
                body = [self._at(b, t) for b in m.body]
                out.extend(self._expand(body, disabled | {m.name}))
                self._check_size(out, t)
                i += 1
                continue
            if i + 1 >= n or toks[i + 1].text != "(":
                out.append(t)  # a function-like macro's name without a call
                i += 1
                continue
            args, i = self._collect_args(toks, i + 1, m, t)
            out.extend(self._expand(self._substitute(m, args, t, disabled), disabled | {m.name}))
            self._check_size(out, t)
        return out

    @staticmethod
    def _check_size(toks: list[Token], use: Token) -> None:
        if len(toks) > MAX_TOKENS:
            raise _err(f"macro expansion grows to more than {MAX_TOKENS} tokens", use)

    @staticmethod
    def _builtin(t: Token) -> Token:
        if t.text == "__LINE__":
            return Token(
                "int", str(t.span.line), t.span, (t.span.line, None, False), t.space_before
            )
        quoted = '"' + t.span.file.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return Token("string", t.span.file, t.span, quoted, t.space_before)

    @staticmethod
    def _at(tok: Token, use: Token) -> Token:
        return Token(tok.kind, tok.text, use.span, tok.value, tok.space_before)

    def _collect_args(self, toks: list[Token], i: int, m: Macro, use: Token):
        # toks[i] is '('
        depth = 0
        args: list[list[Token]] = [[]]
        i += 1
        while True:
            if i >= len(toks):
                raise _err(f"unterminated call of macro '{m.name}'", use)
            t = toks[i]
            if t.kind == "op" and t.text in "([{":
                depth += 1
            elif t.kind == "op" and t.text in ")]}":
                if depth == 0 and t.text == ")":
                    i += 1
                    break
                depth -= 1
            elif t.text == "," and depth == 0 and not (m.variadic and len(args) >= len(m.params)):
                args.append([])
                i += 1
                continue
            args[-1].append(t)
            i += 1
        params = m.params or []
        if len(args) == 1 and not args[0] and len(params) == 0:
            args = []
        if m.variadic and len(args) == len(params) - 1:
            args.append([])
        if len(args) != len(params):
            raise _err(f"macro '{m.name}' expects {len(params)} argument(s), got {len(args)}", use)
        return args, i

    def _substitute(
        self, m: Macro, args: list[list[Token]], use: Token, disabled: frozenset[str]
    ) -> list[Token]:
        params = {p: k for k, p in enumerate(m.params or [])}
        expanded: dict[int, list[Token]] = {}
        body = m.body
        out: list[Token] = []
        glue = False  # the previous body token was '##'
        j = 0
        while j < len(body):
            b = body[j]
            if b.kind == "op" and b.text == "##":
                if not out or j + 1 >= len(body):
                    raise _err(f"'##' at the edge of macro '{m.name}'", use)
                glue = True
                j += 1
                continue
            if (
                b.kind == "op"
                and b.text == "#"
                and j + 1 < len(body)
                and body[j + 1].text in params
            ):
                arg = args[params[body[j + 1].text]]
                text = " ".join(_raw(a) for a in arg)
                quoted = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
                produced = [Token("string", text, use.span, quoted, b.space_before)]
                j += 2
            elif b.kind == "ident" and b.text in params:
                k = params[b.text]
                next_is_paste = j + 1 < len(body) and body[j + 1].text == "##"
                if glue or next_is_paste:
                    produced = [self._at(a, use) for a in args[k]]  # operands of ## unexpanded
                else:
                    if k not in expanded:
                        expanded[k] = self._expand(args[k], disabled)
                    produced = [self._at(a, use) for a in expanded[k]]
                j += 1
            else:
                produced = [self._at(b, use)]
                j += 1
            if glue and produced:
                left = out.pop()
                text = _raw(left) + _raw(produced[0])
                joined = [t for t in tokenize(text, use.span.file) if t.kind != "eof"]
                if len(joined) != 1 or joined[0].kind == "directive":
                    raise _err(
                        f"pasting '{_raw(left)}' and '{_raw(produced[0])}' in macro "
                        f"'{m.name}' does not give a valid token",
                        use,
                    )
                out.append(self._at(joined[0], left))
                out.extend(produced[1:])
            else:
                out.extend(produced)
            self._check_size(out, use)
            glue = False
        return out

    # ------------------------------------------------------------------ #if

    def _eval_if(self, body: list[Token], tok: Token) -> bool:
        # replace defined X / defined(X) before expansion
        pre: list[Token] = []
        i = 0
        while i < len(body):
            t = body[i]
            if t.kind == "ident" and t.text == "defined":
                if i + 1 < len(body) and body[i + 1].text == "(":
                    if not (
                        i + 3 < len(body)
                        and body[i + 2].kind == "ident"
                        and body[i + 3].text == ")"
                    ):
                        raise _err("defined() expects a macro name", t)
                    name = body[i + 2].text
                    i += 4
                elif i + 1 < len(body) and body[i + 1].kind == "ident":
                    name = body[i + 1].text
                    i += 2
                else:
                    raise _err("defined expects a macro name", t)
                val = 1 if name in self.macros else 0
                pre.append(Token("int", str(val), t.span, (val, None, False), True))
                continue
            pre.append(t)
            i += 1
        exp = self._expand(pre, frozenset())
        if not exp:
            raise _err("#if with no expression", tok)
        return _IfExpr(exp, tok).parse() != 0


class _IfExpr:
    """Integer expression of #if / #elif: precedence climbing over tokens."""

    _BIN = {
        "||": 1,
        "&&": 2,
        "|": 3,
        "^": 4,
        "&": 5,
        "==": 6,
        "!=": 6,
        "<": 7,
        ">": 7,
        "<=": 7,
        ">=": 7,
        "<<": 8,
        ">>": 8,
        "+": 9,
        "-": 9,
        "*": 10,
        "/": 10,
        "%": 10,
    }

    def __init__(self, toks: list[Token], directive: Token):
        # join adjacent '>' '>' (the lexer never makes '>>')
        joined: list[Token] = []
        for t in toks:
            if (
                t.text == ">"
                and joined
                and joined[-1].text == ">"
                and joined[-1].kind == "op"
                and not t.space_before
            ):
                joined[-1] = Token("op", ">>", joined[-1].span, ">>", joined[-1].space_before)
            else:
                joined.append(t)
        self.toks = joined
        self.i = 0
        self.directive = directive
        self.skip = 0  # > 0 inside an operand that short-circuit evaluation skips

    def _peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def parse(self) -> int:
        v = self._ternary()
        t = self._peek()
        if t is not None:
            raise _err(f"unexpected '{t.text}' in #if expression", t)
        return v

    def _ternary(self) -> int:
        c = self._binary(1)
        t = self._peek()
        if t is not None and t.text == "?":
            self.i += 1
            self.skip += not c
            a = self._ternary()
            self.skip -= not c
            t = self._peek()
            if t is None or t.text != ":":
                raise _err("expected ':' in #if expression", t or self.directive)
            self.i += 1
            self.skip += bool(c)
            b = self._ternary()
            self.skip -= bool(c)
            return a if c else b
        return c

    def _binary(self, min_prec: int) -> int:
        left = self._unary()
        while True:
            t = self._peek()
            if t is None or t.kind != "op" or t.text not in self._BIN:
                return left
            prec = self._BIN[t.text]
            if prec < min_prec:
                return left
            self.i += 1
            short = (t.text == "||" and left) or (t.text == "&&" and not left)
            self.skip += bool(short)
            right = self._binary(prec + 1)
            self.skip -= bool(short)
            left = self._apply(t, left, right)

    def _apply(self, t: Token, a: int, b: int) -> int:
        op = t.text
        if op in ("/", "%") and b == 0:
            if self.skip:
                return 0  # not evaluated (like `defined(X) && N / X`)
            raise _err("division by zero in #if expression", t)
        return {
            "||": lambda: int(bool(a) or bool(b)),
            "&&": lambda: int(bool(a) and bool(b)),
            "|": lambda: a | b,
            "^": lambda: a ^ b,
            "&": lambda: a & b,
            "==": lambda: int(a == b),
            "!=": lambda: int(a != b),
            "<": lambda: int(a < b),
            ">": lambda: int(a > b),
            "<=": lambda: int(a <= b),
            ">=": lambda: int(a >= b),
            "<<": lambda: a << b,
            ">>": lambda: a >> b,
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "/": lambda: int(a / b) if (a < 0) != (b < 0) else a // b,
            "%": lambda: a - b * (int(a / b) if (a < 0) != (b < 0) else a // b),
        }[op]()

    def _unary(self) -> int:
        t = self._peek()
        if t is None:
            raise _err("unexpected end of #if expression", self.directive)
        self.i += 1
        if t.kind == "op" and t.text in ("!", "~", "-", "+"):
            v = self._unary()
            return {"!": int(not v), "~": ~v, "-": -v, "+": v}[t.text]
        if t.text == "(":
            v = self._ternary()
            c = self._peek()
            if c is None or c.text != ")":
                raise _err("expected ')' in #if expression", c or t)
            self.i += 1
            return v
        if t.kind == "int":
            return t.value[0]
        if t.kind == "ident":
            return 1 if t.text == "true" else 0  # undefined names are 0, as in C
        raise _err(f"unexpected '{t.text}' in #if expression", t)


def preprocess_file(
    path: str, include_dirs=(), defines: dict[str, str] | None = None
) -> PreprocessResult:
    return Preprocessor(include_dirs, defines).run_file(path)


def preprocess_text(
    text: str, filename: str = "<string>", include_dirs=(), defines: dict[str, str] | None = None
) -> PreprocessResult:
    return Preprocessor(include_dirs, defines).run_text(text, filename)


def render(tokens: list[Token]) -> str:
    """Preprocessed tokens back to text, one output line per original line (for --emit)."""
    lines: list[str] = []
    cur: list[str] = []
    last: tuple[str, int] | None = None
    for t in tokens:
        if t.kind == "eof":
            break
        where = (t.span.file, t.span.line)
        if last is not None and where != last:
            lines.append(" ".join(cur))
            cur = []
        last = where
        cur.append(t.value if t.kind == "string" else t.text)
    if cur:
        lines.append(" ".join(cur))
    return "\n".join(lines) + "\n"
