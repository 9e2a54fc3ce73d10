"""cocotb testbench for hdl/rtl/roce_np.v, driven through roce_rx (roce_parser -> roce_np):
frames in on s_axis, CNPs out on cnp_axis (run from tests/hdl/test_roce_np_hdl.py).

Expected values never come from this file: CNP bytes from the packet library's cnp_frame()
(and decode() must find their ICRC and IPv4 checksum right), which CE frames get a CNP
from controller.hosts.dcqcn.NotificationPoint run on the cycles the records were taken,
records from controller.packets.decode(). The TB class is controller.fil.rtl.RtlNic, the
same bus models the co-simulation uses. Knobs: RL_SEED, RL_NP_FRAMES.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame

from controller.fil.np_regs import SLOT_BASE, SLOT_STRIDE, NpConfig, QpContext
from controller.fil.rtl import RtlNic
from controller.hosts.dcqcn import NotificationPoint
from controller.packets import decode
from controller.packets.build import cnp_frame, ip_to_int, roce_frame

SEED = int(os.environ.get("RL_SEED", "4791"))
N_FRAMES = int(os.environ.get("RL_NP_FRAMES", "32"))

LOCAL_MAC, LOCAL_IP, ROUTER_MAC, CNP_DSCP = "02:00:00:00:00:03", "10.0.0.3", "02:00:00:00:00:fe", 48
LOCAL_IP6, CNP_PCP = "fd00::3", 6
QPS = (
    QpContext(0x200, 0x100, "10.0.0.1", ROUTER_MAC, 0xC123),
    QpContext(0x201, 0x101, "10.0.0.2", ROUTER_MAC, 0xC456),
)
QPS6 = (
    QpContext(0x202, 0x102, "fd00::1", ROUTER_MAC, 0xC222),
    QpContext(0x203, 0x103, "fd00::2", ROUTER_MAC, 0xC333),
)


def config(interval_cycles: int, qps: tuple[QpContext, ...] = QPS) -> NpConfig:
    return NpConfig(LOCAL_MAC, LOCAL_IP, CNP_DSCP, interval_cycles, qps, CNP_PCP, LOCAL_IP6)


def _local(q: QpContext) -> str:
    return LOCAL_IP6 if ":" in q.peer_ip else LOCAL_IP


def data(q: QpContext, psn: int, ce: bool = True, payload: int = 64, **kw: object) -> bytes:
    kw.setdefault("ecn", 3 if ce else 2)
    return roce_frame(
        q.peer_ip,
        _local(q),
        "WRITE_MIDDLE",
        q.local_qpn,
        psn,
        bytes(payload),
        eth_src=ROUTER_MAC,
        eth_dst=LOCAL_MAC,
        **kw,
    )


def expected_cnp(q: QpContext, vlan: int | None = None) -> bytes:
    """The CNP the switch program and the Python host send for a data frame of flow `q`
    (tagged with `vlan`, or untagged): same family, same VID, the CNP PCP and DSCP."""
    return cnp_frame(
        _local(q),
        q.peer_ip,
        q.peer_qpn,
        eth_src=LOCAL_MAC,
        eth_dst=q.peer_mac,
        dscp=CNP_DSCP,
        sport=q.sport,
        vlan=vlan,
        pcp=CNP_PCP if vlan is not None else 0,
    )


def pauses(rng: random.Random, p: float) -> Iterator[int]:
    while True:
        yield int(rng.random() < p)


async def start(dut, interval_cycles: int, qps: tuple[QpContext, ...] = QPS) -> RtlNic:
    tb = RtlNic(dut)
    await tb.reset()
    await tb.configure(config(interval_cycles, qps).writes())
    return tb


async def run(tb: RtlNic, frames: list[bytes], what: str) -> list[bytes]:
    """Send frames; check pass-through and records; return the CNPs, each checked by the
    decoder (a CNP, ICRC and IPv4 checksum right)."""
    for f in frames:
        await tb.source.send(AxiStreamFrame(f))
    for _ in range(40 * sum(len(f) for f in frames) // 8 + 2000):
        if len(tb.pending.to_host) == len(frames) and tb.dut.cnp_axis_tvalid.value == 0:
            break
        await RisingEdge(tb.dut.clk)
    for _ in range(50):  # a CNP decided on the last record leaves a few cycles later
        await RisingEdge(tb.dut.clk)
    got = [f for _, f in tb.pending.to_host]
    assert got == frames, f"{what}: {len(got)} frames passed through of {len(frames)} (or differ)"
    recs = [r for _, _, r in tb.pending.records]
    assert recs == [decode(f) for f in frames], f"{what}: records differ from decode()"
    cnps = [f for _, f in tb.pending.to_wire]
    for i, c in enumerate(cnps):
        r = decode(c)
        assert r.is_cnp and r.bth_becn and not (r.err_icrc or r.err_ip_csum or r.err_truncated), (
            f"{what}: CNP {i} fails the decoder: {c.hex()} {r.as_dict()}"
        )
    return cnps


@cocotb.test()
async def test_cnp_frames(dut) -> None:
    """A CNP per CE data frame of a known flow (interval 0), equal byte for byte to the
    packet library's; no CNP for ECT, unknown QP, wrong source IP, bad ICRC, CNP input."""
    tb = await start(dut, 0)
    a, b = QPS
    bad = bytearray(data(a, 9))
    bad[60] ^= 0x01  # payload bit: the ICRC no longer matches
    frames = [
        data(a, 1),
        data(b, 2),
        data(a, 3, ce=False),
        roce_frame(a.peer_ip, LOCAL_IP, "WRITE_MIDDLE", 0x2FF, 4, bytes(64), ecn=3),
        roce_frame("10.0.0.9", LOCAL_IP, "WRITE_MIDDLE", a.local_qpn, 5, bytes(64), ecn=3),
        bytes(bad),
        cnp_frame(a.peer_ip, LOCAL_IP, a.local_qpn, ecn=3),
        data(b, 6),
    ]
    cnps = await run(tb, frames, "cnp_frames")
    assert cnps == [expected_cnp(a), expected_cnp(b), expected_cnp(b)], (
        f"CNPs: {[c.hex() for c in cnps]}\nwant {expected_cnp(a).hex()}, {expected_cnp(b).hex()}"
    )
    assert tb.dut.stat_ce.value.to_unsigned() == 3
    assert tb.dut.stat_cnp.value.to_unsigned() == 3


async def rate_case(
    dut,
    what: str,
    interval: int,
    idle: float,
    cnp_bp: float,
    host_bp: float,
    payload: tuple[int, int],
) -> None:
    rng = random.Random(SEED + interval)
    qps = QPS + QPS6
    tb = await start(dut, interval, qps)
    if idle:
        tb.source.set_pause_generator(pauses(rng, idle))
    if cnp_bp:
        tb.cnp_sink.set_pause_generator(pauses(rng, cnp_bp))
    if host_bp:
        tb.sink.set_pause_generator(pauses(rng, host_bp))
    frames, flows = [], []
    for i in range(N_FRAMES):
        q = rng.choice(qps)
        ce = rng.random() < 0.8
        tag = (
            {"vlan": rng.randrange(1, 4095), "pcp": rng.randrange(8)} if rng.random() < 0.5 else {}
        )
        frames.append(data(q, i, ce=ce, payload=rng.randrange(*payload), **tag))
        flows.append(q)
    cnps = await run(tb, frames, what)
    # the oracle: the Python NP on the cycles the NP took each record
    model = NotificationPoint(interval)
    by_qpn = {q.local_qpn: q for q in qps}
    want = []
    for cycle, _t, rec in tb.pending.records:
        if rec.ecn_ce and model.on_ce((rec.ip_src, rec.bth_dqpn), cycle):
            want.append(
                expected_cnp(by_qpn[rec.bth_dqpn], rec.vlan_vid if rec.vlan_valid else None)
            )
    assert cnps == want, (
        f"{what}: {len(cnps)} CNPs, the model wants {len(want)} "
        f"(seed {SEED}, interval {interval} cycles)"
    )
    return model


@cocotb.test()
async def test_families(dut) -> None:
    """IPv6 and 802.1Q-tagged CE data (interval 0): each CNP in the data frame's family,
    with its VID and the CNP PCP, equal byte for byte to the packet library's (the Python
    host's and the switch program's CNP); no CNP across families (an IPv6 frame from an
    address whose slot is IPv4, and the other way round)."""
    a, b = QPS
    c, d = QPS6
    tb = await start(dut, 0, (a, c, d))
    tag = {"vlan": 0x123, "pcp": 3}
    frames = [
        data(c, 1),
        data(a, 2, **tag),
        data(d, 3, **tag),
        data(c, 4, ce=False, **tag),
        roce_frame("::ffff:10.0.0.1", LOCAL_IP6, "WRITE_MIDDLE", a.local_qpn, 5, bytes(64), ecn=3),
        data(b, 6),
        data(c, 7, vlan=4095, pcp=0),
    ]
    cnps = await run(tb, frames, "families")
    want = [expected_cnp(c), expected_cnp(a, 0x123), expected_cnp(d, 0x123), expected_cnp(c, 4095)]
    assert cnps == want, (
        "CNPs:\n" + "\n".join(x.hex() for x in cnps) + "\nwant\n" + "\n".join(x.hex() for x in want)
    )


@cocotb.test()
async def test_rate_limit(dut) -> None:
    """One CNP per flow per interval (interval 300 cycles, random gaps): the CNPs the RTL
    sends are exactly the ones the Python NP model sends on the same record cycles."""
    model = await rate_case(dut, "rate_limit", 300, 0.3, 0.0, 0.0, (64, 512))
    assert 0 < model.cnps_sent < model.ce_seen, "the case must both send and suppress CNPs"


@cocotb.test()
async def test_back_to_back(dut) -> None:
    """Short CE frames back to back, interval 0: a CNP for every one (the NP holds one CNP
    and stalls the parser while it sends another; nothing is lost)."""
    await rate_case(dut, "back_to_back", 0, 0.0, 0.0, 0.0, (0, 8))


@cocotb.test()
async def test_backpressure(dut) -> None:
    """Random tready on the CNP output and the host output, interval 40 cycles."""
    await rate_case(dut, "backpressure", 40, 0.0, 0.6, 0.3, (0, 300))


def slot_writes(slot: int, q: QpContext) -> list[tuple[int, int]]:
    """Rewrite one slot as a driver reusing it for another flow would (NpConfig's order)."""
    one = NpConfig(LOCAL_MAC, LOCAL_IP, CNP_DSCP, 0, (q,)).writes()
    base = SLOT_BASE + SLOT_STRIDE * slot
    return [(a - SLOT_BASE + base, v) for a, v in one if a >= SLOT_BASE]


async def until(tb: RtlNic, cond, limit: int = 20000) -> None:
    for _ in range(limit):
        if cond():
            return
        await RisingEdge(tb.dut.clk)
    raise AssertionError("timed out waiting on the DUT")


@cocotb.test()
async def test_slot_reuse(dut) -> None:
    """A slot rewritten for another flow starts clean (issue 36's reuse boundary): with an
    interval far longer than the test, (1) a CNP decided for the old flow and still waiting
    behind a stalled CNP leaves with the old flow's context, (2) the new flow's first CE
    frame gets a CNP at once, as the Python NP gives a flow it never saw, (3) the old flow,
    no longer in the table, gets none. Each is what controller.hosts.dcqcn.NotificationPoint
    answers for the same records, with the slot's flow as its key."""
    a, b = QPS
    c = QpContext(0x2A0, 0x1A0, "10.0.0.7", ROUTER_MAC, 0xC789)
    tb = await start(dut, 1 << 30)
    tb.cnp_sink.pause = True  # CNP for a stalls in flight; b's is decided and waits
    for i, q in enumerate((a, b)):
        await tb.source.send(AxiStreamFrame(data(q, i)))
    await until(tb, lambda: len(tb.pending.records) == 2)
    await tb.configure(slot_writes(1, c))  # slot 1: b -> c, while b's CNP waits
    tb.cnp_sink.pause = False
    await until(tb, lambda: len(tb.pending.to_wire) == 2)
    frames = [data(c, 3), data(b, 4), data(c, 5)]
    for f in frames:
        await tb.source.send(AxiStreamFrame(f))
    await until(tb, lambda: len(tb.pending.records) == 5 and tb.dut.cnp_axis_tvalid.value == 0)
    for _ in range(200):
        await RisingEdge(tb.dut.clk)
    model = NotificationPoint(1 << 30)
    table = {0: a, 1: b}
    want = []
    for n, (cycle, _t, rec) in enumerate(tb.pending.records):
        if n == 2:
            table[1] = c
        q = next(
            (
                q
                for q in table.values()
                if (q.local_qpn, ip_to_int(q.peer_ip)) == (rec.bth_dqpn, rec.ip_src)
            ),
            None,
        )
        if q is not None and rec.ecn_ce and model.on_ce((rec.ip_src, rec.bth_dqpn), cycle):
            want.append(expected_cnp(q))
    cnps = [f for _, f in tb.pending.to_wire]
    names = {expected_cnp(q): n for n, q in (("a", a), ("b", b), ("c", c))}
    assert [names.get(f, f.hex()) for f in cnps] == [names[w] for w in want] == ["a", "b", "c"], (
        f"slot reuse: CNPs {[names.get(f, f.hex()) for f in cnps]}, want a, b, c"
    )
