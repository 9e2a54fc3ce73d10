"""`rocelab check` at the exact boundaries a mutation review found untested: each rule is
tested one unit on either side of its threshold. Thresholds come from the physics the
module docstrings cite (RED/DCQCN marking needs Kmin < Kmax <= queue; PFC needs XON < XOFF,
802.1Qbb headroom >= the in-flight bytes, and an egress queue that holds XOFF plus every
other ingress port's headroom; InfiniBand path MTUs are 256..4096 in powers of two)."""

from __future__ import annotations

import json

import pytest

from controller.config import check, headroom_needed, parse_config

BASE = {
    "ports": {
        1: {"speed": "10G", "cable_m": 3},
        2: {"speed": "10G", "cable_m": 3},
        3: {"speed": "10G", "cable_m": 3},
    },
    "hosts": {
        "h1": {"port": 1, "mac": "02:00:00:00:00:01", "ip": "10.0.0.1"},
        "h2": {"port": 2, "mac": "02:00:00:00:00:02", "ip": "10.0.0.2"},
    },
}


def errors(**patch) -> dict[str, str]:
    data = {**json.loads(json.dumps(BASE)), **patch}
    cfg, errs = parse_config(data)
    return {f.key: f.message for f in check(cfg, errs) if f.level == "error"}


def ecn(kmin: str, kmax: str) -> dict:
    return {
        "profiles": {"p": {"kmin": kmin, "kmax": kmax}},
        "apply": [{"ports": "all", "class": 3, "profile": "p"}],
    }


def pfc(xoff: str = "40 pkts", xon: str = "20 pkts", headroom: str = "10 pkts") -> dict:
    return {"classes": [3], "xoff": xoff, "xon": xon, "headroom": headroom}


def test_base_is_clean():
    assert errors() == {}
    assert errors(pfc=pfc(), buffer={"packets": 1024}) == {}


def test_kmin_equal_kmax_is_an_error():
    assert errors(ecn=ecn("9 pkts", "10 pkts")) == {}
    assert "ecn.profiles.p.kmin" in errors(ecn=ecn("10 pkts", "10 pkts"))


def test_kmax_may_equal_the_buffer_not_exceed_it():
    assert errors(ecn=ecn("5 pkts", "100 pkts"), buffer={"packets": 100}) == {}
    found = errors(ecn=ecn("5 pkts", "101 pkts"), buffer={"packets": 100})
    assert "exceeds the queue capacity" in found["ecn.profiles.p.kmax"]


def test_xon_equal_xoff_is_an_error():
    assert "pfc.xon" not in errors(pfc=pfc(xoff="21 pkts", xon="20 pkts"))
    assert "XON must be < XOFF" in errors(pfc=pfc(xoff="20 pkts", xon="20 pkts"))["pfc.xon"]


def test_headroom_exactly_the_need_is_enough_one_byte_less_is_not():
    need, _ = headroom_needed(10e9, 3, 1500)
    assert need == 7038  # worked in tests/controller/test_config.py
    key = "pfc.headroom (port 1, class 3)"
    assert key not in errors(pfc=pfc(headroom=f"{need}B"))
    assert "< 7.0 KB needed" in errors(pfc=pfc(headroom=f"{need - 1}B"))[key]


def test_buffer_holds_xoff_plus_headroom_of_every_other_port():
    """3 ports: the egress queue reaches XOFF (40), then the 2 other ingress ports each land
    up to their headroom (10 pkts): 40 + 2 x 10 = 60 packets."""
    assert "buffer.packets" not in errors(pfc=pfc(), buffer={"packets": 60})
    assert "60 pkts" in errors(pfc=pfc(), buffer={"packets": 59})["buffer.packets"]


@pytest.mark.parametrize("mtu", [300, 1000, 1500])
def test_roce_mtu_must_be_an_infiniband_mtu(mtu):
    assert "roce_mtu" in errors(roce_mtu=mtu)


@pytest.mark.parametrize("mtu", [256, 512, 1024])
def test_infiniband_mtus_are_accepted(mtu):
    assert errors(roce_mtu=mtu) == {}
