"""Every P4 name reaches generated Python through codegen.mangle: it must give a valid,
non-keyword identifier that Python's NFKC normalisation leaves alone, distinct for
distinct P4 names (look-alikes included), and never one of p4sim's own attribute names."""

from __future__ import annotations

import keyword
import unicodedata

from p4sim.lower.codegen import fld, mangle

HOSTILE = [
    "_v",
    "class",
    "lambda",
    "None",
    "True",
    "copy",
    "__init__",
    "__dict__",
    "_ex",
    "_em",
    "_S",
    "_bits",
    "_p4pad",
    "_p4fields",
    "x__w",
    "x",
    "ax",
    "aｘ",
    "b1",
    "b１",
    "a_",
    "a__",
    "a_x61_",
    "aU_x",
    "U_x",
    "_",
    "__",
    "int",
    "self",
    "e",
    "buf",
    "off",
]
INTERNAL = {
    "_v",
    "copy",
    "_ex",
    "_em",
    "_S",
    "_bits",
    "_p4pad",
    "_p4fields",
    "__init__",
    "__dict__",
}


def test_mangled_names_are_python_identifiers_stable_under_nfkc():
    for n in HOSTILE:
        m = fld(n)
        assert m.isidentifier() and not keyword.iskeyword(m), (n, m)
        assert m.isascii() and unicodedata.normalize("NFKC", m) == m, (n, m)
        assert m not in INTERNAL and m not in dir(object), (n, m)


def test_mangling_is_injective():
    names = HOSTILE + [unicodedata.normalize("NFKC", n) for n in HOSTILE]
    seen: dict[str, str] = {}
    for n in set(names):
        m = mangle("f", n)
        assert seen.setdefault(m, n) == n, f"{n!r} and {seen[m]!r} both mangle to {m!r}"
    assert fld("ax") != fld("aｘ") and fld("b1") != fld("b１")
