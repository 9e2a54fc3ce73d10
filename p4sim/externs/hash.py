"""v1model `hash()`, and the hash algorithms BMv2 computes for it and for checksums.

Hash inputs are built as BMv2's BufBuilder does: the fields' bits packed MSB first one
after the other, the last byte padded with zero bits at its end. Algorithms follow
BMv2's calculations.cpp: crc32 (= zlib), crc16 (CRC-16/ARC), custom CRCs with BMv2's
default parameters, csum16 (the Internet checksum), xor16, identity (first 8 bytes).
"""

from __future__ import annotations

import random as _random
import sys
import zlib
from typing import Any

from p4sim.check.types import VOID, mask, width_of
from p4sim.lower.codegen import V
from p4sim.model import P4SimError

from . import extern
from ._common import enum_member
from .base import Extern

# ---------------------------------------------------------------- packing


def pack_bits(values: list[int] | tuple[int, ...], widths: list[int] | tuple[int, ...]) -> bytes:
    """Concatenate fields MSB first; pad the last byte with zeros at its end (BMv2)."""
    acc = 0
    n = 0
    for v, w in zip(values, widths, strict=True):
        acc = (acc << w) | (v & ((1 << w) - 1))
        n += w
    pad = (-n) % 8
    return (acc << pad).to_bytes((n + pad) // 8, "big")


# ---------------------------------------------------------------- CRCs


def _reflect(v: int, n: int) -> int:
    r = 0
    for _ in range(n):
        r = (r << 1) | (v & 1)
        v >>= 1
    return r


MEMO_MAX = 4096  # results a Crc keeps (per algorithm object)


class Crc:
    """Table-driven CRC with the Rocksoft parameters BMv2 uses for its custom CRCs."""

    def __init__(
        self, width: int, poly: int, init: int, xor_out: int, refl_in: bool, refl_out: bool
    ):
        self.width = width
        self.poly, self.init, self.xor_out = poly, init, xor_out
        self.refl_in, self.refl_out = refl_in, refl_out
        top = 1 << (width - 1)
        mask_ = (1 << width) - 1
        table = []
        for d in range(256):
            r = d << (width - 8)
            for _ in range(8):
                r = ((r << 1) ^ poly) if r & top else (r << 1)
            table.append(r & mask_)
        self.table = table
        self.mask = mask_
        self.rin = [_reflect(b, 8) for b in range(256)]
        # a pure function of the bytes, looked up per packet (ECMP's 5-tuple hash): a
        # switch sees few distinct flows, so most calls are one dict probe, not a byte loop
        self._memo: dict[bytes, int] = {}

    def __call__(self, data: bytes) -> int:
        r = self._memo.get(data)
        if r is None:
            r = self._compute(data)
            if len(self._memo) >= MEMO_MAX:  # bounded: many flows only cost the loop again
                self._memo.clear()
            self._memo[data] = r
        return r

    def _compute(self, data: bytes) -> int:
        r = self.init
        sh = self.width - 8
        t = self.table
        m = self.mask
        if self.refl_in:
            rin = self.rin
            for b in data:
                r = t[(rin[b] ^ (r >> sh)) & 0xFF] ^ ((r << 8) & m)
        else:
            for b in data:
                r = t[(b ^ (r >> sh)) & 0xFF] ^ ((r << 8) & m)
        if self.refl_out:
            r = _reflect(r, self.width)
        return r ^ self.xor_out


CRC16 = Crc(16, 0x8005, 0x0000, 0x0000, True, True)  # BMv2 crc16 = CRC-16/ARC
CRC_CCITT = Crc(16, 0x1021, 0xFFFF, 0x0000, False, False)


def crc32(data: bytes) -> int:
    return zlib.crc32(data)


_LITTLE = sys.byteorder == "little"


def csum16(data: bytes) -> int:
    """Internet checksum (ones' complement of the ones' complement sum), odd tail padded.

    The ones' complement sum does not depend on byte order (RFC 1071), so we sum native
    16-bit words and swap the result's bytes on little-endian hosts.
    """
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    s = sum(memoryview(data).cast("H"))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    s = ~s & 0xFFFF
    if _LITTLE:
        s = ((s & 0xFF) << 8) | (s >> 8)
    return s


def xor16(data: bytes) -> int:
    if len(data) & 1:
        data = data + b"\x00"
    r = 0
    for i in range(0, len(data), 2):
        r ^= (data[i] << 8) | data[i + 1]
    return r


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


# HashAlgorithm members of v1model.p4 -> function over the packed bytes
def make_hash_algorithms() -> dict[str, object]:
    """Fresh per-switch algorithm table (custom CRCs are per switch in BMv2)."""
    return {
        "crc32": crc32,
        "crc32_custom": Crc(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True),
        "crc16": CRC16,
        "crc16_custom": Crc(16, 0x8005, 0x0000, 0x0000, True, True),
        "random": None,  # handled by the caller (needs the switch's seeded RNG)
        "identity": identity,
        "csum16": csum16,
        "xor16": xor16,
    }


def hash_value(fn, data: bytes, base: int, max_: int, rng: _random.Random) -> int:
    """v1model hash(): base + (h % max); BMv2 treats max == 0 as 'no modulo'."""
    h = rng.getrandbits(64) if fn is None else fn(data)
    if max_:
        return base + h % max_
    return base + h


# ---------------------------------------------------------------- lowering

# algorithms with no per-switch state: generated code calls them directly (`_HF_<algo>`)
FIXED = {"crc32": crc32, "crc16": CRC16, "csum16": csum16, "xor16": xor16, "identity": identity}


def hash_call(algo: str, data: str, base: str, mx: V | None) -> str:
    """A direct call for the fixed algorithms; the switch's table for custom/random ones."""
    if algo not in FIXED:
        return f"_RT.hash({algo!r}, {data}, {base}, {mx.code if mx is not None else 0})"
    h = f"_HF_{algo}({data})"
    if mx is not None and not (mx.is_const and mx.const == 0):
        if mx.is_const:
            h = f"({h} % {mx.const})"
        else:
            h = f"({h} % {mx.code} if {mx.code} else {h})"
    return h if base == "0" else f"({base} + {h})"


@extern
class Hash(Extern):
    functions = ("hash",)

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        ck.field_list(argv[3], scope, ctx)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        lt = cc.lvalue_type(argv[0], scope, fn)
        algo = enum_member(argv[1])
        base = cc.expr(argv[2], scope, fn)
        data = cc.data_pack(argv[3], scope, fn)
        mx = cc.expr(argv[4], scope, fn)
        code = f"({hash_call(algo, data, base.code, mx)} & {mask(width_of(lt))})"
        cc.assign(argv[0], V(code, lt), scope, fn)
        return V("None", VOID)

    def namespace(self) -> dict[str, object]:
        return {f"_HF_{a}": f for a, f in FIXED.items()}

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.hash_algos = make_hash_algorithms()

    def runtime_methods(self) -> dict[str, Any]:
        return {"hash": _switch_hash, "pack_valid": _pack_valid}


def _switch_hash(sw: Any, algo: str, data: bytes, base: int, max_: int) -> int:
    """The algorithms with per-switch state (custom CRCs) or randomness (`random`, from the
    switch's seeded source)."""
    fn = sw.hash_algos.get(algo, KeyError)
    if fn is KeyError:
        raise P4SimError(f"hash algorithm {algo} is not supported")
    return hash_value(fn, data, base, max_, sw.rng)


def _pack_valid(sw: Any, parts: Any) -> bytes:
    """A field list with header-validity conditions: only the (value, width) parts present."""
    ps = [p for p in parts if p is not None]
    return pack_bits([p[0] for p in ps], [p[1] for p in ps])
