"""Bounded command-line parsing: one place for every option type of p4sim, p4sim-switch and
rocelab (controller imports this module; p4sim never imports controller).

- `Parser`: an ArgumentParser whose errors are one line on stderr (`PROG: message`) and exit 2,
  without argparse's usage block (the user asked for one thing; `-h` shows the rest).
- Option types that refuse bad input at parse time, before anything is compiled or started:
  integers and finite floats in a range, durations, HOST:PORT addresses, bounded text, input
  files, input directories, output files and directories. Each is a `BoundedType` whose
  `kind` names what it takes (tests/controller/test_hostile_cli_options.py picks its hostile
  inputs by kind, so a new option is covered when it is added).
- `read_input(path, max_bytes)`: the bytes of a readable regular file of bounded size; a
  directory, FIFO, device, an unreadable or oversize file is one `InputError` line. The path is
  checked with os.stat before it is opened, and opened O_NONBLOCK, so a FIFO cannot hang.

Numbers are checked for length before int()/float(): Python refuses to convert decimals of
more than 4300 digits (ValueError "Exceeds the limit"), and float("1e999") is inf.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import stat
import sys
from collections.abc import Callable
from typing import Any, NoReturn

EXIT_USAGE = 2
MAX_NUMBER_CHARS = 40  # no option of ours needs a longer number (2^128 has 39 digits)
MAX_TEXT = 4096  # a path or a name; PATH_MAX is 4096 on Linux
MAX_MESSAGE = 300  # an error line echoes the value: cut a 5000-character one
DEFAULT_MAX_BYTES = 1 << 20


class InputError(ValueError):
    """A path that cannot be read as an input file; str() is one line naming it."""


def one_line(message: str, limit: int = MAX_MESSAGE) -> str:
    """`message` with its line breaks folded and its length cut to `limit`."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: `PROG: message` on stderr, exit 2 (subparsers made with
    add_subparsers() are of this class too: argparse defaults parser_class to type(self))."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {one_line(message)}\n")
        raise SystemExit(EXIT_USAGE)


class BoundedType:
    """An argparse `type`: `parse(text)` or ArgumentTypeError with a one-line reason. The
    reason does not name the option: argparse puts `argument NAME: ` before it.
    `kind` says what it takes (int, float, duration, address, text, input_file, input_dir,
    output_file, output_dir, pattern)."""

    def __init__(
        self, kind: str, parse: Callable[[str], Any], name: str, *, text_file: bool = True
    ) -> None:
        self.kind = kind
        self._parse = parse
        self.__name__ = (
            name  # the option it is made for (argparse's "invalid NAME value": never reached)
        )
        self.text_file = text_file

    def __call__(self, text: str) -> Any:
        return self._parse(text)

    def __repr__(self) -> str:
        return f"<{self.kind} {self.__name__}>"


def _fail(message: str) -> NoReturn:
    raise argparse.ArgumentTypeError(one_line(message))


def _show(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


def _printable(text: str) -> str:
    if not text:
        _fail("empty")
    if len(text) > MAX_TEXT:
        _fail(f"{len(text)} characters (at most {MAX_TEXT})")
    if not text.isprintable():
        _fail(f"control or non-printable characters in {_show(text)}")
    return text


def _number_text(text: str) -> str:
    t = text.strip()
    if not t:
        _fail("empty, expected a number")
    if len(t) > MAX_NUMBER_CHARS:
        _fail(f"a number of {len(t)} characters (at most {MAX_NUMBER_CHARS})")
    return t


def int_range(lo: int, hi: int, what: str = "value") -> BoundedType:
    """An integer in lo..hi (decimal, or 0x/0o/0b)."""

    def parse(text: str) -> int:
        t = _number_text(text)
        try:
            value = int(t, 0)
        except ValueError:
            _fail(f"must be an integer, not {_show(text)}")
        if not lo <= value <= hi:
            _fail(f"must be in {lo}..{hi}, not {value}")
        return value

    return BoundedType("int", parse, what)


def float_range(lo: float, hi: float, what: str = "value", *, lo_open: bool = False) -> BoundedType:
    """A finite float in [lo, hi] (or (lo, hi] with lo_open): nan and inf are refused."""

    def parse(text: str) -> float:
        t = _number_text(text)
        try:
            value = float(t)
        except ValueError:
            _fail(f"must be a number, not {_show(text)}")
        if not math.isfinite(value):
            _fail(f"must be a finite number, not {_show(text)}")
        if value < lo or value > hi or (lo_open and value == lo):
            _fail(f"must be in {'(' if lo_open else '['}{lo:g}, {hi:g}], not {value:g}")
        return value

    return BoundedType("float", parse, what)


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "": 1.0, "m": 60.0}
_DURATION = re.compile(r"^\s*([0-9.eE+-]+)\s*(ns|us|ms|s|m|)\s*$")


def duration(lo: float, hi: float, what: str = "duration") -> BoundedType:
    """Seconds: a finite number with an optional unit (ns, us, ms, s, m), in (lo, hi] (lo > 0
    is meant: a zero timeout is no timeout)."""

    def parse(text: str) -> float:
        t = _number_text(text)
        m = _DURATION.match(t)
        try:
            value = float(m.group(1)) * _DURATION_UNITS[m.group(2)] if m else float("nan")
        except ValueError:
            value = float("nan")
        if not math.isfinite(value):
            _fail(f"must be a finite duration (e.g. 5, 1.5s, 200ms), not {_show(text)}")
        if not lo < value <= hi:
            _fail(f"must be in ({lo:g}, {hi:g}] seconds, not {_show(text)}")
        return value

    return BoundedType("duration", parse, what)


def split_address(text: str) -> tuple[str, int]:
    """(host, port) of HOST:PORT or [IPV6]:PORT (ValueError when it is neither)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or len(port) > 5:
        raise ValueError(text)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or len(host) > 253 or not host.isprintable() or any(c.isspace() for c in host):
        raise ValueError(text)
    return host, int(port)


def address(
    port_lo: int = 1, port_hi: int = 65535, what: str = "address", *, schemes: tuple[str, ...] = ()
) -> BoundedType:
    """HOST:PORT with the port in port_lo..port_hi (an optional `scheme://` from `schemes`);
    the text is returned as given."""

    def parse(text: str) -> str:
        _printable(text)
        rest = text
        for scheme in schemes:
            rest = rest.removeprefix(f"{scheme}://")
        try:
            _host, port = split_address(rest)
        except ValueError:
            _fail(f"expected HOST:PORT with a port in {port_lo}..{port_hi}, not {_show(text)}")
        if not port_lo <= port <= port_hi:
            _fail(f"port {port} is not in {port_lo}..{port_hi}")
        return text

    return BoundedType("address", parse, what)


def text(what: str = "value", max_len: int = 256) -> BoundedType:
    """Non-empty printable text of at most `max_len` characters (a name, a key)."""

    def parse(value: str) -> str:
        _printable(value)
        if len(value) > max_len:
            _fail(f"{len(value)} characters (at most {max_len})")
        return value

    return BoundedType("text", parse, what)


def pattern(parse: Callable[[str], Any], what: str, max_len: int = 256) -> BoundedType:
    """Bounded printable text handed to `parse` (which raises ArgumentTypeError or ValueError
    with its own reason): PORT@IFNAME, PORT=RATE, KEY=V1,V2, a hex frame."""

    def run(value: str) -> Any:
        _printable(value)
        if len(value) > max_len:
            _fail(f"{len(value)} characters (at most {max_len})")
        try:
            return parse(value)
        except ValueError as exc:
            _fail(str(exc))

    return BoundedType("pattern", run, what)


def _describe_oserror(exc: OSError) -> str:
    return "no such file" if exc.errno == errno.ENOENT else (exc.strerror or str(exc)).lower()


def _stat(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({_describe_oserror(exc)})") from None
    except ValueError:  # an embedded NUL
        raise InputError(f"{_show(path)}: not a path") from None


def _check_regular(path: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file")


def read_input(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a readable regular file of at most `max_bytes` bytes, or InputError."""
    p = os.fspath(path)
    if not p:
        raise InputError("an empty path")
    _check_regular(p, _stat(p))  # before open: opening a device can have effects
    try:
        # O_NONBLOCK: swapped for a FIFO since the stat, open still returns at once
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({_describe_oserror(exc)})") from None
    try:
        st = os.fstat(fd)
        _check_regular(p, st)
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
        raise InputError(f"{p}: cannot read ({_describe_oserror(exc)})") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text_input(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """read_input decoded as UTF-8 text without NUL bytes, or InputError."""
    data = read_input(path, max_bytes)
    try:
        text_ = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{os.fspath(path)}: not UTF-8 text (byte {exc.start})") from None
    if "\0" in text_:
        raise InputError(f"{os.fspath(path)}: not text (a NUL byte at {text_.index(chr(0))})")
    return text_


def input_file(
    max_bytes: int = DEFAULT_MAX_BYTES, *, text_file: bool = True, what: str = "file"
) -> BoundedType:
    """A path to a readable regular file of at most `max_bytes` (UTF-8 text when `text_file`):
    read once here, so a bad file is refused before anything runs; the path is returned."""

    def parse(value: str) -> str:
        _printable(value)
        try:
            (read_text_input if text_file else read_input)(value, max_bytes)
        except InputError as exc:
            _fail(str(exc))
        return value

    return BoundedType("input_file", parse, what, text_file=text_file)


def input_dir(what: str = "directory") -> BoundedType:
    """A path to an existing directory."""

    def parse(value: str) -> str:
        _printable(value)
        try:
            st = os.stat(value)
        except OSError as exc:
            _fail(f"{value}: {_describe_oserror(exc)}")
        if not stat.S_ISDIR(st.st_mode):
            _fail(f"{value}: not a directory")
        return value

    return BoundedType("input_dir", parse, what)


def output_file(what: str = "output file") -> BoundedType:
    """A path to write: a regular file or none yet, in an existing directory."""

    def parse(value: str) -> str:
        _printable(value)
        try:
            st = os.stat(value)
        except FileNotFoundError:
            parent = os.path.dirname(value) or "."
            if not os.path.isdir(parent):
                _fail(f"{value}: no directory {parent}")
            return value
        except OSError as exc:
            _fail(f"{value}: {_describe_oserror(exc)}")
        if stat.S_ISDIR(st.st_mode):
            _fail(f"{value}: is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            _fail(f"{value}: not a regular file")
        return value

    return BoundedType("output_file", parse, what)


def output_dir(what: str = "output directory") -> BoundedType:
    """A directory to write into: an existing one or none yet (made when written)."""

    def parse(value: str) -> str:
        _printable(value)
        try:
            st = os.stat(value)
        except FileNotFoundError:
            return value
        except OSError as exc:
            _fail(f"{value}: {_describe_oserror(exc)}")
        if not stat.S_ISDIR(st.st_mode):
            _fail(f"{value}: exists and is not a directory")
        return value

    return BoundedType("output_dir", parse, what)


def parse_argv(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace | int:
    """parser.parse_args(argv), or the exit code it asked for (2 for an error, 0 for -h)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE


def name_or_file(max_bytes: int = DEFAULT_MAX_BYTES, what: str = "name or file") -> BoundedType:
    """A shipped name (no `/`, no `.yaml`/`.yml` suffix, not an existing path) or a path to a
    readable text file, checked as input_file checks it."""
    as_file = input_file(max_bytes, what=what)

    def parse(value: str) -> str:
        _printable(value)
        if "/" in value or value.endswith((".yaml", ".yml")) or os.path.lexists(value):
            return as_file(value)
        if len(value) > 128:
            _fail(f"a name of {len(value)} characters (at most 128)")
        return value

    return BoundedType("name_or_file", parse, what)
