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

import errno
import os
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1 << 20  # 1 MiB: the largest shipped file is a few KB
MAX_DEPTH = 32
MAX_INT_DIGITS = 40


class InputError(ValueError):
    """A path that cannot be read as an input file; str() is one line naming it."""


def read_text(path: str | Path, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of a readable regular file of at most `max_bytes` bytes."""
    p = str(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (then refused below)
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        why = "no such file" if exc.errno == errno.ENOENT else (exc.strerror or str(exc)).lower()
        raise InputError(f"{p}: cannot read ({why})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{p}: is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{p}: not a regular file")
        if st.st_size > max_bytes:
            raise InputError(f"{p}: {st.st_size} bytes, larger than the {max_bytes} accepted")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while total <= max_bytes:  # /proc files say size 0: the cap holds on what is read
            chunk = os.read(fd, min(1 << 16, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise InputError(f"{p}: larger than the {max_bytes} bytes accepted")
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({(exc.strerror or str(exc)).lower()})") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text (byte {exc.start})") from None


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader without aliases, with a nesting limit and an integer-length limit."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, f"YAML aliases (*{event.anchor}) are not accepted in rocelab files",
                event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: Any) -> int:
        digits = sum(ch.isalnum() for ch in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {digits} digits (at most {MAX_INT_DIGITS})",
                node.start_mark)
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
    syntax = isinstance(exc, yaml.scanner.ScannerError | yaml.parser.ParserError | yaml.reader.ReaderError)
    return where, f"{'YAML syntax' if syntax else 'YAML'}: {problem}"
