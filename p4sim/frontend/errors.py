"""Source locations and located errors, shared by every p4sim stage that reads P4 source.

A `Span` names a position in an *original* file (after the preprocessor's origin map has
been applied), so errors point at what the user wrote, not at the preprocessed text.
`P4SourceError.__str__` renders the compiler-style message:

    roce_switch.p4:12:5: error: unknown type 'foo'
        foo x;
        ^
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Span:
    """A source range; lines and columns are 1-based, end_* are inclusive (0 = unknown)."""

    file: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def to(self, other: Span) -> Span:
        """The span from the start of self to the end of other (same file assumed)."""
        end_line = other.end_line or other.line
        end_col = other.end_column or other.column
        return Span(self.file, self.line, self.column, end_line, end_col)


NO_SPAN = Span("<unknown>", 0, 0)


_registered: dict[str, tuple[str, ...]] = {}


def register_source(filename: str, text: str) -> None:
    """Make text that is not a file on disk (parse_text) available for error display."""
    _registered[filename] = tuple(text.splitlines())


def _file_lines(path: str) -> tuple[str, ...] | None:
    lines = _registered.get(path)
    if lines is not None:
        return lines
    return _disk_lines(path)


@lru_cache(maxsize=64)
def _disk_lines(path: str) -> tuple[str, ...] | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return tuple(f.read().splitlines())
    except OSError:
        return None


def source_line(span: Span) -> str | None:
    """The text of the span's first line, read from its file (None if unavailable)."""
    if span.line <= 0:
        return None
    lines = _file_lines(span.file)
    if lines is None or span.line > len(lines):
        return None
    return lines[span.line - 1]


class P4SourceError(Exception):
    """An error in P4 source: carries a span and a one-line reason.

    Subclasses: P4SyntaxError (preprocessor, lexer, parser), and the checker's
    name/type errors; `P4Unsupported` for constructs p4sim knows but does not run.
    """

    kind = "error"

    def __init__(self, reason: str, span: Span = NO_SPAN, line_text: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.span = span
        self._line_text = line_text

    @property
    def file(self) -> str:
        return self.span.file

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def headline(self) -> str:
        """`file:line:col: error: reason` (one line, for logs and CLIs)."""
        return f"{self.span}: {self.kind}: {self.reason}"

    def __str__(self) -> str:
        text = self._line_text if self._line_text is not None else source_line(self.span)
        if text is None:
            return self.headline()
        text = text.expandtabs(1)  # keep the caret aligned: columns count characters
        caret_col = max(self.span.column, 1)
        width = 1
        if self.span.end_line == self.span.line and self.span.end_column >= caret_col:
            width = self.span.end_column - caret_col + 1
        return f"{self.headline()}\n    {text}\n    {' ' * (caret_col - 1)}^{'~' * (width - 1)}"


class P4SyntaxError(P4SourceError):
    """Preprocessor, lexical or grammar error."""


class P4Unsupported(P4SourceError):
    """A valid P4 construct that p4sim does not implement (refused loudly, never ignored)."""

    kind = "error"

    def __init__(self, reason: str, span: Span = NO_SPAN, line_text: str | None = None):
        if not reason.startswith("unsupported"):
            reason = f"unsupported by p4sim: {reason}"
        super().__init__(reason, span, line_text)


class LoweringError(P4SourceError):
    """Lowering met something `p4sim.check` should have refused: a p4sim bug, still located
    (the user sees one line, not a traceback). Lowering raises nothing else: every error
    in a program is found by `p4sim.check.check()` before lowering starts.

    Defined here, below every stage, so the extern modules' lowering hooks raise it without
    importing lowering (which imports check, which imports the extern registry)."""


class _Located(Protocol):
    span: Span


def bug(msg: str, node: _Located | None) -> LoweringError:
    """Lowering's internal error at `node` (a syntax-tree node, or None: no location)."""
    return LoweringError(
        f"internal error (p4sim's checker let this through): {msg}",
        node.span if node is not None else NO_SPAN,
    )
