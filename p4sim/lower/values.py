"""What lowering's parts share: a lowered expression (`V`), how P4 names become Python
names (`mangle`, `fld`), the generated entry points (`Pipeline`) and the function being
generated (`_Fn`). Below the driver (codegen.py) and the statement, expression and
declaration lowering it is made of."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from p4sim.check.types import (
    Type,
)
from p4sim.frontend.errors import LoweringError as LoweringError  # re-exported: tests, callers


@dataclass
class V:
    """A lowered expression: Python code, its P4 type, and its value when constant."""

    code: str
    type: Type
    const: Any = None  # int/bool when known at compile time

    @property
    def is_const(self) -> bool:
        return self.const is not None


def _pyid(name: str) -> str:
    """ASCII stand-in for a name in a generated local (uid() appends a unique counter)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


_ASCII_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def mangle(prefix: str, name: str) -> str:
    """The Python identifier standing for P4 name `name` (injective for a given prefix).

    Every P4 name reaches generated code only through here, so no P4 identifier can be a
    Python keyword or builtin (`class`, `None`, `int`) or one of p4sim's own attributes
    (`_v`, `copy`, `_ex`): those never start with `<prefix>_` or `<prefix>U_`. Non-ASCII names are
    spelt out in ASCII (`_` doubled, other characters `_x<hex>_`), because Python
    NFKC-normalises identifiers and would make `aｘ` the same name as `ax`.
    """
    if _ASCII_ID.match(name):
        return f"{prefix}_{name}"
    enc = "".join(
        ch if ch.isascii() and ch.isalnum() else "__" if ch == "_" else f"_x{ord(ch):x}_"
        for ch in name
    )
    return f"{prefix}U_{enc}"


def fld(name: str) -> str:
    """Attribute of a header/struct field."""
    return mangle("f", name)


def vbw(code: str) -> str:
    """Attribute holding the current width of the varbit field accessed by `code` (`x.f_v`)."""
    base, _, attr = code.rpartition(".")
    return f"{base}.w{attr}"


@dataclass
class Pipeline:
    """Names of the generated entry points."""

    parser: str = ""
    verify: str = ""
    ingress: str = ""
    egress: str = ""
    compute: str = ""
    deparser: str = ""
    new_hdr: str = ""
    new_meta: str = ""
    new_sm: str = ""
    field_lists: dict[int, str] = field(default_factory=dict)  # index -> copy function


HDR_OBJ = (
    "\x00"  # stands for the header object in extract/emit templates (never in generated names)
)

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_PURE_KEY = re.compile(
    r"[\w.\s()&|^~<>+\-*]*$"
)  # key code that cannot raise: no subscript, division, comma


class _Fn:
    """State while generating one Python function."""

    def __init__(self, lines: list[str], ind: int, counter: list[int]):
        self.lines = lines
        self.counter = counter
        self.ind = ind
        self.n = 0
        self.once_stack: list[V | None] = []  # return-value var (and type) of the inlined body
        self.in_parser = False
        self.in_action = 0  # depth of action bodies being inlined
        self.packet: str | None = None  # Python name of the packet_in/out param
        self.packet_kind = ""
        self.sm: str | None = None  # Python expr of standard_metadata, when in scope
        self.control_level_return = True
        self.parser_states: dict[str, int] = {}
        self.parser_inline: tuple | None = None  # (states by name, parser scope) when inlined
        self.parser_ret = "off"  # what a parser function returns (a sub-parser adds its outs)
        # enclosing for loops of the current inlined body: the flag var a `return` inside the
        # loop sets before its `break` (None until a return needs one)
        self.loops: list[list[str | None]] = []

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def tmp(self, base: str = "t") -> str:
        # unique across the program's functions: sub-control bodies get spliced
        self.counter[0] += 1
        return f"_{base}{self.counter[0]}"
