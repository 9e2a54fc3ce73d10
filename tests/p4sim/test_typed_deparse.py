"""The typed deparser (p4sim.compiled.typed.typed_deparser): emits of headers whose fields are
C values write bytes into one buffer; the rest (a signed field, a stack in a loop, a 64-bit
chunk of two fields) keep struct.pack, and the order of everything holds. Frames through
typed_deparse.p4 on both backends must be equal, and planted bugs (a byte-order slip, a
missing flush before a kept pack) must be caught."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from p4sim.compiled import program, typed
from p4sim.lower import load_program
from tests.p4sim.compiled_helpers import compiled_cache, needs_compiler, outputs, quick_build  # noqa: F401 (autouse fixture)

PROG = Path(__file__).resolve().parent / "typed" / "typed_deparse.p4"

FRAME_LEN = 18 + 4 + 3 + 17 + 18  # a, s, st[3], b, a2


def _frames() -> list[bytes]:
    rnd = random.Random(19)
    out = []
    for i in range(40):
        f = bytearray(rnd.randbytes(FRAME_LEN))
        f[1] = (f[1] & 0xF0) | (i % 6)  # a.lo picks which headers are invalid (0, 5: none)
        if i % 5 == 0:
            f[0:18] = b"\xff" * 18  # every field at its maximum: wraps, bytes >= 0x80
        out.append(bytes(f) + b"payload")
    return out


def run(backend: str, monkeypatch) -> list[tuple[int, bytes]]:
    return outputs(PROG, _frames(), backend, monkeypatch)


def _deparser_source() -> str:
    prog = load_program(str(PROG))
    src = program.typed_source(prog, ["_RT"])
    tree = ast.parse(src)
    bind = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == program.BIND)
    fn = next(
        n for n in bind.body if isinstance(n, ast.FunctionDef) and n.name == prog.pipeline.deparser
    )
    return ast.unparse(fn)


def test_c_headers_write_bytes_and_the_others_keep_pack():
    src = _deparser_source()
    assert "_S_H_a_t.pack" not in src  # a and a2: every item a C value (w64 via unsigned long long)
    assert "_dq = _h" in src and "_dn += 18" in src
    assert "_S_H_s_t.pack" in src  # int<16>: its interval includes negatives
    assert "_S_H_b_t.pack" in src  # w63 << 1 | f is past 62 bits: a Python value
    assert "_em()" in src  # the stack's loop
    # 2 sites of 18 bytes, each run at most once: the buffer's bound
    assert "cython.uchar[36]" in src
    # a kept pack and the loop are each preceded by a flush, and the function ends with one
    assert src.count("_out.append(cython.cast(cython.p_char, _db)[:_dn])") == 4


def test_a_deparser_with_nothing_to_write_is_left_as_it_was():
    # typed_edges.p4: both headers have an int<16> field, so every emit keeps struct.pack
    prog = load_program(str(PROG.parent / "typed_edges.p4"))
    src = program.typed_source(prog, ["_RT"])
    fn = src[src.index(f"def {prog.pipeline.deparser}(") :]
    fn = fn[: fn.index("\n    return {")]
    assert "_dn" not in fn and fn.count(".pack(") == 2


def test_pack_site_refuses_items_not_proven_in_their_word():
    ty = typed.Typing({})
    ty.formats["_S_X"] = ">HB"
    st = ast.parse("_out.append(_S_X.pack(a, b))").body[0]
    items = st.value.args[0].args
    items[1]._p4t = (("ll",), (0, 255))
    items[0]._p4t = (("ll",), (0, 65535))
    assert typed._pack_site(st, ty) is not None
    for bad in [
        (("ll",), (0, 256)),
        (("ll",), (-1, 3)),
        (("ll",), None),
        (None, None),
        (("bint",), (0, 1)),
    ]:
        items[1]._p4t = bad
        assert typed._pack_site(st, ty) is None, bad
    items[1]._p4t = (("ll",), (0, 255))
    ty.formats["_S_X"] = ">Hs"  # not a format of fixed integer items
    assert typed._pack_site(st, ty) is None


@needs_compiler
def test_compiled_deparser_equals_python(monkeypatch):
    ref = run("python", monkeypatch)
    assert len(ref) == len(_frames())
    lens = {len(d) for _, d in ref}
    assert len(lens) >= 4  # the invalid headers vary what is emitted
    got = run("compiled", monkeypatch)
    assert got == ref


@needs_compiler
@pytest.mark.parametrize("plant", ["byte_order", "no_flush"])
def test_a_planted_deparser_bug_is_caught(monkeypatch, plant):
    quick_build(monkeypatch)
    ref = run("python", monkeypatch)
    if plant == "byte_order":
        real = typed._byte_stores

        def swapped(items, widths):  # the last item's bytes written little-endian
            sts = real(items, widths)
            n, at = widths[-1], sum(widths[:-1])
            mine = sts[-1 - n : -1]  # its byte stores (the last statement advances _dn)
            sts[-1 - n : -1] = [
                ast.parse(
                    ast.unparse(s).replace(f"_dn + {at + j}]", f"_dn + {at + n - 1 - j}]")
                ).body[0]
                for j, s in enumerate(mine)
            ]
            return sts

        monkeypatch.setattr(typed, "_byte_stores", swapped)
    else:
        monkeypatch.setattr(typed, "_mentions_out", lambda node: False)
    got = run("compiled", monkeypatch)
    assert len(got) == len(ref) and got != ref
