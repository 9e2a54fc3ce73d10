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
from dataclasses import dataclass, field

import cocotb
from cocotb.clock import Clock
from cocotb.task import resume
from cocotb.triggers import RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from controller.packets import Decoded

CLOCK_PS = 6400  # 156.25 MHz


@dataclass
class Exchange:
    """What the RTL produced up to some instant: (virtual ns, frame) for the host and for
    the wire (CNPs), and (clock cycle, virtual ns, record) per parsed frame, in order."""

    to_host: list[tuple[int, bytes]] = field(default_factory=list)
    to_wire: list[tuple[int, bytes]] = field(default_factory=list)
    records: list[tuple[int, int, Decoded]] = field(default_factory=list)


class RtlNic:
    """Clock, reset, bus models and the config port around one roce_rx; nothing scenario-
    specific. Used by the NP testbench (async API) and by the loop (`exchange`)."""

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
        self.v0 = 0  # virtual ns at simulator ps s0
        self.s0 = 0
        cocotb.start_soon(self._tap())
        cocotb.start_soon(self._collect(self.sink, self.pending.to_host))
        cocotb.start_soon(self._collect(self.cnp_sink, self.pending.to_wire))

    # -- time
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

    # -- monitors
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

    # -- set-up
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
        for t, frame in inputs:
            await self._until(t)
            self.source.send_nowait(AxiStreamFrame(frame))
            self.frames_in += 1
        await self._until(until_ns)
        out = Exchange()
        for name in ("to_host", "to_wire", "records"):
            got = getattr(self.pending, name)
            getattr(out, name).extend(got)
            got.clear()
        return out
