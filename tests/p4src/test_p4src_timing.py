"""roce_switch.p4 behaviour that depends on time and queues, on p4sim's virtual clock.

STF has no clock, so these drive p4sim's Switch directly: the CNP interval and the PFC
refresh interval at their exact edges (timestamps are BMv2's microseconds), and ECN marking
driven by the real enq_qdepth of a slow port (no debug_qdepth override).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from p4sim.lower import load_program
from p4sim.runtime.switch import Switch
from p4sim.stf import StfRunner

ROOT = Path(__file__).resolve().parents[2]
# the STF generator's frame builders (p4src/tests is not a package)
_spec = importlib.util.spec_from_file_location("p4src_gen_stf", ROOT / "p4src" / "tests" / "gen_stf.py")
gen = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gen
_spec.loader.exec_module(gen)

US = 1_000  # ns


@pytest.fixture(scope="module")
def compiled():
    return load_program(str(ROOT / "p4src" / "roce_switch.p4"))


def _switch(compiled, setup: gen.Stf) -> Switch:
    sw = Switch(compiled)
    result = StfRunner(sw, "<setup>").run_text("\n".join(setup.lines))
    assert result.ok, result.report()
    return sw


def _send(sw: Switch, port: int, frame: bytes) -> list:
    sw.send(port, frame)
    sw.run_until_idle()
    return sw.receive()


def test_cnp_interval_edge(compiled) -> None:
    s = gen.Stf("t", "t")
    gen._np_setup(s, 50)
    sw = _switch(compiled, s)
    data = gen.roce_v2(ecn=3)
    cnp = gen.cnp_expected(data, 0x34)

    def cnps() -> list[bytes]:
        return [p.data for p in _send(sw, 1, data) if p.port == 1]

    assert cnps() == [cnp]
    sw.advance(49 * US)
    assert cnps() == [], "49 us after the last CNP: too early"
    sw.advance(1 * US)
    assert cnps() == [cnp], "exactly 50 us after the last CNP: due"
    sw.advance(10 * US)
    assert cnps() == []
    assert sw.counter_read("cnp_tx", 1 * 8 + 6)[0] == 2


def test_pfc_refresh_edge(compiled) -> None:
    s = gen.Stf("t", "t")
    gen._pfc_setup(s, xoff=5, xon=2, quanta=0xFFFF, refresh=100)
    idx = 1 * 8 + 3
    s.cmd(f"register_write pfc_occupancy {idx} 10")
    sw = _switch(compiled, s)
    data = gen.roce_v2()
    xoff = gen.pfc_frame(gen.PORT_MACS[1], 3, 0xFFFF)

    def pfc() -> list[bytes]:
        out = _send(sw, 1, data)
        assert [p.data for p in out if p.port == 2] == [data]
        return [p.data for p in out if p.port == 1]

    assert pfc() == [xoff], "crossing XOFF"
    sw.advance(99 * US)
    assert pfc() == [], "paused, 99 us after the XOFF: no refresh yet"
    sw.advance(1 * US)
    assert pfc() == [xoff], "100 us after the XOFF: refresh"
    assert sw.register_read("pfc_paused", idx) == 1
    assert sw.counter_read("pfc_tx", idx)[0] == 2


def test_ecn_follows_the_real_queue_depth(compiled) -> None:
    """A burst into a slow port: packets that saw more than Kmax queued are marked."""
    s = gen.Stf("t", "t")
    gen.l2(s, 2, gen.HOST_MAC[2])
    s.add("dscp_to_tc", {"dscp": "26"}, "set_tc_from_dscp", {"tc": 3})
    gen._ecn_profile(s, 2, 3, 2, 4, 0)  # Pmax 0: only depth > Kmax = 4 marks
    sw = _switch(compiled, s)
    sw.tm.set_port_rate(2, pps=1000)
    burst = [gen.roce_v2(psn=i, ecn=2) for i in range(10)]
    for f in burst:
        sw.send(1, f)
    sw.run_until_idle()
    out = [p.data for p in sw.receive() if p.port == 2]
    assert len(out) == 10
    marked = [f != orig for f, orig in zip(out, burst, strict=True)]
    for f, orig, m in zip(out, burst, marked, strict=True):
        assert f == (gen.rewrite(orig, ecn=3) if m else orig)
    # virtual time makes this exact: packet 0 leaves at once (idle port), so packet i sees
    # enq_qdepth = i - 1 (BMv2: the queue's size before the push) for i >= 1. Depths 0..4
    # pass; packet 6 is the first to see 5 > Kmax queued, and every later one sees more.
    assert marked == [False] * 6 + [True] * 4, marked
    assert sw.counter_read("ecn_marked", 2 * 8 + 3)[0] == sum(marked)
