"""Bring-up rehearsal: the same loop with h3's NIC receive path on a real interface (a veth
pair; the board end in a network namespace) and a Python NP standing in for the board
(controller.fil.wire). The CNPs it sends cross the veth, re-enter the loop, pass the
loop's CNP checks and go through p4sim to the senders' RPs."""

from __future__ import annotations

import dataclasses

import pytest

from controller.fil.loop import FilLoop, FilMismatch
from controller.fil.wire import PythonNpBoard, WirePort
from controller.scenarios.scenario import load_scenario, run_once
from controller.targets import DEFAULT_PROGRAM, netns
from controller.targets.p4sim import P4SimTarget

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not netns.is_root(), reason="needs root (netns, veth, AF_PACKET)"),
]


def _run(configure, duration_us: float = 150):
    sc = load_scenario("incast-dcqcn")
    with netns.NetnsSet() as nets:
        ns = nets.add_netns(netns.name("fb"))
        outer = netns.name("fw")
        nets.add_veth(outer, "eth0", ns)
        board = PythonNpBoard("eth0", ns)
        port = WirePort(outer, driver=lambda cfg: configure(board, cfg))
        target = P4SimTarget(DEFAULT_PROGRAM, seed=1)
        loop = FilLoop(port, "h3", switch=target._sw())
        try:
            run = run_once(
                sc, target, 1, duration_us=duration_us, progress=False, nic_hook=loop.hook
            )
        finally:
            board.close()
            port.close()
            target.close()
    return run, loop, board


def test_wire_loop_with_python_np_board() -> None:
    run, loop, board = _run(lambda b, cfg: b.configure(cfg))
    st = loop.stats
    assert st.mismatches == 0 and st.records_checked == st.frames_in > 50
    assert st.cnps > 0 and board.cnps >= st.cnps
    assert {q for _t, q in st.cnp_times} == {0x100, 0x101}
    assert run.counters["host_cnps_rx"] == st.cnps  # back through p4sim to the RPs
    for f in run.flows:
        assert f.cnps > 0 and f.final_rate_bps < 0.9 * run.line_bps


def test_wire_loop_board_with_wrong_qp_fails() -> None:
    """Negative control: a board told to send CNPs to the local QP stops the run."""

    def wrong(board, cfg):
        board.configure(
            dataclasses.replace(
                cfg, qps=tuple(dataclasses.replace(q, peer_qpn=q.local_qpn) for q in cfg.qps)
            )
        )

    with pytest.raises(FilMismatch, match="more CNPs than CE frames"):
        _run(wrong, duration_us=40)
