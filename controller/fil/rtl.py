"""hdl/rtl/roce_rx.v (roce_parser -> roce_np) in the HDL simulator, as a port that speaks
frames in virtual time. Imported only inside a cocotb simulation.

Time: one clock. Simulator time is p4sim's virtual time shifted by a constant (the reset
that precedes the run): virtual ns v <-> simulator ps (v - v0) * 1000 + s0. The RTL clock
runs at CLOCK_PS (6.4 ns, 156.25 MHz): at DATA_WIDTH 64 that is 10 Gb/s, the link speed, so
the parser keeps up with line rate (a frame of n bytes takes ceil(n / 8) cycles).

A frame enters the RTL when its last bit reached the NIC (the MAC buffers a frame, then
streams it into the parser: store and forward, as the engine models the switch); what the
RTL emits (frames passed through to the host, CNPs) is stamped with the simulator time of
its last beat.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from dataclasses import dataclass, field

import cocotb
from cocotb.clock import Clock
from cocotb.task import resume
from cocotb.triggers import Event, RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from controller.packets import Decoded, decode

from .loop import FilMismatch

CLOCK_PS = 6400  # 156.25 MHz
# A frame's record must leave the parser within this many cycles after its last beat, not
# counting cycles its record waits on a stalled res_ready: far above roce_parser's
# RECORD_LATENCY (3), so any latency below it pairs; a record later than this is lost.
RECORD_DEADLINE = 64


@dataclass
class Exchange:
    """What the RTL produced up to some instant: (virtual ns, frame) for the host and for
    the wire (CNPs), and (clock cycle, virtual ns, record) per parsed frame, in order."""

    to_host: list[tuple[int, bytes]] = field(default_factory=list)
    to_wire: list[tuple[int, bytes]] = field(default_factory=list)
    records: list[tuple[int, int, Decoded]] = field(default_factory=list)


class _RxDut:
    """Clock, reset, config writes and the virtual-time mapping of one roce_rx."""

    dut: object
    clock_ps: int
    v0 = 0  # virtual ns at simulator ps s0
    s0 = 0

    def virtual_ns(self, sim_ps: int | None = None) -> int:
        ps = get_sim_time("ps") if sim_ps is None else sim_ps
        return self.v0 + -(-(int(ps) - self.s0) // 1000)

    def anchor(self, virtual_ns: int) -> None:
        """From now on, simulator time now is virtual time `virtual_ns`."""
        self.v0, self.s0 = virtual_ns, int(get_sim_time("ps"))

    async def _until(self, virtual_ns: int) -> None:
        target = self.s0 + (virtual_ns - self.v0) * 1000
        now = int(get_sim_time("ps"))
        if target > now:
            await Timer(target - now, "ps")

    async def reset(self) -> None:
        self.dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(2):
            await RisingEdge(self.dut.clk)

    async def configure(self, writes: list[tuple[int, int]]) -> None:
        """Register writes through cfg_*, one per cycle, as a driver's MMIO would."""
        dut = self.dut
        for addr, value in writes:
            dut.cfg_addr.value = addr
            dut.cfg_wdata.value = value
            dut.cfg_we.value = 1
            await RisingEdge(dut.clk)
        dut.cfg_we.value = 0
        await RisingEdge(dut.clk)

    # -- the loop's port (blocking; call from a cocotb.task.bridge thread)
    def setup(self, cfg, now_ns: int) -> None:
        """Program the NP (an NpConfig) and anchor virtual time `now_ns` to the simulator's now."""
        resume(self.configure)(cfg.writes())
        self.anchor(now_ns)

    def exchange(self, until_ns: int, inputs: list[tuple[int, bytes]]) -> Exchange:
        """Feed `inputs` ((arrival ns, frame), sorted) at their instants, run the RTL to
        `until_ns`, and return what it produced since the last call."""
        return resume(self._exchange)(until_ns, inputs)

    async def _exchange(self, until_ns: int, inputs: list[tuple[int, bytes]]) -> Exchange:
        raise NotImplementedError

    def _take(self, pending: Exchange) -> Exchange:
        out = Exchange()
        for name in ("to_host", "to_wire", "records"):
            got = getattr(pending, name)
            getattr(out, name).extend(got)
            got.clear()
        return out


class RtlNic(_RxDut):
    """roce_rx with cocotbext-axi bus models on every stream (the NP testbench; its
    pause generators give backpressure); also a (slow) loop port."""

    def __init__(self, dut, clock_ps: int = CLOCK_PS) -> None:
        self.dut = dut
        self.clock_ps = clock_ps
        self.width = len(dut.s_axis_tdata)
        Clock(dut.clk, clock_ps, unit="ps").start()
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.cnp_sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "cnp_axis"), dut.clk, dut.rst)
        for model in (self.source, self.sink, self.cnp_sink):
            model.log.setLevel(logging.WARNING)
        dut.cfg_we.value = 0
        dut.cfg_addr.value = 0
        dut.cfg_wdata.value = 0
        self.cycle = 0
        self.pending = Exchange()
        self.frames_in = 0
        cocotb.start_soon(self._tap())
        cocotb.start_soon(self._collect(self.sink, self.pending.to_host))
        cocotb.start_soon(self._collect(self.cnp_sink, self.pending.to_wire))

    async def _tap(self) -> None:
        dut = self.dut
        edge = RisingEdge(dut.clk)
        while True:
            await edge
            self.cycle += 1
            # values read at the edge are what the flops sampled: a handshake took place
            if dut.res_valid.value == 1 and dut.res_ready.value == 1:
                rec = Decoded.from_int(dut.res_data.value.to_unsigned())
                self.pending.records.append((self.cycle, self.virtual_ns(), rec))

    async def _collect(self, sink: AxiStreamSink, out: list[tuple[int, bytes]]) -> None:
        while True:
            frame = await sink.recv()
            out.append((self.virtual_ns(int(frame.sim_time_end)), bytes(frame.tdata)))

    async def _exchange(self, until_ns: int, inputs: list[tuple[int, bytes]]) -> Exchange:
        for t, frame in inputs:
            await self._until(t)
            self.source.send_nowait(AxiStreamFrame(frame))
            self.frames_in += 1
        await self._until(until_ns)
        return self._take(self.pending)


class RtlPort(_RxDut):
    """roce_rx as the loop's port, driven by one coroutine that runs per clock cycle only
    while something is in flight and sleeps (the simulator alone toggles the clock) until
    the next frame is due: a Python resume per cycle is the co-simulation's main cost.
    Outputs: with `ready` 1 always ready (the host's DMA and the MAC's CNP queue take a
    beat per cycle); below 1, both outputs' tready is high with that probability in each
    active cycle, from random.Random(`seed`) (stalls as verilog-ethernet's testbenches
    make them; repeatable). Per active cycle: one tdata write, three reads
    (s_axis_tready, res_valid, cnp_axis_tvalid), and with stalls two tready writes.
    Records: the parser emits them in frame order some cycles after each frame's last beat
    (its pipeline); the pump keeps stepping while a frame's record is in flight and pairs
    records with frames in order. A record with no frame in flight (doubled) or none
    within RECORD_DEADLINE cycles (lost) stops the loop with one FilMismatch."""

    def __init__(self, dut, clock_ps: int = CLOCK_PS, ready: float = 1.0, seed: int = 0) -> None:
        self.ready = ready
        self._rng = random.Random(seed)
        self.dut = dut
        self.clock_ps = clock_ps
        self.width = len(dut.s_axis_tdata)
        self.nbytes = self.width // 8
        Clock(dut.clk, clock_ps, unit="ps").start()
        for name, v in (
            ("cfg_we", 0),
            ("cfg_addr", 0),
            ("cfg_wdata", 0),
            ("s_axis_tvalid", 0),
            ("s_axis_tdata", 0),
            ("s_axis_tkeep", (1 << self.nbytes) - 1),
            ("s_axis_tlast", 0),
            ("m_axis_tready", 1),
            ("cnp_axis_tready", 1),
        ):
            getattr(dut, name).value = v
        self.pending = Exchange()
        self.frames_in = 0
        self.cycles_active = 0
        self._sched: deque[tuple[int, bytes]] = deque()  # (simulator ps, frame)
        self._wake = Event()
        self._error: str | None = None  # why the pump stopped (a lost or doubled record)
        cocotb.start_soon(self._pump())

    def _beats(self, frame: bytes) -> list[tuple[int, int, int]]:
        n = self.nbytes
        out = []
        for off in range(0, len(frame), n):
            chunk = frame[off : off + n]
            out.append(
                (int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, int(off + n >= len(frame)))
            )
        return out

    async def _pump(self) -> None:
        dut = self.dut
        edge = RisingEdge(dut.clk)
        s_valid, s_data, s_keep, s_last, s_ready = (
            dut.s_axis_tvalid,
            dut.s_axis_tdata,
            dut.s_axis_tkeep,
            dut.s_axis_tlast,
            dut.s_axis_tready,
        )
        c_valid, c_data, c_keep, c_last = (
            dut.cnp_axis_tvalid,
            dut.cnp_axis_tdata,
            dut.cnp_axis_tkeep,
            dut.cnp_axis_tlast,
        )
        m_ready, c_ready = dut.m_axis_tready, dut.cnp_axis_tready
        stall = self.ready < 1.0
        c_ready_now = 1  # the cnp_axis_tready the flops sample at the next edge
        r_valid, r_ready, r_data = dut.res_valid, dut.res_ready, dut.res_data
        full = (1 << self.nbytes) - 1
        beats: deque[tuple[int, int, int]] = deque()
        frame = b""  # the frame being fed
        cnp = bytearray()
        beat: tuple[int, int, int] | None = None  # the beat on s_axis now
        linger = 0  # cycles to keep stepping after the last activity (record -> CNP)
        # frames whose last beat the parser took and whose record is not out yet, oldest
        # first: [frame index, cycles since its last beat not spent waiting on res_ready]
        inflight: deque[list[int]] = deque()
        sent: dict[int, bytes] = {}  # the frames in flight and the one paired last, by index
        paired = -1  # index of the frame the last record was paired with

        def next_beat() -> tuple[int, int, int] | None:
            nonlocal frame
            if not beats:
                now = int(get_sim_time("ps"))
                if not self._sched or self._sched[0][0] > now:
                    return None
                frame = self._sched.popleft()[1]
                beats.extend(self._beats(frame))
                self.frames_in += 1
            b = beats.popleft()
            s_data.value = b[0]
            if b[2]:  # keep and last change only on a frame's last beat
                s_keep.value, s_last.value = b[1], 1
            return b

        while True:
            if beat is None and linger <= 0 and not inflight:
                if not self._sched:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                now = int(get_sim_time("ps"))
                if self._sched[0][0] > now:
                    await Timer(self._sched[0][0] - now, "ps")
                beat = next_beat()
                s_valid.value = 1
            await edge
            self.cycles_active += 1
            linger -= 1
            c_sampled = c_ready_now
            # values read at the edge are the ones the flops sampled
            if beat is not None and s_ready.value == 1:
                if beat[2]:
                    # the parser passes each beat through unchanged in the same cycle
                    # (roce_parser's data path is combinational; its TB checks every
                    # output frame byte for byte): the host gets the frame as its last
                    # beat leaves m_axis
                    self.pending.to_host.append((self.virtual_ns(), frame))
                    s_keep.value, s_last.value = full, 0
                    inflight.append([self.frames_in - 1, 0])
                    sent[self.frames_in - 1] = frame
                beat = next_beat()
                if beat is None:
                    s_valid.value = 0
            elif beat is None:  # a frame that became due while we stepped for the NP
                beat = next_beat()
                if beat is not None:
                    s_valid.value = 1
            if r_valid.value == 1:  # a record waiting on a stalled NP: keep stepping
                linger = max(linger, 2)
            rv = r_valid.value == 1
            if rv and r_ready.value == 1:
                if not inflight:
                    self._error = (
                        f"RTL record of frame {paired} offered twice (at "
                        f"{self.virtual_ns()} ns, no frame in flight)"
                    )
                    return
                rec = Decoded.from_int(r_data.value.to_unsigned())
                k = inflight[0][0]
                if rec != decode(sent[k]):  # name a doubled or lost record (else: the loop's check)
                    if paired in sent and rec == decode(sent[paired]):
                        self._error = (
                            f"RTL record of frame {paired} offered twice (at "
                            f"{self.virtual_ns()} ns, frame {k} in flight)"
                        )
                        return
                    if len(inflight) > 1 and rec == decode(sent[inflight[1][0]]):
                        self._error = (
                            f"RTL record of frame {k} lost: the next record is "
                            f"frame {inflight[1][0]}'s (at {self.virtual_ns()} ns)"
                        )
                        return
                inflight.popleft()
                sent.pop(paired, None)
                paired = k
                cycle = (int(get_sim_time("ps")) - self.s0) // self.clock_ps
                self.pending.records.append((cycle, self.virtual_ns(), rec))
                linger = 24
            elif inflight and not rv:  # the oldest frame's record is not waiting at the output
                inflight[0][1] += 1
                if inflight[0][1] > RECORD_DEADLINE:
                    self._error = (
                        f"RTL record of frame {inflight[0][0]} lost: none "
                        f"{RECORD_DEADLINE} cycles after its last beat "
                        f"(at {self.virtual_ns()} ns)"
                    )
                    return
            if stall:  # this cycle's tready on both outputs
                m_ready.value = int(self._rng.random() < self.ready)
                c_ready_now = int(self._rng.random() < self.ready)
                c_ready.value = c_ready_now
            if c_valid.value == 1:
                linger = max(linger, 2)
            if c_valid.value == 1 and c_sampled == 1:
                nb = bin(c_keep.value.to_unsigned()).count("1")
                cnp += c_data.value.to_unsigned().to_bytes(self.nbytes, "little")[:nb]
                linger = max(linger, 2)
                if c_last.value == 1:
                    self.pending.to_wire.append((self.virtual_ns(), bytes(cnp)))
                    cnp.clear()

    async def _exchange(self, until_ns: int, inputs: list[tuple[int, bytes]]) -> Exchange:
        for t, frame in inputs:
            self._sched.append((self.s0 + (t - self.v0) * 1000, frame))
        if inputs:
            self._wake.set()
        await self._until(until_ns)
        if self._error is not None:
            raise FilMismatch(self._error)
        return self._take(self.pending)
