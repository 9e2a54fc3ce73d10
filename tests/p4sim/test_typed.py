"""The typed emission of the compiled backend (p4sim.compiled.typed): C arithmetic only where
it is exact. Its bound analysis is checked directly, and a program of semantic edge cases
(shifts by 64 and more, negative intermediates, int<W>, bit<62>/bit<64>/bit<128> fields,
concatenation past 62 bits, products past 64 bits) runs on both backends with equal
results, equal to values computed here; a planted wrong bound must be caught."""

from __future__ import annotations

import ast
from pathlib import Path

from p4sim.compiled import typed
from p4sim.lower import load_program
from tests.p4sim.compiled_helpers import compiled_cache, needs_compiler, outputs, quick_build  # noqa: F401 (autouse fixture)

PROG = Path(__file__).resolve().parent / "typed" / "typed_edges.p4"


# ----------------------------------------------------------------- bound analysis


def test_bounds_refuse_what_c_would_get_wrong():
    iv = typed.binop_iv
    b32, s8 = (0, 2**32 - 1), (0, 255)
    assert iv(ast.LShift(), b32, (8, 8)) == (0, (2**32 - 1) << 8)
    assert iv(ast.LShift(), b32, (40, 40)) is None  # past 62 bits
    assert iv(ast.LShift(), (0, 1), (64, 64)) is None  # C: undefined for counts >= 64
    assert iv(ast.LShift(), (0, 1), s8) is None
    assert iv(ast.LShift(), (-1, 1), (1, 1)) is None  # negative left operand
    assert iv(ast.RShift(), b32, (0, 63)) == (0, 2**32 - 1)
    assert iv(ast.RShift(), b32, s8) is None
    assert iv(ast.RShift(), (-8, -8), (1, 1)) == (-4, -4)  # arithmetic, as Python
    assert iv(ast.Sub(), (0, 5), (0, 30000)) == (-30000, 5)  # negative intermediates are exact
    assert iv(ast.Add(), (0, 2**62 - 1), (0, 2**62 - 1)) is None
    assert iv(ast.Mult(), b32, b32) is None  # a 64-bit product
    assert iv(ast.Mult(), (0, 2**20), (0, 300)) == (0, 300 * 2**20)
    assert iv(ast.BitAnd(), (-(2**40), 2**40), (0, 255)) == (0, 255)
    assert iv(ast.BitOr(), (0, 5), (0, 8)) == (0, 15)
    assert iv(ast.FloorDiv(), b32, (0, 3)) is None  # may divide by 0
    assert iv(ast.FloorDiv(), (-7, 7), (2, 2)) == (-4, 3)
    assert iv(ast.Mod(), b32, (7, 7)) == (0, 6)
    assert iv(ast.Div(), b32, (7, 7)) is None
    assert iv(ast.Pow(), (2, 2), (3, 3)) is None
    assert iv(ast.Add(), None, (1, 1)) is None


def _typed_fn(src: str, ty: typed.Typing, params: dict[str, str]) -> str:
    fn = ast.parse(src).body[0]
    typed.type_function(fn, params, ty)
    return ast.unparse(fn)


def test_unproven_operators_get_object_operands_and_proven_ones_stay_c():
    prog = load_program(str(PROG))
    ty = typed.Typing(prog.struct_types)
    hdr = prog.pipeline.new_hdr
    out = _typed_fn(
        "def f(h):\n    x = h.f_i.f_a << 8\n    y = h.f_i.f_a << h.f_i.f_s\n"
        "    z = (h.f_i.f_w62 << 2) | h.f_i.f_pad\n    w = h.f_i.f_w64 + 1\n",
        ty,
        {"h": hdr},
    )
    decls = [x.strip() for x in out.splitlines() if "cython.declare" in x]
    # x holds at most 40 bits: a C local; y, z, w are Python objects
    assert decls == ["x = cython.declare(cython.longlong)"]
    lines = [x for x in out.splitlines() if "cython.declare" not in x]
    assert f"def f(h: {hdr}):" == lines[0]
    assert lines[1].strip() == "x = h.f_i.f_a << 8"  # at most 40 bits: C
    assert "cython.cast(object, h.f_i.f_a) << cython.cast(object, h.f_i.f_s)" in lines[2]
    assert "cython.cast(object, h.f_i.f_w62) << cython.cast(object, 2)" in lines[3]
    # bit<64> is a Python object field (unknown range: Python adds)
    assert ty.classes[ty.classes[hdr]["f_i"][0][1]]["f_w64"] == (None, None)
    assert lines[4].strip() == "w = cython.cast(object, h.f_i.f_w64) + cython.cast(object, 1)"
    assert ty.classes[ty.classes[hdr]["f_i"][0][1]]["f_s"] == (("ll",), (0, 255))
    assert ty.classes[ty.classes[hdr]["f_i"][0][1]]["f_n"] == (("ll",), (-(2**15), 2**16 - 1))


def test_locals_get_a_class_only_when_every_assignment_agrees():
    prog = load_program(str(PROG))
    ty = typed.Typing(prog.struct_types)
    hdr = prog.pipeline.new_hdr
    fn = ast.parse(
        "def f(h, q):\n    a = h.f_i\n    b = a\n    c = h.f_i\n    c = q\n    for d in q:\n"
        "        pass\n    d = h.f_o\n"
    ).body[0]
    env = typed.local_classes(fn, {"h": hdr}, ty)
    cls_i = ty.classes[hdr]["f_i"][0][1]
    assert env == {"h": hdr, "a": cls_i, "b": cls_i}
    fn = ast.parse(
        "def f(h, q):\n    x = h.f_i.f_s << 2\n    x = 7\n    t = (h.f_i.f_s, 1)\n    u = q\n"
        "    v = 0\n    for _ in q:\n        v = v + 1\n    w = h.f_i.f_a\n    w.bit_length()\n"
    ).body[0]
    # x: C, its interval the union; t a tuple, u an object, v loop-carried, w used as an object
    assert typed.int_locals(fn, {"h": hdr}, ty, {}) == {"x": (0, 1020)}


# ----------------------------------------------------------------- both backends

A = [0xFFFFFFFF, 0x80000001, 5, 0, 3]
S = [0, 31, 32, 63, 64, 200]
N = [-32768, -1, 0, 1, 32767]


def _frames() -> list[bytes]:
    out = []
    for i in range(12):
        a, s, n = A[i % len(A)], S[i % len(S)], N[i % len(N)]
        w62 = [2**62 - 1, 2**61 + 7, 0][i % 3]
        w64 = [2**64 - 1, 2**63, 2**63 + 1, 12345][i % 4]
        m48 = [2**48 - 1, 0x123456789ABC][i % 2]
        bits = ((((((a << 8 | s) << 16 | (n & 0xFFFF)) << 62 | w62) << 2) << 64 | w64) << 48) | m48
        out.append(bits.to_bytes(29, "big"))
    return out


def _expected(frame: bytes) -> dict[str, int]:
    v = int.from_bytes(frame, "big")
    m48, v = v & (2**48 - 1), v >> 48
    w64, v = v & (2**64 - 1), v >> 64
    v >>= 2
    w62, v = v & (2**62 - 1), v >> 62
    n, v = v & 0xFFFF, v >> 16
    s, a = v & 0xFF, v >> 8
    sn = n - 65536 if n >> 15 else n
    return {
        "wide_shl": (a << 40) % 2**64,
        "var_shl": (a << s) % 2**32,
        "var_shr": a >> s,
        "neg": (sn - 30000) % 2**16,
        "sar": (sn >> 2) % 2**16,
        "mul62": (w62 * 3) % 2**62,
        "cat": (a << 96) | (w64 << 32) | a,
        "under": (a - 5) % 256,
        "quo": a // 3,
        "rem": a % 7,
        "sum64": (2 * w64) % 2**64,
        "shl48": (m48 << 20) % 2**48,
        "mul64": (a * a) % 2**64,
    }


def _decode(out: bytes) -> dict[str, int]:
    o = int.from_bytes(out[29:], "big")
    names = [
        ("wide_shl", 64),
        ("var_shl", 32),
        ("var_shr", 32),
        ("neg", 16),
        ("sar", 16),
        ("mul62", 62),
        ("pad", 2),
        ("cat", 128),
        ("under", 8),
        ("quo", 32),
        ("rem", 32),
        ("sum64", 64),
        ("shl48", 48),
        ("mul64", 64),
        ("sdiff", 16),
        ("cmp", 8),
    ]
    total = sum(w for _, w in names)
    res = {}
    for name, w in names:
        total -= w
        res[name] = (o >> total) & ((1 << w) - 1)
    return res


def run(backend: str, monkeypatch) -> list[tuple[int, bytes]]:
    return outputs(PROG, _frames(), backend, monkeypatch)


def test_python_backend_computes_the_edge_cases_as_p4_says(monkeypatch):
    got = run("python", monkeypatch)
    assert len(got) == len(_frames())
    for (port, data), f in zip(got, _frames(), strict=True):
        assert port == 1 and data[:29] == f
        d = _decode(data)
        for k, v in _expected(f).items():
            assert d[k] == v, k


@needs_compiler
def test_compiled_backend_equals_python_on_the_edge_cases(monkeypatch):
    ref = run("python", monkeypatch)
    got = run("compiled", monkeypatch)
    assert got == ref
    cmps = [_decode(d)["cmp"] for _, d in got]
    for bit in (1, 2, 4, 8, 16):  # every comparison went both ways
        assert any(c & bit for c in cmps) and not all(c & bit for c in cmps), bit


@needs_compiler
def test_a_planted_wrong_bound_is_caught(monkeypatch):
    quick_build(monkeypatch)
    ref = run("python", monkeypatch)
    real = typed.binop_iv

    def wrong(op, a, b):  # a left shift trusted whatever its result's width (C then wraps)
        if (
            isinstance(op, ast.LShift)
            and a is not None
            and b is not None
            and 0 <= b[0]
            and b[1] < 64
            and a[0] >= 0
        ):
            return (0, 1)
        return real(op, a, b)

    monkeypatch.setattr(typed, "binop_iv", wrong)
    got = run("compiled", monkeypatch)
    assert got != ref
