"""roce_switch.p4 behaviour that depends on time and queues, on p4sim's virtual clock.

STF has no clock, so these drive p4sim's Switch directly: the CNP interval and the PFC
refresh interval at their exact edges (timestamps are BMv2's microseconds), PFC XON from the
real deq_qdepth of a slow port, and ECN marking driven by the real enq_qdepth of a slow port
(no debug_qdepth override).
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
_spec = importlib.util.spec_from_file_location(
    "p4src_gen_stf", ROOT / "p4src" / "tests" / "gen_stf.py"
)
gen = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gen
_spec.loader.exec_module(gen)

US = 1_000  # ns


@pytest.fixture(scope="module")
def compiled():
    return load_program(str(ROOT / "p4src" / "roce_switch.p4"))


def _switch(compiled, setup: gen.Stf) -> Switch:
    sw = Switch(compiled)
    result = StfRunner(sw, "<setup>", strict=True).run_text("\n".join(setup.lines))
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


def _pfc_queue(compiled, refresh_us: int, burst: int) -> tuple[Switch, bytes, list]:
    """Port 2 serves 100 packets/s (10 ms each); `burst` class-3 packets at t = 0: the first
    leaves at once, the rest wait, so port 2's queue holds burst - 1 packets."""
    s = gen.Stf("t", "t")
    gen._pfc_setup(s, xoff=5, xon=2, quanta=0xFFFF, refresh=refresh_us)
    sw = _switch(compiled, s)
    sw.tm.set_port_rate(2, pps=100)
    for i in range(burst):
        sw.send(1, gen.roce_v2(psn=i))
    return sw, gen.pfc_frame(gen.PORT_MACS[1], 3, 0xFFFF), sw.receive()


def test_pfc_refresh_edge(compiled) -> None:
    """Refresh on arrival at its exact edge, with the pause caused by a real queue."""
    sw, xoff, out = _pfc_queue(compiled, 100, 6)
    # packet 1 leaves at once (depth 0 written back), packets 2..6 queue: depth 1..5, XOFF at 5
    assert [p.data for p in out if p.port == 1] == [xoff], "crossing XOFF (5 queued)"
    assert sw.tm.depth(2, 3) == 5
    idx = 1 * 8 + 3

    def pfc() -> list[bytes]:
        sw.send(1, gen.roce_v2(psn=99))
        return [p.data for p in sw.receive() if p.port == 1]

    sw.advance(99 * US)
    assert pfc() == [], "paused, 99 us after the XOFF: no refresh yet"
    sw.advance(1 * US)
    assert pfc() == [xoff], "100 us after the XOFF: refresh"
    assert sw.register_read("pfc_paused", idx) == 1
    assert sw.counter_read("pfc_tx", idx)[0] == 2
    # 10 ms: packet 2 leaves with 6 still queued (>= XON): the departure refreshes too
    sw.advance(10_000 * US - 100 * US)
    out = sw.receive()
    assert [p.port for p in out].count(2) == 1
    assert [p.data for p in out if p.port == 1] == [xoff], "departure at depth 6 >= XON: refresh"


@pytest.mark.parametrize("refresh_us, due", [(10_000, True), (10_001, False)])
def test_pfc_refresh_on_departure_edge(compiled, refresh_us: int, due: bool) -> None:
    """XOFF at t = 0; the first departure from the queue is at exactly 10 000 us."""
    sw, xoff, out = _pfc_queue(compiled, refresh_us, 6)
    assert [p.data for p in out if p.port == 1] == [xoff]
    sw.advance(10_000 * US)
    out = sw.receive()
    assert [p.port for p in out].count(2) == 1 and sw.tm.depth(2, 3) == 4
    assert [p.data for p in out if p.port == 1] == ([xoff] if due else [])


def test_pfc_xon_when_the_real_queue_falls_below_xon(compiled) -> None:
    """XON at the departure that leaves fewer than XON (2) packets queued, not one earlier."""
    sw, xoff, out = _pfc_queue(compiled, 10**12, 6)
    assert [p.data for p in out if p.port == 1] == [xoff]
    xon = gen.pfc_frame(gen.PORT_MACS[1], 3, 0)
    seen = []
    for _ in range(5):
        sw.advance(10_000 * US)
        seen.append((sw.tm.depth(2, 3), [p.data for p in sw.receive() if p.port == 1]))
    assert seen == [(4, []), (3, []), (2, []), (1, [xon]), (0, [])], seen
    assert sw.register_read("pfc_paused", 1 * 8 + 3) == 0


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


def test_pfc_refresh_on_departure_is_an_xoff_even_after_an_ingress_xon(compiled) -> None:
    """Mutant P15 (refresh on departure keeps the quanta ingress left in the metadata): a
    packet whose arrival sent an XON (quanta 0) departs while the queue is paused again;
    its refresh is a full XOFF (802.1Qbb: a refresh repeats the pause time), never an XON."""
    s = gen.Stf("t", "t")
    gen._pfc_setup(s, xoff=5, xon=2, quanta=0xFFFF, refresh=10_000)
    sw = _switch(compiled, s)
    sw.tm.set_port_rate(2, pps=100)  # 10 ms per packet
    idx = 1 * 8 + 3
    xoff = gen.pfc_frame(gen.PORT_MACS[1], 3, 0xFFFF)
    xon = gen.pfc_frame(gen.PORT_MACS[1], 3, 0)
    sw.send(1, gen.roce_v2(psn=0))  # Z: leaves at once, port 2 busy 10 ms
    assert [p.data for p in sw.receive() if p.port == 1] == []
    # the sender is marked paused by port 2's queue, which is empty: A's arrival XONs it
    sw.register_write("pfc_paused", idx, 1)
    sw.register_write("pfc_cause", idx, 2)
    sw.send(1, gen.roce_v2(psn=1))  # A: depth 1 < XON, queued behind Z
    assert [p.data for p in sw.receive() if p.port == 1] == [xon]
    for i in range(2, 6):  # B..E: depths 2..5, XOFF at 5
        sw.send(1, gen.roce_v2(psn=i))
    assert [p.data for p in sw.receive() if p.port == 1] == [xoff]
    assert sw.tm.depth(2, 3) == 5
    # 10 ms: A leaves, 4 still queued (>= XON) and the refresh (10 ms) is due
    sw.advance(10_000 * US)
    out = sw.receive()
    assert [p.port for p in out].count(2) == 1
    assert [p.data for p in out if p.port == 1] == [xoff]
    assert sw.register_read("pfc_paused", idx) == 1
