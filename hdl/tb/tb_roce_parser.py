"""cocotb testbench for hdl/rtl/roce_parser.v (run from tests/hdl/test_roce_parser_hdl.py).

Stimulus: the shared vectors (tests/vectors/vectors.json) and frames from the packet
library's builders; the vectors' expected records are the stored ones (made by the vector
generator's layout model, not by a decoder), every other expected record comes from
controller.packets.decode(); none is computed in this file. Knobs (environment): RL_SEED (random seed), RL_HDL_FRAMES (random and
malformed frames per test), RL_HDL_MAX_PAYLOAD, RL_HDL_BENCH_FRAMES (back-to-back run).
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from controller.packets import FIELDS, Decoded, decode
from controller.packets.build import RoceSpec, pause_frame, pfc_frame, spec_frame
from controller.packets.constants import RC_OPCODES
from controller.packets.vectors import load

SEED = int(os.environ.get("RL_SEED", "4791"))
N_FRAMES = int(os.environ.get("RL_HDL_FRAMES", "40"))
MAX_PAYLOAD = int(os.environ.get("RL_HDL_MAX_PAYLOAD", "4096"))
BENCH_FRAMES = int(os.environ.get("RL_HDL_BENCH_FRAMES", "0"))

OPCODES = sorted(RC_OPCODES)


@dataclass
class Result:
    record: Decoded
    ports: dict[str, int] | None  # the named res_* ports, when asked for


def _uint(value: object) -> int:
    """A 1-bit port reads as Logic, a wider one as LogicArray."""
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)  # type: ignore[call-overload]


class ResultMonitor:
    """Valid/ready sink for the parse-result record, with optional res_ready backpressure."""

    def __init__(self, dut, read_ports: bool = False) -> None:
        self.dut = dut
        self.read_ports = read_ports
        self.queue: list[Result] = []
        self.pause: Iterator[int] | None = None
        self._ports = [(name, getattr(dut, f"res_{name}")) for name, _ in FIELDS]
        dut.res_ready.value = 0
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        ready = 0
        while True:
            await RisingEdge(self.dut.clk)
            # Values read at the edge are the ones the flops sampled: a handshake happened
            # if valid was high while our ready was high.
            if ready and self.dut.res_valid.value == 1:
                rec = Decoded.from_int(self.dut.res_data.value.to_unsigned())
                ports = None
                if self.read_ports:
                    ports = {name: _uint(h.value) for name, h in self._ports}
                self.queue.append(Result(rec, ports))
            ready = 0 if self.pause is not None and next(self.pause) else 1
            self.dut.res_ready.value = ready


class TB:
    """Clock, reset and the bus models around one roce_parser; nothing test-specific."""

    def __init__(self, dut, read_ports: bool = False) -> None:
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.width = len(dut.s_axis_tdata)
        self.bytes = self.width // 8
        Clock(dut.clk, 10, unit="ns").start()
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.results = ResultMonitor(dut, read_ports)
        for bus_model in (self.source, self.sink):
            bus_model.log.setLevel(logging.WARNING)
        self.beats = 0  # accepted input beats
        self.cycles = 0
        self.first_beat = -1  # cycle of the first / last accepted beat
        self.last_beat = -1
        cocotb.start_soon(self._count())

    async def _count(self) -> None:
        while True:
            await RisingEdge(self.dut.clk)
            self.cycles += 1
            if self.dut.s_axis_tvalid.value == 1 and self.dut.s_axis_tready.value == 1:
                self.beats += 1
                if self.first_beat < 0:
                    self.first_beat = self.cycles
                self.last_beat = self.cycles

    def set_idle(self, gen: Iterator[int] | None) -> None:
        self.source.set_pause_generator(gen)

    def set_backpressure(
        self, gen: Iterator[int] | None, res_gen: Iterator[int] | None = None
    ) -> None:
        self.sink.set_pause_generator(gen)
        self.results.pause = res_gen

    async def reset(self) -> None:
        self.dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(2):
            await RisingEdge(self.dut.clk)

    async def recv(self, frame: bytes) -> AxiStreamFrame:
        """The next output frame; a parser that hangs fails here instead of stalling the run."""
        limit_ns = 10 * 1000 * (4 + len(frame) // self.bytes)  # 1000x the frame's cycles
        return await with_timeout(self.sink.recv(), limit_ns, "ns")

    async def run_frames(
        self, frames: list[bytes], what: str, expected: list[Decoded] | None = None
    ) -> None:
        """Send frames, check every output frame byte for byte and every record against
        `expected` (default: the packet library's decoder)."""
        for frame in frames:
            await self.source.send(AxiStreamFrame(frame))
        for i, frame in enumerate(frames):
            rx = await self.recv(frame)
            assert bytes(rx.tdata) == frame, f"{what}[{i}]: output frame differs from input"
        # The record leaves 3 cycles after the last beat (RECORD_LATENCY; more under
        # res_ready pauses).
        for _ in range(2000):
            if len(self.results.queue) >= len(frames):
                break
            await RisingEdge(self.dut.clk)
        assert len(self.results.queue) == len(frames), (
            f"{what}: {len(self.results.queue)} records for {len(frames)} frames"
        )
        for i, (frame, res) in enumerate(zip(frames, self.results.queue, strict=True)):
            want = expected[i] if expected is not None else decode(frame)
            if res.record != want:
                got, exp = res.record.as_dict(), want.as_dict()
                diff = {k: (hex(got[k]), hex(exp[k])) for k in exp if got[k] != exp[k]}
                raise AssertionError(
                    f"{what}[{i}] (seed {SEED}, {len(frame)} bytes {frame[:64].hex()}...): "
                    f"fields differ (rtl, expected): {diff}"
                )
            if res.ports is not None:
                assert res.ports == want.as_dict(), f"{what}[{i}]: named res_* ports differ"
        self.results.queue.clear()


def random_gen(rng: random.Random, p: float) -> Iterator[int]:
    """1 (pause) with probability p each cycle."""
    while True:
        yield int(rng.random() < p)


def random_spec(
    rng: random.Random, opcode: int | None = None, family: int | None = None
) -> RoceSpec:
    """family: 0 RoCEv2/IPv4, 1 RoCEv2/IPv6, 2 RoCEv1 (GRH); None picks at random."""
    family = rng.randrange(3) if family is None else family
    version = 1 if family == 2 else 2
    v6 = family != 0
    if v6:
        src = f"fd00::{rng.randrange(1, 0xFFFF):x}:{rng.randrange(0x10000):x}"
        dst = f"fd00::{rng.randrange(1, 0xFFFF):x}:{rng.randrange(0x10000):x}"
    else:
        src = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        dst = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    # Mostly small payloads, some up to MAX_PAYLOAD: covers every tail alignment cheaply.
    size = rng.randrange(0, 65) if rng.random() < 0.7 else rng.randrange(0, MAX_PAYLOAD + 1)
    return RoceSpec(
        src=src,
        dst=dst,
        opcode=rng.choice(OPCODES) if opcode is None else opcode,
        dqpn=rng.randrange(1 << 24),
        psn=rng.randrange(1 << 24),
        payload=rng.randbytes(size),
        vlan=rng.randrange(4096) if rng.random() < 0.4 else None,
        pcp=rng.randrange(8),
        dscp=rng.randrange(64),
        ecn=rng.randrange(4),
        ttl=rng.randrange(256),
        sport=rng.randrange(0xC000, 0x10000),
        pkey=rng.randrange(1 << 16),
        se=rng.randrange(2),
        m=rng.randrange(2),
        fecn=rng.randrange(2),
        becn=rng.randrange(2),
        ackreq=rng.randrange(2),
        va=rng.randrange(1 << 64),
        rkey=rng.randrange(1 << 32),
        imm=rng.randrange(1 << 32),
        syndrome=rng.randrange(256),
        msn=rng.randrange(1 << 24),
        version=version,
        ip_id=rng.randrange(1 << 16),
        flow_label=rng.randrange(1 << 20),
    )


def random_valid_frames(rng: random.Random, n: int) -> list[bytes]:
    # Every opcode and every family within the first len(OPCODES) frames; the rest random.
    frames = [spec_frame(random_spec(rng, OPCODES[i % len(OPCODES)], i % 3)) for i in range(n)]
    # PFC and PAUSE ride along: the parser must not confuse them with RoCE.
    frames.append(pfc_frame("02:00:00:00:00:09", [rng.randrange(1 << 16) for _ in range(8)]))
    frames.append(pause_frame("02:00:00:00:00:09", rng.randrange(1 << 16)))
    rng.shuffle(frames)
    return frames


def _set16(b: bytearray, off: int, value: int) -> None:
    if off + 2 <= len(b):
        b[off : off + 2] = value.to_bytes(2, "big")


def malformed_frame(rng: random.Random) -> bytes:
    """A broken frame: truncated, corrupted header bytes, bad ICRC, wrong lengths, ..."""
    base = bytearray(spec_frame(random_spec(rng)))
    l3 = 18 if base[12:14] == b"\x81\x00" else 14
    kind = rng.randrange(10)
    if kind == 0:  # cut anywhere, including inside the Ethernet header
        return bytes(base[: rng.randrange(1, len(base) + 1)])
    if kind == 1:  # cut inside the headers
        return bytes(base[: rng.randrange(1, min(len(base), 110) + 1)])
    if kind == 2:  # flip bits in one header byte
        i = rng.randrange(min(len(base), 100))
        base[i] ^= 1 << rng.randrange(8)
        return bytes(base)
    if kind == 3:  # corrupt a payload or ICRC byte
        i = rng.randrange(l3 + 20, len(base))
        base[i] ^= rng.randrange(1, 256)
        return bytes(base)
    if kind == 4:  # IP length field says something else
        pos = l3 + 2 if base[l3] >> 4 == 4 and base[l3 - 2 : l3] == b"\x08\x00" else l3 + 4
        _set16(
            base,
            pos,
            rng.choice(
                (
                    0,
                    1,
                    19,
                    20,
                    40,
                    rng.randrange(1 << 16),
                    int.from_bytes(base[pos : pos + 2], "big") - 4,
                )
            )
            & 0xFFFF,
        )
        return bytes(base)
    if kind == 5:  # trailing garbage after the IP end (treated as padding)
        return bytes(base) + rng.randbytes(rng.randrange(1, 80))
    if kind == 6:  # BTH transport version, IPv4 options or version nibble
        if base[l3 - 2 : l3] == b"\x08\x00":
            base[l3] = rng.choice((0x46, 0x55, 0x65, 0x4F))
        else:
            base[l3] = (rng.randrange(16) << 4) | (base[l3] & 0x0F)
        return bytes(base)
    if kind == 7:  # random bytes behind a plausible EtherType
        et = rng.choice((b"\x08\x00", b"\x86\xdd", b"\x89\x15", b"\x88\x08", b"\x81\x00"))
        return bytes(base[:12]) + et + rng.randbytes(rng.randrange(0, 120))
    if kind == 8:  # pure noise
        return rng.randbytes(rng.randrange(1, 200))
    # PFC / PAUSE, possibly cut short
    f = (
        pfc_frame("02:00:00:00:00:09", [rng.randrange(1 << 16) for _ in range(8)])
        if rng.random() < 0.5
        else pause_frame("02:00:00:00:00:09", rng.randrange(1 << 16))
    )
    return f[: rng.randrange(1, len(f) + 1)]


# ------------------------------------------------------------------------------ tests


@cocotb.test()
async def test_vectors(dut) -> None:
    """Every shared vector, back to back; the named res_* ports are checked too."""
    tb = TB(dut, read_ports=True)
    await tb.reset()
    vectors = load()
    frames = [v.frame for v in vectors]
    records = [v.record() for v in vectors]
    await tb.run_frames(frames, "vector", records)
    # The same frames under random gaps and backpressure on both outputs.
    rng = random.Random(SEED)
    tb.set_idle(random_gen(rng, 0.3))
    tb.set_backpressure(random_gen(rng, 0.3), random_gen(rng, 0.5))
    await tb.run_frames(frames, "vector/backpressure", records)
    tb.log.info("%d vectors ok at DATA_WIDTH=%d", len(frames), tb.width)


@cocotb.test()
async def test_random_valid(dut) -> None:
    """Random RoCEv2 (v4/v6) and RoCEv1 frames of every opcode, tagged or not."""
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(SEED + 1)
    frames = random_valid_frames(rng, N_FRAMES)
    assert all(decode(f).verdict in ("ok", "pfc", "pause") for f in frames)
    await tb.run_frames(frames, "random")
    tb.set_idle(random_gen(rng, 0.2))
    tb.set_backpressure(random_gen(rng, 0.2), random_gen(rng, 0.3))
    await tb.run_frames(random_valid_frames(rng, N_FRAMES // 2), "random/backpressure")


@cocotb.test()
async def test_malformed(dut) -> None:
    """Broken frames of every kind: the records match the decoder and nothing hangs."""
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(SEED + 2)
    frames = [malformed_frame(rng) for _ in range(3 * N_FRAMES)]
    verdicts = {decode(f).verdict for f in frames}
    tb.log.info("malformed verdicts: %s", sorted(verdicts))
    assert {"truncated", "bad_icrc"} <= verdicts
    tb.set_idle(random_gen(rng, 0.2))
    tb.set_backpressure(random_gen(rng, 0.2), random_gen(rng, 0.2))
    await tb.run_frames(frames, "malformed")


@cocotb.test()
async def test_back_to_back(dut) -> None:
    """tvalid/tready always high: each frame takes exactly ceil(len / bytes) cycles."""
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(SEED + 3)
    n = BENCH_FRAMES or N_FRAMES
    frames = random_valid_frames(rng, n)
    frames += [bytes(rng.randbytes(rng.randrange(1, 3 * tb.bytes))) for _ in range(n // 2)]
    ideal = sum(-(-len(f) // tb.bytes) for f in frames)
    tb.beats, tb.first_beat = 0, -1
    for frame in frames:
        await tb.source.send(AxiStreamFrame(frame))
    for i, frame in enumerate(frames):
        rx = await tb.recv(frame)
        assert bytes(rx.tdata) == frame, f"back-to-back[{i}]: output frame differs"
    await RisingEdge(dut.clk)
    # From the first accepted beat to the last: no bubble allowed anywhere.
    beats = tb.beats
    cycles = tb.last_beat - tb.first_beat + 1
    tb.log.info(
        "THROUGHPUT width=%d frames=%d beats=%d cycles=%d ideal=%d",
        tb.width,
        len(frames),
        beats,
        cycles,
        ideal,
    )
    assert beats == ideal, f"{beats} beats for {ideal} ideal"
    assert cycles == ideal, f"{cycles} cycles for {ideal} beats: bubbles between frames"
    for _ in range(5):
        await RisingEdge(dut.clk)
    assert len(tb.results.queue) == len(frames)
    for i, (frame, res) in enumerate(zip(frames, tb.results.queue, strict=True)):
        assert res.record == decode(frame), f"back-to-back[{i}]: record differs"
