"""The shared vectors (tests/vectors/) through whichever target --target selects.

The HDL parser and the decoder read the same vectors; here every one of them goes into
switch port IN of p4src/roce_switch.p4 under a plain L2 forwarding config (each destination
MAC -> port OUT, nothing else installed, so every frame stays in traffic class 0), and what
comes out, and what the counters say, is checked against the vector's decoded record:

- a well-formed frame (RoCE or not) leaves port OUT byte for byte as it came in, and the
  frame that came out decodes to the vector's expected record;
- MAC control frames (EtherType 0x8808: PFC, PAUSE, any other opcode) are link-local and
  consumed: nothing comes out, pfc_rx counts one per enabled class on port IN, pause_rx one
  per PAUSE;
- an IPv4 header with a bad checksum is dropped and counted as such;
- every other malformed frame either leaves unchanged or is dropped as malformed or for its
  checksum, and the drop counter accounts for every frame that did not come out;
- roce_rx on port IN and roce_tx on port OUT agree, and count every well-formed frame the
  decoder calls RoCE.
"""

from __future__ import annotations

import pytest

from controller.packets import decode
from controller.packets.vectors import Vector, load
from controller.targets import DefaultAction, Exact, TableEntry
from controller.testing.dataplane import SENTINEL_MAC, Exchange, mac_int

VECTORS = load()
PFC_MAC = 0x0180C2000001
DROP_MAC_CONTROL, DROP_MALFORMED, DROP_BAD_CHECKSUM = 7, 8, 9
WELL_FORMED = ("ok", "not_roce")
ETH_P_MAC_CONTROL = 0x8808


def mac_control(v: Vector) -> bool:
    """A complete MAC control frame (a truncated one counts as malformed)."""
    return v.expected.get("ethertype") == ETH_P_MAC_CONTROL and v.verdict != "truncated"


def l2_config(out_port: int) -> list:
    """Every vector's destination MAC (and the sentinel's) -> out_port; CNPs stay in class 0
    too (the program's default puts them in class 6), so the egress queue is one FIFO."""
    macs = {v.expected.get("eth_dst", 0) for v in VECTORS} - {PFC_MAC}
    macs.add(mac_int(SENTINEL_MAC))
    return [DefaultAction("cnp_config", "set_cnp_config",
                          {"cnp_tc": 0, "np_enable": 0, "interval_us": 50, "cnp_dscp": 48})] + [
        TableEntry("l2_fwd", {"hdr.ethernet.dst": Exact(m)}, "l2_forward", {"port": out_port})
        for m in sorted(macs)]


def cells(counters: dict[str, list[tuple[int, int]]], name: str) -> list[tuple[int, int]]:
    hits = [v for k, v in counters.items() if k == name or k.endswith("." + name)]
    assert len(hits) == 1, f"counter {name} not in the program ({sorted(counters)})"
    return hits[0]


def port_sum(counters, name: str, port: int, width: int = 8) -> int:
    return sum(p for p, _ in cells(counters, name)[port * width:(port + 1) * width])


@pytest.fixture
def run_vectors(target, target_ports):
    """Send every vector through `target`; returns (port IN, port OUT, outputs, counters)."""
    port_in, port_out = target_ports[0], target_ports[1]
    target.write(l2_config(port_out))
    ex = Exchange(target, port_out)
    outputs: dict[str, list] = {}
    for v in VECTORS:
        outputs[v.name] = ex.send(port_in, v.frame)
    return port_in, port_out, outputs, target.counters()


def _describe(v: Vector) -> str:
    return f"{v.name} ({v.verdict}: {v.description})"


def test_every_vector_through_the_switch(run_vectors):
    port_in, port_out, outputs, counters = run_vectors
    problems: list[str] = []
    forwarded: list[Vector] = []
    for v in VECTORS:
        out = outputs[v.name]
        if len(out) > 1:
            problems.append(f"{_describe(v)}: {len(out)} frames came out, expected at most one")
            continue
        if mac_control(v) or v.verdict == "bad_ip_csum":
            if out:
                problems.append(f"{_describe(v)}: came out on port {out[0].port}, expected "
                                "to be consumed/dropped")
        elif v.verdict in WELL_FORMED:
            if not out:
                problems.append(f"{_describe(v)}: dropped, expected on port {port_out}")
                continue
            pkt = out[0]
            if pkt.port != port_out or pkt.data != v.frame:
                problems.append(f"{_describe(v)}: came out on port {pkt.port} "
                                f"{'changed' if pkt.data != v.frame else 'unchanged'}, "
                                f"expected unchanged on port {port_out}")
                continue
            got = decode(pkt.data).as_dict()
            diff = {k: (got[k], e) for k, e in v.expected.items() if got.get(k) != e}
            if diff:
                problems.append(f"{_describe(v)}: output decodes differently {diff}")
            forwarded.append(v)
        else:  # malformed: unchanged or dropped, never altered or misdirected
            if out:
                if out[0].port != port_out or out[0].data != v.frame:
                    problems.append(f"{_describe(v)}: came out altered or on port {out[0].port}")
                else:
                    forwarded.append(v)
    assert not problems, "\n".join(problems)

    # Counters: consumed MAC-control frames, drops by reason, RoCE in and out.
    pfc = [v for v in VECTORS if v.verdict == "pfc"]
    enabled = sum(bin(v.expected.get("pfc_cev", 0) & 0xFF).count("1") for v in pfc)
    assert port_sum(counters, "pfc_rx", port_in) == enabled
    assert cells(counters, "pause_rx")[port_in][0] == sum(v.verdict == "pause" for v in VECTORS)

    drops = cells(counters, "drops")[port_in * 16:(port_in + 1) * 16]
    not_out = [v for v in VECTORS if not outputs[v.name]]
    bad_csum = sum(v.verdict == "bad_ip_csum" for v in VECTORS)
    mac_ctrl = sum(mac_control(v) for v in VECTORS)
    assert drops[DROP_BAD_CHECKSUM][0] >= bad_csum
    assert drops[DROP_MAC_CONTROL][0] == mac_ctrl
    reasons = {i for i, (p, _) in enumerate(drops) if p}
    assert reasons <= {DROP_MAC_CONTROL, DROP_MALFORMED, DROP_BAD_CHECKSUM}, reasons
    assert sum(p for p, _ in drops) == len(not_out), (
        f"{len(not_out)} frames did not come out, drop counter says "
        f"{[(i, p) for i, (p, _) in enumerate(drops) if p]}")

    # Only forwarded frames reach the RoCE counters (every drop above happens before them).
    # On well-formed frames the program's idea of "RoCE" must match the decoder's; a switch
    # parser does not check IP versions or lengths, so a malformed frame it forwards may count
    # either way.
    rx, tx = port_sum(counters, "roce_rx", port_in), port_sum(counters, "roce_tx", port_out)
    assert rx == tx
    clean = sum(decode(v.frame).is_roce for v in forwarded if v.verdict in WELL_FORMED)
    malformed_out = sum(v.verdict not in WELL_FORMED for v in forwarded)
    assert clean <= rx <= clean + malformed_out, (rx, clean, malformed_out)
    assert clean == sum(v.verdict == "ok" for v in VECTORS)


def test_roce_counters_by_class_and_bytes(target, target_ports):
    """RoCE data counted per traffic class (DSCP 26 -> class 3 once mapped) and in bytes."""
    port_in, port_out = target_ports[0], target_ports[1]
    ok = [v for v in VECTORS if v.verdict == "ok" and "rocev2" in v.tags
          and "vlan" not in v.tags and "cnp" not in v.tags][:8]
    assert ok, "the shared vectors have RoCEv2 frames"
    target.write(l2_config(port_out))
    dscps = {v.expected["dscp"] for v in ok}
    target.write([TableEntry("dscp_to_tc", {"meta.dscp": Exact(d)}, "set_tc_from_dscp",
                             {"tc": 3}) for d in sorted(dscps)])
    ex = Exchange(target, port_out)
    for v in ok:
        out = ex.send(port_in, v.frame)
        assert [o.port for o in out] == [port_out], _describe(v)
    counters = target.counters()
    rx = cells(counters, "roce_rx")
    tx = cells(counters, "roce_tx")
    assert rx[port_in * 8 + 3] == (len(ok), sum(len(v.frame) for v in ok))
    assert tx[port_out * 8 + 3][0] == len(ok)
    assert port_sum(counters, "roce_rx", port_in) == len(ok)  # nothing in other classes
