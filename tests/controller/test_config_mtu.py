"""The MTU check counts the IP header of the family in use: 60 B of IPv4/UDP/BTH/RETH/ICRC
around the payload, 80 B with IPv6 (the frames the builder really makes, checked here)."""

from __future__ import annotations

import copy

import pytest

from controller.config import check, parse_config
from controller.packets import constants as C
from controller.packets.build import roce_frame


def cfg_with(mtu: int, v6: bool):
    ips = ("fd00::1", "fd00::2") if v6 else ("10.0.0.1", "10.0.0.2")
    data = {
        "mtu": mtu,
        "roce_mtu": 1024,
        "ports": {1: {"speed": "10G", "cable_m": 3}, 2: {"speed": "10G", "cable_m": 3}},
        "hosts": {
            "h1": {"port": 1, "mac": "02:00:00:00:00:01", "ip": ips[0]},
            "h2": {"port": 2, "mac": "02:00:00:00:00:02", "ip": ips[1]},
        },
    }
    return parse_config(copy.deepcopy(data))


def mtu_errors(mtu: int, v6: bool) -> list[str]:
    cfg, errors = cfg_with(mtu, v6)
    return [f.message for f in check(cfg, errors) if f.level == "error" and "mtu" in f.key]


@pytest.mark.parametrize(
    ("v6", "src", "dst"), [(False, "10.0.0.1", "10.0.0.2"), (True, "fd00::1", "fd00::2")]
)
def test_limit_is_the_ip_packet_the_builder_makes(v6, src, dst):
    """The largest IP packet of a 1024-byte-MTU RoCE flow (a WRITE FIRST/ONLY, RETH), by
    family: the check passes at exactly that MTU and fails one byte below."""
    frame = roce_frame(src, dst, C.RC_WRITE_ONLY, 1, 0, bytes(1024), dlen=1024)
    ip_bytes = len(frame) - 14
    assert ip_bytes == (1104 if v6 else 1084)
    assert mtu_errors(ip_bytes, v6) == []
    errs = mtu_errors(ip_bytes - 1, v6)
    assert len(errs) == 2  # one per port
    msg = errs[0]
    assert f"= {ip_bytes} B does not fit in MTU {ip_bytes - 1}" in msg
    assert ("IPv6" if v6 else "IPv4") in msg


def test_ipv6_config_with_mtu_1084_fails():
    assert mtu_errors(1084, v6=False) == []
    assert any("1104 B does not fit in MTU 1084" in m for m in mtu_errors(1084, v6=True))


def test_frame_bytes_follow_the_family():
    v4, _ = cfg_with(1500, False)
    v6, _ = cfg_with(1500, True)
    assert v6.frame_bytes - v4.frame_bytes == 20 == 40 - 20
    assert v4.frame_bytes == len(
        roce_frame("10.0.0.1", "10.0.0.2", C.RC_WRITE_ONLY, 1, 0, bytes(1024), dlen=1024)
    )
