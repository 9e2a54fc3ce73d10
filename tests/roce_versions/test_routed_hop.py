"""RoCEv1 next to RoCEv2 across a routed hop (issue 9): the same RDMA WRITE, two versions.

Two hosts in two subnets hang off two switch ports; the switch is a router, programmed
from the declarative config (`controller.config`, what `rocelab apply` reads). The hosts
are the controller's host models (`controller.hosts.host.Host`: RC QPs, NIC), driven by
the engine that suits the target's clock (`controller.scenarios.engine.engine_for`); the
two runs differ only in `HostSpec.roce_version`.

- RoCEv2: the WRITE (FIRST/MIDDLE/LAST) reaches the responder routed (TTL/hop limit - 1,
  MACs rewritten from the next hop, ICRC still valid because TTL is masked), its ACK
  comes back routed, and the requester completes the work request.
- RoCEv1: every frame is dropped at the router MAC (drop reason 6) and counted in
  `rocev1_rx` of the ingress port; nothing reaches the other subnet, no ACK returns, and
  the requester's retransmit timer fires and resends the whole window (go-back-N).
- Control: bridged on one L2 segment (same subnet), RoCEv1 arrives like RoCEv2.

Runs on every target the plugin offers (`--target p4sim`, `--target p4sim-grpc`, ...):
time is the target's (virtual in-process, wall clock elsewhere), counters are read back
through the target.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import Compiled, apply_config, check, load_config
from controller.hosts.host import Host, HostSpec
from controller.hosts.rc import ACCESS_REMOTE_WRITE, WRITE, Pdu
from controller.packets import constants as C
from controller.packets import decode, verify_icrc
from controller.scenarios.engine import Engine, RealtimeEngine, engine_for
from controller.targets import CounterQuery, Target

MTU = 256  # RoCE path MTU: a 3 * MTU WRITE is FIRST, MIDDLE, LAST
WRITE_LEN = 3 * MTU
VA, RKEY = 0x7F00_0000_1000, 0x1234
QPN_A, QPN_B = 0x0A1, 0x0B2
DSCP, TC = 26, 3  # data class: the config maps DSCP 26 (also the GRH's) to class 3
TIMEOUT_NS = 200_000_000  # retransmit timer: ample for a wall-clock round trip under load
PROP_NS = 100_000  # link delay: also the virtual engine's step (its lookahead)
DROP_NO_ROUTE, DROP_TTL, DROP_ROCEV1_TO_ROUTER = 1, 2, 6  # p4src/README.md "Drop reasons"

ROUTER_MAC = "02:00:00:00:00:fe"
PORT_MAC = "02:00:00:00:ff:{:02x}"
MAC_A, MAC_B = "02:00:00:00:0a:01", "02:00:00:00:0b:01"
# Two subnets per address family (routed), and one subnet for the bridged control.
ROUTED = {4: ("10.0.1.1", "10.0.2.1"), 6: ("2001:db8:1::1", "2001:db8:2::1")}
BRIDGED = ("10.0.1.1", "10.0.1.2")


# ---------------------------------------------------------------- the hosts


class Endpoint:
    """A Host with one RC QP on a switch port, every frame it sends and receives on record."""

    def __init__(
        self,
        engine: Engine | RealtimeEngine,
        port: int,
        mac: str,
        ip: str,
        peer: tuple[str, str],
        gateway_mac: str | None,
        version: int,
        qpn: int,
        peer_qpn: int,
    ):
        spec = HostSpec(
            f"p{port}",
            mac,
            ip,
            port,
            mtu=MTU,
            dscp=DSCP,
            timeout_ns=TIMEOUT_NS,
            gateway_mac=gateway_mac,
            roce_version=version,
        )
        self.host = Host(spec, engine)
        self.qpn = qpn
        self.qp = self.host.add_qp(qpn, peer_qpn, peer[0], peer[1])
        engine.attach(self.host, port, PROP_NS)
        self.sent: list[bytes] = []
        self.received: list[bytes] = []
        tx, rx = self.host.transmit, self.host.receive

        def transmit(frame: bytes, t_end: int) -> None:
            self.sent.append(frame)
            tx(frame, t_end)

        def receive(frame: bytes) -> None:
            self.received.append(frame)
            rx(frame)

        self.host.transmit, self.host.receive = transmit, receive


def pair(
    target: Target, a: int, b: int, ips: tuple[str, str], version: int, routed: bool
) -> tuple[Engine | RealtimeEngine, Endpoint, Endpoint]:
    """Requester on port a, responder on port b; routed hosts send to the router MAC."""
    eng = engine_for(target)
    gw = ROUTER_MAC if routed else None
    req = Endpoint(eng, a, MAC_A, ips[0], (ips[1], MAC_B), gw, version, QPN_A, QPN_B)
    rsp = Endpoint(eng, b, MAC_B, ips[1], (ips[0], MAC_A), gw, version, QPN_B, QPN_A)
    rsp.host.register_mr(VA, WRITE_LEN, RKEY, ACCESS_REMOTE_WRITE)  # the WRITE's target
    req.host.post(QPN_A, WRITE, WRITE_LEN, VA, RKEY)
    return eng, req, rsp


def run(target: Target, eng: Engine | RealtimeEngine, done, limit_ns: int = 4 * TIMEOUT_NS) -> None:
    if not eng.run_until(done, limit_ns):
        raise AssertionError(
            f"{target.name}: exchange not done within {limit_ns / 1e6:.0f} ms"
            f"; {eng.switch_tx} frames emitted"
        )


# ---------------------------------------------------------------- config and counters


def configure(
    target: Target, tmp_path: Path, routing: str, a: int, b: int, ips: tuple[str, str]
) -> Compiled:
    """Program the switch the way `rocelab check` and `rocelab apply` do: a YAML file,
    loaded, checked, applied."""
    text = f"""\
routing: {routing}
router_mac: "{ROUTER_MAC}"
roce_mtu: {MTU}
ports:
  {a}: {{speed: 10G, mac: "{PORT_MAC.format(a)}"}}
  {b}: {{speed: 10G, mac: "{PORT_MAC.format(b)}"}}
hosts:
  ha: {{port: {a}, mac: "{MAC_A}", ip: "{ips[0]}"}}
  hb: {{port: {b}, mac: "{MAC_B}", ip: "{ips[1]}"}}
classes: {{dscp: {{{DSCP}: {TC}}}}}
"""
    path = tmp_path / f"{routing}.yaml"
    path.write_text(text)
    cfg = load_config(path)
    assert [f for f in check(cfg) if f.level == "error"] == []  # what `rocelab check` says
    return apply_config(cfg, target)


def cell(target: Target, name: str, index: int) -> tuple[int, int]:
    got = target.read(CounterQuery(name, index))
    return (got[0].packets, got[0].bytes) if got else (0, 0)


def settle(
    target: Target, name: str, index: int, packets: int, limit_ns: int = 2_000_000_000
) -> tuple[int, int]:
    """The cell once it counts `packets` (a wall-clock switch may still be busy with the
    last frames sent), or as it is when `limit_ns` ran out."""
    waited = 0
    while (got := cell(target, name, index))[0] < packets and waited < limit_ns:
        target.advance(1_000_000)
        waited += 1_000_000
    return got


def nbytes(frames: list[bytes]) -> int:
    return sum(len(f) for f in frames)


def roce(frames: list[bytes]) -> list[bytes]:
    return [f for f in frames if decode(f).is_roce]


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("family", [4, 6], ids=["ipv4", "ipv6"])
def test_routed_hop_rocev2_arrives_rocev1_does_not(target, target_ports, tmp_path, family):
    a, b = target_ports[0], target_ports[1]
    configure(target, tmp_path, "l3", a, b, ROUTED[family])  # two subnets: only the router

    # ---- RoCEv2: routed there and back
    eng, req, rsp = pair(target, a, b, ROUTED[family], 2, routed=True)
    requester, responder = req.qp.requester, rsp.qp.responder
    run(target, eng, lambda: requester.idle)

    writes = req.sent
    pdus = [
        Pdu(C.RC_WRITE_FIRST, QPN_B, 0, False, MTU, (VA, RKEY, WRITE_LEN)),
        Pdu(C.RC_WRITE_MIDDLE, QPN_B, 1, False, MTU),
        Pdu(C.RC_WRITE_LAST, QPN_B, 2, True, MTU),
    ]
    assert writes == [req.host.frame(QPN_A, p) for p in pdus]  # FIRST, MIDDLE, LAST
    assert [decode(f).bth_opcode for f in rsp.sent] == [C.RC_ACK]
    # Routed: exactly the sent frames with the next hop's MACs and TTL/hop limit 63; the
    # builder recomputes the IPv4 checksum, and the ICRC does not change (TTL is masked).
    expect_b = [
        req.host.frame(QPN_A, p, eth_src=PORT_MAC.format(b), eth_dst=MAC_B, ttl=63) for p in pdus
    ]
    assert roce(rsp.received) == expect_b and rsp.host.stats.rx_bad == 0
    for f in rsp.received:
        rec = decode(f)
        assert (rec.roce_version, rec.ip_version, rec.ttl) == (2, family, 63)
        assert verify_icrc(f) and rec.err_icrc == 0
    ack = Pdu(C.RC_ACK, QPN_A, 2, False, 0, None, (C.AETH_ACK_NO_CREDIT, 1))
    assert rsp.sent == [rsp.host.frame(QPN_B, ack)]
    assert roce(req.received) == [
        rsp.host.frame(QPN_B, ack, eth_src=PORT_MAC.format(a), eth_dst=MAC_A, ttl=63)
    ]
    assert verify_icrc(req.received[0]) and req.host.stats.rx_bad == 0
    assert responder.stats.bytes_received == WRITE_LEN
    assert responder.stats.messages == 1
    done = requester.done
    assert len(done) == 1 and done[0].completed_ns is not None
    assert requester.stats.timeouts == 0
    assert requester.stats.retransmitted_packets == 0
    # The counters agree: class 3 in on a and out on b, the ACK the other way, no RoCEv1.
    assert settle(target, "roce_rx", a * 8 + TC, 3) == (3, nbytes(writes))
    assert settle(target, "roce_tx", b * 8 + TC, 3) == (3, nbytes(expect_b))
    assert settle(target, "roce_rx", b * 8 + TC, 1) == (1, nbytes(rsp.sent))
    assert cell(target, "roce_tx", a * 8 + TC)[0] == 1
    assert cell(target, "rocev1_rx", a) == (0, 0)
    assert cell(target, "drops", a * 16 + DROP_ROCEV1_TO_ROUTER) == (0, 0)

    # ---- RoCEv1: the same WRITE on the same switch, addressed to the router MAC
    eng, req, rsp = pair(target, a, b, ROUTED[family], 1, routed=True)
    requester, responder = req.qp.requester, rsp.qp.responder
    t0 = target.now()
    # done when the resent window has reached the switch (not only left the NIC)
    run(target, eng, lambda: requester.stats.timeouts >= 1 and eng.switch_rx == 6)
    assert target.now() - t0 >= TIMEOUT_NS  # no ACK: the timer ran its full course

    sent = req.sent
    assert len(sent) == 6  # the window, then all of it again after the timeout (go-back-N)
    assert sent[3:] == sent[:3]
    for f in sent[:3]:
        rec = decode(f)
        assert (rec.roce_version, int.from_bytes(f[12:14], "big")) == (1, C.ETH_P_ROCEV1)
        assert verify_icrc(f)
    assert [decode(f).bth_opcode for f in sent[:3]] == [
        C.RC_WRITE_FIRST,
        C.RC_WRITE_MIDDLE,
        C.RC_WRITE_LAST,
    ]
    # Why: each frame counted as RoCEv1 on the ingress port and dropped as RoCEv1 to the
    # router MAC (reason 6, on the ingress port).
    assert settle(target, "drops", a * 16 + DROP_ROCEV1_TO_ROUTER, 6) == (6, nbytes(sent))
    assert cell(target, "rocev1_rx", a) == (6, nbytes(sent))
    assert [cell(target, "drops", a * 16 + r)[0] for r in (DROP_NO_ROUTE, DROP_TTL)] == [0, 0]
    assert cell(target, "roce_rx", a * 8 + TC) == (3 + 6, nbytes(writes) + nbytes(sent))
    # Nothing reached the other subnet, nothing came back.
    late = [o.data for o in target.receive() if o.port in (a, b)]
    assert roce(late + rsp.received + req.received) == []
    assert rsp.sent == [] and responder.stats.packets_received == 0
    assert cell(target, "roce_tx", b * 8 + TC) == (3, nbytes(expect_b))  # still the v2 ones
    assert cell(target, "rocev1_rx", b) == (0, 0)
    stats = requester.stats
    assert stats.timeouts == 1 and stats.retransmitted_packets == 3 and stats.naks == 0
    assert not requester.done and requester.una == 0


@pytest.mark.parametrize("version", [1, 2], ids=["rocev1", "rocev2"])
def test_bridged_segment_carries_both_versions(target, target_ports, tmp_path, version):
    """Positive control: on one L2 segment the switch bridges on the peer's MAC, and the
    same WRITE arrives unchanged and is ACKed, RoCEv1 exactly like RoCEv2."""
    a, b = target_ports[0], target_ports[1]
    configure(target, tmp_path, "l2", a, b, BRIDGED)
    eng, req, rsp = pair(target, a, b, BRIDGED, version, routed=False)
    requester = req.qp.requester
    run(target, eng, lambda: requester.idle)

    assert roce(rsp.received) == req.sent and len(req.sent) == 3  # bridged: bytes unchanged
    assert rsp.host.stats.rx_bad == 0 and req.host.stats.rx_bad == 0
    assert roce(req.received) == rsp.sent and len(rsp.sent) == 1
    assert all(decode(f).roce_version == version for f in req.sent + rsp.sent)
    assert rsp.qp.responder.stats.bytes_received == WRITE_LEN
    assert requester.stats.timeouts == 0 and len(requester.done) == 1
    assert settle(target, "roce_rx", a * 8 + TC, 3) == (3, nbytes(req.sent))
    assert settle(target, "roce_rx", b * 8 + TC, 1) == (1, nbytes(rsp.sent))
    # RoCEv1 is counted as such in both directions; RoCEv2 never is.
    v1 = version == 1
    assert cell(target, "rocev1_rx", a) == ((3, nbytes(req.sent)) if v1 else (0, 0))
    assert cell(target, "rocev1_rx", b) == ((1, nbytes(rsp.sent)) if v1 else (0, 0))
    assert cell(target, "drops", a * 16 + DROP_ROCEV1_TO_ROUTER) == (0, 0)
