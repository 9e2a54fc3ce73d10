"""v1model extern state and algorithms, bit-exact with BMv2 where BMv2 defines them.

Hash inputs are built as BMv2's BufBuilder does: the fields' bits packed MSB first one
after the other, the last byte padded with zero bits at its end. Algorithms follow
BMv2's calculations.cpp: crc32 (= zlib), crc16 (CRC-16/ARC), custom CRCs with BMv2's
default parameters, csum16 (the Internet checksum), xor16, identity (first 8 bytes).
"""

from __future__ import annotations

import random as _random
import sys
import zlib

from p4sim.model import P4SimError

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


class Crc:
    """Table-driven CRC with the Rocksoft parameters BMv2 uses for its custom CRCs."""

    def __init__(self, width: int, poly: int, init: int, xor_out: int, refl_in: bool, refl_out: bool):
        self.width = width
        self.poly, self.init, self.xor_out = poly, init, xor_out
        self.refl_in, self.refl_out = refl_in, refl_out
        top = 1 << (width - 1)
        mask = (1 << width) - 1
        table = []
        for d in range(256):
            r = d << (width - 8)
            for _ in range(8):
                r = ((r << 1) ^ poly) if r & top else (r << 1)
            table.append(r & mask)
        self.table = table
        self.mask = mask
        self.rin = [_reflect(b, 8) for b in range(256)]

    def __call__(self, data: bytes) -> int:
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


_LITTLE = sys.byteorder == "little"


def xor16(data: bytes) -> int:
    if len(data) & 1:
        data = data + b"\x00"
    r = 0
    for i in range(0, len(data), 2):
        r ^= (data[i] << 8) | data[i + 1]
    return r


def xor32(data: bytes) -> int:
    data = data + b"\x00" * ((-len(data)) % 4)
    r = 0
    for i in range(0, len(data), 4):
        r ^= int.from_bytes(data[i:i + 4], "big")
    return r


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


class _RoundRobin:
    def __init__(self) -> None:
        self.i = 0

    def __call__(self, data: bytes) -> int:
        self.i += 1
        return self.i - 1


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


# ---------------------------------------------------------------- stateful externs


class CounterArray:
    __slots__ = ("name", "size", "pkts", "bytes", "unit")

    def __init__(self, name: str, size: int, unit: str):
        self.name, self.size, self.unit = name, size, unit
        self.pkts = [0] * size
        self.bytes = [0] * size

    def check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise P4SimError(f"counter {self.name}: index {index} out of range (size {self.size})")


class RegisterArray:
    __slots__ = ("name", "size", "width", "cells", "mask")

    def __init__(self, name: str, size: int, width: int):
        self.name, self.size, self.width = name, size, width
        self.cells = [0] * size
        self.mask = (1 << width) - 1

    def check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise P4SimError(f"register {self.name}: index {index} out of range (size {self.size})")


GREEN, YELLOW, RED = 0, 1, 2


class MeterState:
    """A two-rate three-colour meter computed as BMv2's Meter::execute does.

    Rates are in units (bytes or packets) per microsecond, bursts in units, as BMv2's
    meter_set_rates takes them (committed first, then peak). BMv2 keeps the rates sorted
    peak first: a packet takes tokens from each bucket in turn and gets the colour of the
    first bucket that is short (peak short: RED; committed short: YELLOW), else GREEN.
    Tokens are whole units: cumulative floor(microseconds since start * rate), each bucket
    capped at its burst and full when configured. Until configured the meter is GREEN.
    """

    __slots__ = ("configured", "rates", "tokens", "last")

    def __init__(self) -> None:
        self.configured = False
        self.rates: list[tuple[float, int, int]] = []  # (rate, burst, colour when short)
        self.tokens: list[int] = []
        self.last: list[int] = []

    def set_rates(self, rates: list[tuple[float, int]], now_ns: int) -> None:
        if not rates:  # no rates: back to unconfigured (always GREEN), as P4Runtime resets
            self.configured = False
            return
        if len(rates) != 2:
            raise P4SimError("a meter takes two rates: committed then peak (rate:burst)")
        (cir, cbs), (pir, pbs) = rates
        if pir < cir:
            raise P4SimError("meter: peak rate must be >= committed rate (as BMv2 requires)")
        if cir < 0 or cbs < 0 or pbs < 0:
            raise P4SimError("meter: rates and bursts must be >= 0")
        self.rates = [(float(pir), int(pbs), RED), (float(cir), int(cbs), YELLOW)]
        self.tokens = [int(pbs), int(cbs)]
        self.last = [0, 0]
        self.configured = True

    def execute(self, amount: int, now_ns: int) -> int:
        if not self.configured:
            return GREEN
        micros = now_ns // 1000
        tokens, last = self.tokens, self.last
        for i, (rate, burst, colour) in enumerate(self.rates):
            since = int(micros * rate)
            if since > last[i]:
                tokens[i] = min(tokens[i] + since - last[i], burst)
                last[i] = since
            if tokens[i] < amount:
                return colour
            tokens[i] -= amount
        return GREEN


class MeterArray:
    __slots__ = ("name", "size", "unit", "cells")

    def __init__(self, name: str, size: int, unit: str):
        self.name, self.size, self.unit = name, size, unit
        self.cells = [MeterState() for _ in range(size)]

    def check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise P4SimError(f"meter {self.name}: index {index} out of range (size {self.size})")
