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

On targets behind real interfaces, a frame shorter than an Ethernet header (trunc_eth,
9 bytes) cannot be transmitted at all (the kernel refuses it) and one that ends inside its
802.1Q tag (trunc_vlan) is dropped by the receiving kernel, so both are left out there; a
NIC may pad a runt frame to 60 bytes, so the padded form is accepted as "unchanged".
"""

from __future__ import annotations

import pytest

from controller.packets import decode
from controller.packets.build import pad_frame
from controller.packets.vectors import Vector, load
from controller.targets import DefaultAction, Exact, TableEntry
from controller.testing.dataplane import SENTINEL_MAC, Exchange, mac_int, port_cells

VECTORS = load()
PFC_MAC = 0x0180C2000001
DROP_MAC_CONTROL, DROP_MALFORMED, DROP_BAD_CHECKSUM = 7, 8, 9
WELL_FORMED = ("ok", "not_roce")
ETH_HLEN = 14
ETH_P_MAC_CONTROL = 0x8808


def mac_control(v: Vector) -> bool:
    """A complete MAC control frame (a truncated one counts as malformed)."""
    return v.expected.get("ethertype") == ETH_P_MAC_CONTROL and v.verdict != "truncated"


def l2_config(out_port: int) -> list:
    """Every vector's destination MAC (and the sentinel's) -> out_port; CNPs stay in class 0
    too (the program's default puts them in class 6), so the egress queue is one FIFO."""
    macs = {v.expected.get("eth_dst", 0) for v in VECTORS} - {PFC_MAC}
    macs.add(mac_int(SENTINEL_MAC))
    return [
        DefaultAction(
            "cnp_config",
            "set_cnp_config",
            {"cnp_tc": 0, "np_enable": 0, "interval_us": 50, "cnp_dscp": 48},
        )
    ] + [
        TableEntry("l2_fwd", {"hdr.ethernet.dst": Exact(m)}, "l2_forward", {"port": out_port})
        for m in sorted(macs)
    ]


def port_sum(target, name: str, port: int, width: int = 8) -> int:
    return sum(p for p, _ in port_cells(target, name, port, width))


def tagged(v: Vector) -> bool:
    return bool(v.expected.get("vlan_valid")) or "vlan" in v.tags


@pytest.fixture(params=["untagged", "vlan_tagged"])
def run_vectors(request, target, target_ports):
    """Send one group of vectors through `target`; returns (port IN, port OUT, outputs,
    target). Two groups, so a target (or a port) that mishandles VLAN tags fails only that
    group: the kernel moves tags out of received frames, and an AF_PACKET reader must put
    them back from PACKET_AUXDATA as libpcap does."""
    port_in, port_out = target_ports[0], target_ports[1]
    target.write(l2_config(port_out))
    ex = Exchange(target, port_out)
    outputs: dict[str, list] = {}
    for v in sendable(target):
        if tagged(v) == (request.param == "vlan_tagged"):
            outputs[v.name] = ex.send(port_in, v.frame)
    return port_in, port_out, outputs, target


def sendable(target) -> list[Vector]:
    """Every vector, less those no Linux link can carry: shorter than an Ethernet header (the
    sender's kernel refuses them), or ending inside an 802.1Q tag (the receiving kernel
    drops them while untagging, before any packet socket sees them)."""
    if target.virtual_time:
        return VECTORS
    return [
        v
        for v in VECTORS
        if len(v.frame) >= ETH_HLEN
        and not (v.frame[12:14] == b"\x81\x00" and len(v.frame) < ETH_HLEN + 4)
    ]


def same_frame(sent: bytes, got: bytes) -> bool:
    return got == sent or (len(sent) < 60 and got == pad_frame(sent))


def _describe(v: Vector) -> str:
    return f"{v.name} ({v.verdict}: {v.description})"


def test_every_vector_through_the_switch(run_vectors):
    port_in, port_out, outputs, target = run_vectors
    problems: list[str] = []
    forwarded: list[Vector] = []
    sent = [v for v in VECTORS if v.name in outputs]
    for v in sent:
        out = outputs[v.name]
        if len(out) > 1:
            problems.append(f"{_describe(v)}: {len(out)} frames came out, expected at most one")
            continue
        if mac_control(v) or v.verdict == "bad_ip_csum":
            if out:
                problems.append(
                    f"{_describe(v)}: came out on port {out[0].port}, expected "
                    "to be consumed/dropped"
                )
        elif v.verdict in WELL_FORMED:
            if not out:
                problems.append(f"{_describe(v)}: dropped, expected on port {port_out}")
                continue
            pkt = out[0]
            if pkt.port != port_out or pkt.data != v.frame:
                problems.append(
                    f"{_describe(v)}: came out on port {pkt.port} "
                    f"{'changed' if pkt.data != v.frame else 'unchanged'}, "
                    f"expected unchanged on port {port_out}"
                )
                continue
            got = decode(pkt.data).as_dict()
            diff = {k: (got[k], e) for k, e in v.expected.items() if got.get(k) != e}
            if diff:
                problems.append(f"{_describe(v)}: output decodes differently {diff}")
            forwarded.append(v)
        else:  # malformed: unchanged or dropped, never altered or misdirected
            if out:
                if out[0].port != port_out or not same_frame(v.frame, out[0].data):
                    problems.append(f"{_describe(v)}: came out altered or on port {out[0].port}")
                else:
                    forwarded.append(v)
    assert not problems, "\n".join(problems)

    # Counters: consumed MAC-control frames, drops by reason, RoCE in and out.
    pfc = [v for v in sent if v.verdict == "pfc"]
    enabled = sum(bin(v.expected.get("pfc_cev", 0) & 0xFF).count("1") for v in pfc)
    assert port_sum(target, "pfc_rx", port_in) == enabled
    assert port_cells(target, "pause_rx", port_in, 1)[0][0] == sum(
        v.verdict == "pause" for v in sent
    )

    drops = port_cells(target, "drops", port_in, 16)
    not_out = [v for v in sent if not outputs[v.name]]
    bad_csum = sum(v.verdict == "bad_ip_csum" for v in sent)
    mac_ctrl = sum(mac_control(v) for v in sent)
    assert drops[DROP_BAD_CHECKSUM][0] >= bad_csum
    assert drops[DROP_MAC_CONTROL][0] == mac_ctrl
    reasons = {i for i, (p, _) in enumerate(drops) if p}
    assert reasons <= {DROP_MAC_CONTROL, DROP_MALFORMED, DROP_BAD_CHECKSUM}, reasons
    assert sum(p for p, _ in drops) == len(not_out), (
        f"{len(not_out)} frames did not come out, drop counter says "
        f"{[(i, p) for i, (p, _) in enumerate(drops) if p]}"
    )

    # Only forwarded frames reach the RoCE counters (every drop above happens before them).
    # On well-formed frames the program's idea of "RoCE" must match the decoder's; a switch
    # parser does not check IP versions or lengths, so a malformed frame it forwards may count
    # either way.
    rx, tx = port_sum(target, "roce_rx", port_in), port_sum(target, "roce_tx", port_out)
    assert rx == tx
    clean = sum(decode(v.frame).is_roce for v in forwarded if v.verdict in WELL_FORMED)
    malformed_out = sum(v.verdict not in WELL_FORMED for v in forwarded)
    assert clean <= rx <= clean + malformed_out, (rx, clean, malformed_out)
    assert clean == sum(v.verdict == "ok" for v in sent)
    assert sent, "the group is not empty"


def test_roce_counters_by_class_and_bytes(target, target_ports):
    """RoCE data counted per traffic class (DSCP 26 -> class 3 once mapped) and in bytes."""
    port_in, port_out = target_ports[0], target_ports[1]
    ok = [
        v
        for v in VECTORS
        if v.verdict == "ok" and "rocev2" in v.tags and "vlan" not in v.tags and "cnp" not in v.tags
    ][:8]
    assert ok, "the shared vectors have RoCEv2 frames"
    target.write(l2_config(port_out))
    dscps = {v.expected["dscp"] for v in ok}
    target.write(
        [
            TableEntry("dscp_to_tc", {"meta.dscp": Exact(d)}, "set_tc_from_dscp", {"tc": 3})
            for d in sorted(dscps)
        ]
    )
    ex = Exchange(target, port_out)
    for v in ok:
        out = ex.send(port_in, v.frame)
        assert [o.port for o in out] == [port_out], _describe(v)
    rx = port_cells(target, "roce_rx", port_in)
    tx = port_cells(target, "roce_tx", port_out)
    assert rx[3] == (len(ok), sum(len(v.frame) for v in ok))
    assert tx[3][0] == len(ok)
    assert sum(p for p, _ in rx) == len(ok)  # nothing in other classes
