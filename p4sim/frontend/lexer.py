"""P4_16 lexer: source text -> tokens with original file:line:column.

Preprocessor directives (a `#` first on a line) come out as one 'directive' token per
logical line (backslash-newline continues it) whose value is (name, body tokens, raw
text of the body); the preprocessor interprets them. Keywords are 'ident' tokens: the
parser decides, because several P4 keywords (apply, key, actions, state, entries, type,
priority) are also valid names in some places.

`>` is always a single token (so `register<bit<32>>` closes two type argument lists);
the parser joins two adjacent `>` into a right shift.
"""

from __future__ import annotations

import re

from .ast import Token
from .errors import P4SyntaxError, Span

_OPS = (
    r"&&&|\|\+\||\|-\||\.\.\.|\.\.|\+\+|<<=|<<|<=|>=|==|!=|&&|\|\||"
    r"\+=|-=|\*=|/=|%=|&=|\|=|\^=|##|[-+*/%&|^~!?:;,.(){}\[\]<>=@#]"
)
_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\f\v]+)"
    r"|(?P<nl>\n)"
    r"|(?P<cont>\\[ \t]*\r?\n)"
    r"|(?P<lc>//[^\n]*)"
    r"|(?P<bc>/\*(?:.|\n)*?\*/)"
    r"|(?P<bad>/\*)"
    r"|(?P<num>\d\w*)"
    r"|(?P<id>[A-Za-z_]\w*)"
    r'|(?P<str>"(?:[^"\\\n]|\\.)*")'
    rf"|(?P<op>{_OPS})"
    r"|(?P<bad2>\"|.)"
)

_INT_RE = re.compile(
    r"(?:(?P<w>\d+)(?P<s>[ws]))?"
    r"(?:0(?P<base>[xXbBoOdD])(?P<digits>[0-9a-fA-F_]+)|(?P<dec>\d[\d_]*))"
)
_BASES = {"x": 16, "b": 2, "o": 8, "d": 10}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def parse_int(text: str, span: Span) -> tuple[int, int | None, bool]:
    """Decode a P4 integer literal: '8w0x1F' -> (31, 8, False); '16s3' -> (3, 16, True)."""
    m = _INT_RE.fullmatch(text)
    if m is None:
        raise P4SyntaxError(f"malformed integer literal '{text}'", span)
    width = int(m["w"]) if m["w"] else None
    signed = m["s"] == "s"
    try:
        if m["dec"] is not None:
            value = int(m["dec"].replace("_", ""), 10)
        else:
            digits = m["digits"].replace("_", "")
            if not digits:
                raise ValueError
            value = int(digits, _BASES[m["base"].lower()])
    except ValueError:
        raise P4SyntaxError(f"malformed integer literal '{text}'", span) from None
    if width is not None and width == 0 and not signed:
        pass  # bit<0> literals are legal (value must be 0); the checker judges the value
    return value, width, signed


def _unescape(body: str, span: Span) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokenize(text: str, filename: str) -> list[Token]:
    """Split `text` (the contents of `filename`) into tokens, ending with an 'eof' token."""
    tokens: list[Token] = []
    line = 1
    line_start = 0  # offset of the current line's first character
    at_bol = True  # only whitespace/comments since the last newline
    space = True
    directive: list | None = None  # [name_token, body tokens, start offset, hash span]
    append = tokens.append
    match = _TOKEN_RE.match
    pos = 0
    n = len(text)

    def finish_directive(end: int) -> None:
        nonlocal directive
        assert directive is not None
        name_tok, body, start, hspan = directive
        raw = text[start:end]
        name = name_tok.text if name_tok is not None else ""
        append(Token("directive", "#" + name, hspan, (name, body, raw), True))
        directive = None

    while pos < n:
        m = match(text, pos)
        assert m is not None  # the 'bad' alternative matches any character
        kind = m.lastgroup
        end = m.end()
        if kind == "ws":
            space = True
        elif kind == "nl":
            if directive is not None:
                finish_directive(pos)
            line += 1
            line_start = end
            at_bol = True
            space = True
        elif kind == "cont":
            line += 1
            line_start = end
            space = True
        elif kind == "lc":
            space = True
        elif kind == "bc":
            nls = text.count("\n", pos, end)
            if nls:
                line += nls
                line_start = text.rindex("\n", pos, end) + 1
            space = True
        else:
            col = pos - line_start + 1
            tok_text = m.group()
            span = Span(filename, line, col, line, col + len(tok_text) - 1)
            if kind == "id":
                tok = Token("ident", tok_text, span, tok_text, space)
            elif kind == "num":
                tok = Token("int", tok_text, span, parse_int(tok_text, span), space)
            elif kind == "str":
                tok = Token("string", _unescape(tok_text[1:-1], span), span, tok_text, space)
            elif kind == "op":
                tok = Token("op", tok_text, span, tok_text, space)
            else:  # bad, bad2
                if tok_text == "/*":
                    raise P4SyntaxError("unterminated comment", span)
                if tok_text == '"':
                    raise P4SyntaxError("unterminated string literal", span)
                raise P4SyntaxError(f"unexpected character {tok_text!r}", span)
            space = False
            if directive is not None:
                if directive[0] is None and not directive[1] and kind == "id":
                    directive[0] = tok
                    directive[2] = end
                else:
                    directive[1].append(tok)
            elif at_bol and tok_text == "#" and kind == "op":
                directive = [None, [], end, span]
            else:
                append(tok)
            at_bol = False
        pos = end
    if directive is not None:
        finish_directive(n)
    col = pos - line_start + 1
    tokens.append(Token("eof", "", Span(filename, line, col), None, True))
    return tokens
