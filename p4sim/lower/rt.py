"""Helpers the generated Python code calls (kept tiny: the hot path is inline code)."""

from __future__ import annotations


class Exit(Exception):
    """P4 `exit`: leaves every control up to the pipeline stage."""


class ParserError(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class AssertFailed(Exception):
    """v1model assert()/assume() with a false argument (BMv2 aborts the switch)."""


ONCE = (0,)  # `for _ in ONCE:` lets an inlined body `return` with `break`


def sx(v: int, w: int) -> int:
    """Two's-complement value of the low w bits of v."""
    return v - (1 << w) if (v >> (w - 1)) & 1 else v


class VarbitBox:
    """A local varbit variable: its bits `f_v` and their current width `wf_v`, moved together
    (the same pair of attributes a header's varbit field has)."""

    __slots__ = ("f_v", "wf_v")

    def __init__(self) -> None:
        self.f_v = 0
        self.wf_v = 0


class Stack:
    """A header stack: `a` the elements, `n` the next index (P4's nextIndex)."""

    __slots__ = ("a", "n", "size")

    def __init__(self, elems: list):
        self.a = elems
        self.n = 0
        self.size = len(elems)

    def copy(self) -> Stack:
        s = Stack([h.copy() for h in self.a])
        s.n = self.n
        return s

    def push_front(self, count: int) -> None:
        a = self.a
        for i in range(self.size - 1, -1, -1):
            if i >= count:
                a[i] = a[i - count].copy()
            else:
                a[i] = a[i].copy()
                a[i]._v = False
        self.n = min(self.size, self.n + count)

    def pop_front(self, count: int) -> None:
        a = self.a
        for i in range(self.size):
            if i + count < self.size:
                a[i] = a[i + count].copy()
            else:
                a[i] = a[i].copy()
                a[i]._v = False
        self.n = max(0, self.n - count)


def pack(values, widths) -> bytes:
    acc = 0
    n = 0
    for v, w in zip(values, widths, strict=True):
        acc = (acc << w) | (v & ((1 << w) - 1))
        n += w
    pad = (-n) % 8
    return (acc << pad).to_bytes((n + pad) // 8, "big")


def csum_fold(s: int) -> int:
    """Ones' complement of the folded 16-bit ones' complement sum (Internet checksum)."""
    while s >> 32:  # only sums of more than 65,537 words; every header checksum skips this
        s = (s & 0xFFFF) + (s >> 16)
    # below 2**32 two folds always suffice: the first leaves at most 0x1fffe, the second at most 0xffff
    s = (s & 0xFFFF) + (s >> 16)
    return ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF
