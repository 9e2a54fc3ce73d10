"""v4-v6: the same RoCEv2 flow over IPv4 and IPv6."""

from __future__ import annotations

from controller.config import check, parse_config
from controller.hosts.host import ETH_OVERHEAD
from controller.hosts.rc import WRITE
from controller.testing.dataplane import port_cells

from .base import Fabric, Result, experiment, host_defs

DROP_MTU = 11  # p4src/include/headers.p4
MIB = 1 << 20


def _frame(v6: bool, mtu: int) -> int:
    """Bytes of a full MIDDLE data frame on the wire (Ethernet..ICRC + preamble/IFG)."""
    return 14 + (40 if v6 else 20) + 8 + 12 + mtu + 4 + ETH_OVERHEAD


def _mtu_findings(v6: bool, mtu: int) -> list[str]:
    hosts = host_defs(2, v6=v6)
    raw = {
        "mtu": mtu,
        "roce_mtu": 1024,
        "ports": {h.port: {"speed": "10G", "cable_m": 2} for h in hosts},
        "hosts": {h.name: {"port": h.port, "mac": h.mac, "ip": h.ip} for h in hosts},
    }
    cfg, errors = parse_config(raw, "<v4-v6>")
    return [f.message for f in check(cfg, errors) if f.level == "error"]


def _transfer(v6: bool, total: int, port_mtu: int | None, seed: int) -> dict:
    hosts = host_defs(2, v6=v6)
    switch = None
    if port_mtu is not None:
        switch = {"mtu": port_mtu, "ports": {h.port: {"speed": "10G", "cable_m": 2} for h in hosts}}
    fab = Fabric(
        hosts,
        switch=switch,
        seed=seed,
        rp_enabled=False,
        retry_cnt=2,
        timeout_ns=100_000,
        check_config=port_mtu is None,
    )
    qa, _ = fab.connect("h1", "h2")
    a = fab.hosts["h1"]
    t0 = fab.now()
    a.post(qa, WRITE, total)
    req = a.qps[qa].requester
    fab.run_until(lambda: req.idle, 50_000_000)
    wr = req.done[0]
    t = (wr.completed_ns or 0) - t0
    drops = port_cells(fab.target, "drops", 2, 16)[DROP_MTU][0]
    return {
        "family": "IPv6" if v6 else "IPv4",
        "port_mtu": port_mtu or 1500,
        "status": wr.status,
        "time_us": t / 1e3,
        "goodput_gbps": total * 8 / t if t and wr.status == "IBV_WC_SUCCESS" else 0.0,
        "mtu_drops": drops,
    }


@experiment(
    "v4-v6",
    "The same WRITE over IPv4 and IPv6: does goodput differ by exactly the header overhead, "
    "and are the MTU check and the data plane right for both families?",
    total=MIB,
    black_hole_mtu=1084,
    seed=1,
)
def v4_v6(res: Result, total: int, black_hole_mtu: int, seed: int) -> None:
    v4 = _transfer(False, total, None, seed)
    v6 = _transfer(True, total, None, seed)
    hole6 = _transfer(True, 64 * 1024, black_hole_mtu, seed)
    hole4 = _transfer(False, 64 * 1024, black_hole_mtu, seed)
    res.table = [v4, v6, hole4, hole6]
    ratio = v4["goodput_gbps"] / v6["goodput_gbps"]
    want = _frame(True, 1024) / _frame(False, 1024)
    res.check(
        "goodput differs by exactly the IPv6 header's 20 extra bytes",
        abs(ratio - want) <= 0.002 * want,
        f"IPv4/IPv6 goodput {ratio:.5f}, frame sizes predict {want:.5f} "
        f"({_frame(True, 1024)} / {_frame(False, 1024)} wire bytes per packet)",
    )
    f4, f6 = _mtu_findings(False, 1084), _mtu_findings(True, 1084)
    ok6 = _mtu_findings(True, 1104)
    res.check(
        "the MTU check: IPv4 fits 1084, IPv6 needs 1104",
        not f4 and bool(f6) and not ok6,
        f"IPv4 at 1084: {len(f4)} errors; IPv6 at 1084: {f6[0] if f6 else 'no error'}; "
        f"IPv6 at 1104: {len(ok6)} errors",
    )
    res.check(
        f"the data plane drops IPv6 frames over MTU {black_hole_mtu} (DROP_MTU)",
        hole6["mtu_drops"] > 0 and hole6["status"] == "IBV_WC_RETRY_EXC_ERR",
        f"{hole6['mtu_drops']} drops with reason {DROP_MTU}; the WRITE ends {hole6['status']}",
    )
    res.check(
        f"IPv4 frames fit MTU {black_hole_mtu}",
        hole4["mtu_drops"] == 0 and hole4["status"] == "IBV_WC_SUCCESS",
        f"{hole4['mtu_drops']} MTU drops; {hole4['status']}",
    )
    res.answer = (
        f"IPv4 {v4['goodput_gbps']:.4f} Gb/s, IPv6 {v6['goodput_gbps']:.4f} Gb/s: "
        f"ratio {ratio:.5f} = {_frame(True, 1024)}/{_frame(False, 1024)} wire bytes; "
        f"with MTU {black_hole_mtu} IPv6 is black-holed ({hole6['mtu_drops']} "
        f"DROP_MTU, {hole6['status']}), which the config check now refuses"
    )

    def plot(ax, res: Result) -> None:
        labels = [f"{r['family']} MTU {r['port_mtu']}" for r in res.table]
        ax.bar(labels, [r["goodput_gbps"] for r in res.table], color="tab:green")
        ax.set_ylabel("goodput (Gb/s)")
        for i, r in enumerate(res.table):
            ax.text(
                i,
                r["goodput_gbps"],
                f"{r['mtu_drops']} MTU drops",
                ha="center",
                va="bottom",
                fontsize=8,
            )

    res.plot = plot
