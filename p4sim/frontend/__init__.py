"""p4sim front end: preprocess -> lex -> parse into `p4sim.frontend.ast`.

    from p4sim.frontend import parse_program
    program = parse_program("p4src/roce_switch.p4", include_dirs=["p4src"])

Errors are `P4SyntaxError` (a `P4SourceError`) with file:line:column.
"""

from __future__ import annotations

from .errors import NO_SPAN, P4SourceError, P4SyntaxError, P4Unsupported, Span

__all__ = [
    "NO_SPAN",
    "P4SourceError",
    "P4SyntaxError",
    "P4Unsupported",
    "Span",
    "parse_program",
    "parse_text",
]


def parse_program(path: str, include_dirs=(), defines: dict[str, str] | None = None):
    """Preprocess and parse the P4 program at `path` into an `ast.Program`."""
    from .parser import parse_program as _parse_program

    return _parse_program(path, include_dirs=include_dirs, defines=defines)


def parse_text(
    text: str, filename: str = "<string>", include_dirs=(), defines: dict[str, str] | None = None
):
    """Preprocess and parse P4 source text (tests, one-off snippets)."""
    from .parser import parse_text as _parse_text

    return _parse_text(text, filename=filename, include_dirs=include_dirs, defines=defines)
