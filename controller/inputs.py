"""Reading a file a user names, bounded before anything parses it.

Every YAML file rocelab takes (switch config, scenario, lab file, fabric scenario) comes
through `read_text` and `load_yaml` here, so the limits live in one place:
- the path must be a readable regular file: a directory, a FIFO (opened non-blocking, so it
  cannot hang), a device or an unreadable file is one `InputError` line;
- at most MAX_BYTES are read, and the text must be UTF-8;
- YAML aliases (`*name`) are refused: an alias bomb ("billion laughs") costs nothing to
  write and expands to gigabytes once a consumer walks it; none of our files needs one;
- nesting is limited to MAX_DEPTH (PyYAML's composer recurses: 100,000 `[` would end in a
  RecursionError);
- an integer of more than MAX_INT_DIGITS digits is a YAML error at its line (Python refuses
  to convert 5,000-digit decimals; no setting of ours needs more than 20 digits).
Non-finite floats (.inf, .nan) load as floats: the schemas refuse them at their key.

`InputError` is "the file cannot be read as a rocelab input" (exit 2 everywhere);
`yaml.YAMLError` (syntax, the limits above) carries the line and column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from p4sim.cliargs import InputError, read_text_input

__all__ = ["InputError", "MAX_BYTES", "compose_yaml", "parse_yaml", "read_text", "yaml_error_where"]

MAX_BYTES = 1 << 20  # 1 MiB: the largest shipped file is a few KB
MAX_DEPTH = 32
MAX_INT_DIGITS = 40


def read_text(path: str | Path, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of a readable regular file of at most `max_bytes` bytes
    (p4sim.cliargs.read_text_input: the command lines' input files are read the same way)."""
    return read_text_input(path, max_bytes)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader without aliases, with a nesting limit and an integer-length limit."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                f"YAML aliases (*{event.anchor}) are not accepted in rocelab files",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: Any) -> int:
        digits = sum(ch.isalnum() for ch in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"a number of {digits} digits (at most {MAX_INT_DIGITS})",
                node.start_mark,
            )
        return super().construct_yaml_int(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def parse_yaml(text: str) -> Any:
    """YAML text to Python values under the limits above (raises yaml.YAMLError)."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def compose_yaml(text: str) -> Any:
    """The node tree (marks kept: key paths to lines) under the same limits."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def yaml_error_where(exc: yaml.YAMLError, path: str | Path) -> tuple[str, str]:
    """(`file:line:column`, "YAML syntax: problem" or "YAML: problem" for the limits)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    syntax = isinstance(
        exc, yaml.scanner.ScannerError | yaml.parser.ParserError | yaml.reader.ReaderError
    )
    return where, f"{'YAML syntax' if syntax else 'YAML'}: {problem}"
