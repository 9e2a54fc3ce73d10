"""RoCEv1 next to RoCEv2 across a routed hop (issue 9): the same RDMA WRITE, two versions.

Two hosts in two subnets hang off two switch ports; the switch is a router, programmed
from the declarative config (`controller.config`, what `rocelab apply` reads). Each host
is an RC queue pair made of the controller's own requester and responder state machines
(`controller.hosts.rc`); its frames are built by `controller.packets` and decoded with its
decoder. The full `Host` model (controller.hosts.host) cannot emit RoCEv1 (its frames are
always RoCEv2), so the NIC here is a small wrapper around the RC halves that frames with
`roce_frame(..., version=1|2)`: the two runs differ only in that argument.

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

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from controller.config import Compiled, apply_config, check, load_config
from controller.hosts.rc import REQUEST_OPCODES, WRITE, Pdu, RcRequester, RcResponder
from controller.packets import constants as C
from controller.packets import decode, roce_frame, verify_icrc
from controller.targets import CounterQuery, OutputPacket, Target

MTU = 256  # RoCE path MTU: a 3 * MTU WRITE is FIRST, MIDDLE, LAST
WRITE_LEN = 3 * MTU
VA, RKEY = 0x7F00_0000_1000, 0x1234
QPN_A, QPN_B = 0x0A1, 0x0B2
DSCP, TC = 26, 3  # data class: the config maps DSCP 26 (also the GRH's) to class 3
TIMEOUT_NS = 200_000_000  # retransmit timer: ample for a wall-clock round trip under load
STEP_NS = 100_000  # how far the loop lets time run between polls
DROP_NO_ROUTE, DROP_TTL, DROP_ROCEV1_TO_ROUTER = 1, 2, 6  # p4src/README.md "Drop reasons"

ROUTER_MAC = "02:00:00:00:00:fe"
PORT_MAC = "02:00:00:00:ff:{:02x}"
MAC_A, MAC_B = "02:00:00:00:0a:01", "02:00:00:00:0b:01"
# Two subnets per address family (routed), and one subnet for the bridged control.
ROUTED = {4: ("10.0.1.1", "10.0.2.1"), 6: ("2001:db8:1::1", "2001:db8:2::1")}
BRIDGED = ("10.0.1.1", "10.0.1.2")


# ---------------------------------------------------------------- the NIC


def payload_len(frame: bytes, rec) -> int:
    """Payload bytes of a RoCEv1/v2 frame: the IP/GRH length minus headers, pad and ICRC."""
    off = 18 if rec.vlan_valid else 14
    if rec.roce_version == 1:  # GRH payload length: BTH to ICRC inclusive
        (plen,) = struct.unpack_from("!H", frame, off + 4)
        transport = plen
    elif rec.ip_version == 4:
        (total,) = struct.unpack_from("!H", frame, off + 2)
        transport = total - (frame[off] & 0x0F) * 4 - 8
    else:
        (udp,) = struct.unpack_from("!H", frame, off + 4)
        transport = udp - 8
    ext = 16 * rec.reth_valid + 4 * rec.aeth_valid + 4 * rec.immdt_valid
    return transport - C.BTH_LEN - ext - C.ICRC_LEN - rec.bth_pad


@dataclass
class Nic:
    """One RC QP on one link: the controller's requester and responder, framed as RoCE
    `version` toward `next_hop_mac` (the router MAC when routed, the peer's when bridged)."""

    port: int
    mac: str
    ip: str
    peer_ip: str
    next_hop_mac: str
    version: int
    qpn: int
    peer_qpn: int
    requester: RcRequester = field(init=False)
    responder: RcResponder = field(init=False)
    sent: list[bytes] = field(default_factory=list)
    received: list[bytes] = field(default_factory=list)
    rx_bad: int = 0

    def __post_init__(self) -> None:
        self.requester = RcRequester(self.qpn, self.peer_qpn, MTU, window=16,
                                     timeout_ns=TIMEOUT_NS)
        self.responder = RcResponder(self.qpn, self.peer_qpn, MTU, ack_every=16)

    def frame(self, pdu: Pdu, **over: object) -> bytes:
        va, rkey, dlen = pdu.reth or (0, 0, None)
        syndrome, msn = pdu.aeth or (0, 0)
        kw: dict = dict(eth_src=self.mac, eth_dst=self.next_hop_mac, version=self.version,
                        dscp=DSCP, ecn=2, ackreq=int(pdu.ackreq), va=va, rkey=rkey,
                        dlen=dlen, syndrome=syndrome, msn=msn, sport=0xC000 | self.qpn)
        kw.update(over)
        # A recognisable payload: byte i of PSN p is (p + i) & 0xFF.
        body = bytes((pdu.psn + i) & 0xFF for i in range(pdu.payload_len))
        return roce_frame(self.ip, self.peer_ip, pdu.opcode, pdu.dqpn, pdu.psn, body, **kw)

    def transmit(self, now_ns: int) -> list[bytes]:
        """What the NIC puts on the wire now: responses first, then request data."""
        out = [self.frame(p) for p in self.responder.out]
        self.responder.out.clear()
        while (pdu := self.requester.next_pdu(now_ns)) is not None:
            out.append(self.frame(pdu))
        self.sent += out
        return out

    def receive(self, frame: bytes, now_ns: int) -> None:
        rec = decode(frame)
        if (not rec.is_roce or rec.err_icrc or rec.err_truncated or rec.err_ip_csum
                or rec.bth_dqpn != self.qpn):
            self.rx_bad += 1
            return
        self.received.append(frame)
        pdu = Pdu(rec.bth_opcode, rec.bth_dqpn, rec.bth_psn, bool(rec.bth_ackreq),
                  payload_len(frame, rec),
                  (rec.reth_va, rec.reth_rkey, rec.reth_dlen) if rec.reth_valid else None,
                  (rec.aeth_syndrome, rec.aeth_msn) if rec.aeth_valid else None,
                  rec.ecn == 3, bool(rec.bth_becn))
        if pdu.opcode in REQUEST_OPCODES:
            self.responder.on_pdu(pdu, now_ns)
        else:
            self.requester.on_pdu(pdu, now_ns)


def run(target: Target, nics: list[Nic], done: Callable[[], bool],
        limit_ns: int = 4 * TIMEOUT_NS) -> list[OutputPacket]:
    """Drive the NICs against the target until `done()`: each round fires due retransmit
    timers, sends what the NICs have, hands the target's output to the NIC on its port, and
    lets STEP_NS pass (virtual or wall clock). Returns every frame the switch emitted."""
    by_port = {n.port: n for n in nics}
    emitted: list[OutputPacket] = []
    deadline = target.now() + limit_ns
    while True:
        now = target.now()
        for nic in nics:
            nic.requester.check_timeout(now)
            for frame in nic.transmit(now):
                target.send(nic.port, frame)
        for out in target.receive():
            emitted.append(out)
            if out.port in by_port:
                by_port[out.port].receive(out.data, target.now())
        if done():
            return emitted
        if now >= deadline:
            raise AssertionError(f"{target.name}: exchange not done within "
                                 f"{limit_ns / 1e6:.0f} ms; {len(emitted)} frames emitted")
        target.advance(STEP_NS)


def post_write(nic: Nic, target: Target) -> None:
    nic.requester.post(WRITE, WRITE_LEN, target.now(), VA, RKEY)


# ---------------------------------------------------------------- config and counters


def configure(target: Target, tmp_path: Path, routing: str, a: int, b: int,
              ips: tuple[str, str]) -> Compiled:
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


def settle(target: Target, name: str, index: int, packets: int,
           limit_ns: int = 2_000_000_000) -> tuple[int, int]:
    """The cell once it counts `packets` (a wall-clock switch may still be busy with the
    last frames sent), or as it is when `limit_ns` ran out."""
    waited = 0
    while (got := cell(target, name, index))[0] < packets and waited < limit_ns:
        target.advance(1_000_000)
        waited += 1_000_000
    return got


def nbytes(frames: list[bytes]) -> int:
    return sum(len(f) for f in frames)


def roce_out(emitted: list[OutputPacket], port: int) -> list[bytes]:
    return [o.data for o in emitted if o.port == port and decode(o.data).is_roce]


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("family", [4, 6], ids=["ipv4", "ipv6"])
def test_routed_hop_rocev2_arrives_rocev1_does_not(target, target_ports, tmp_path, family):
    a, b = target_ports[0], target_ports[1]
    ip_a, ip_b = ROUTED[family]  # two subnets: only the router connects them
    configure(target, tmp_path, "l3", a, b, (ip_a, ip_b))

    # ---- RoCEv2: routed there and back
    req = Nic(a, MAC_A, ip_a, ip_b, ROUTER_MAC, 2, QPN_A, QPN_B)
    rsp = Nic(b, MAC_B, ip_b, ip_a, ROUTER_MAC, 2, QPN_B, QPN_A)
    post_write(req, target)
    emitted = run(target, [req, rsp], lambda: req.requester.idle)

    writes = req.sent
    assert [decode(f).bth_opcode for f in writes] == [
        C.RC_WRITE_FIRST, C.RC_WRITE_MIDDLE, C.RC_WRITE_LAST]
    assert [decode(f).bth_opcode for f in rsp.sent] == [C.RC_ACK]
    # Routed: exactly the sent frames with the next hop's MACs and TTL/hop limit 63; the
    # builder recomputes the IPv4 checksum, and the ICRC does not change (TTL is masked).
    pdus = [Pdu(C.RC_WRITE_FIRST, QPN_B, 0, False, MTU, (VA, RKEY, WRITE_LEN)),
            Pdu(C.RC_WRITE_MIDDLE, QPN_B, 1, False, MTU),
            Pdu(C.RC_WRITE_LAST, QPN_B, 2, True, MTU)]
    expect_b = [req.frame(p, eth_src=PORT_MAC.format(b), eth_dst=MAC_B, ttl=63) for p in pdus]
    assert roce_out(emitted, b) == expect_b
    assert rsp.received == expect_b and rsp.rx_bad == 0
    for f in rsp.received:
        rec = decode(f)
        assert (rec.roce_version, rec.ip_version, rec.ttl) == (2, family, 63)
        assert verify_icrc(f) and rec.err_icrc == 0
    ack = rsp.sent[0]
    assert roce_out(emitted, a) == [rsp.frame(
        Pdu(C.RC_ACK, QPN_A, 2, False, 0, None, (C.AETH_ACK_NO_CREDIT, 1)),
        eth_src=PORT_MAC.format(a), eth_dst=MAC_A, ttl=63)]
    assert decode(ack).aeth_msn == 1 and verify_icrc(roce_out(emitted, a)[0])
    assert rsp.responder.stats.bytes_received == WRITE_LEN
    assert rsp.responder.stats.messages == 1
    done = req.requester.done
    assert len(done) == 1 and done[0].completed_ns is not None
    assert req.requester.stats.timeouts == 0
    assert req.requester.stats.retransmitted_packets == 0
    # The counters agree: class 3 in on a and out on b, the ACK the other way, no RoCEv1.
    assert settle(target, "roce_rx", a * 8 + TC, 3) == (3, nbytes(writes))
    assert settle(target, "roce_tx", b * 8 + TC, 3) == (3, nbytes(expect_b))
    assert settle(target, "roce_rx", b * 8 + TC, 1) == (1, nbytes(rsp.sent))
    assert cell(target, "roce_tx", a * 8 + TC)[0] == 1
    assert cell(target, "rocev1_rx", a) == (0, 0)
    assert cell(target, "drops", a * 16 + DROP_ROCEV1_TO_ROUTER) == (0, 0)

    # ---- RoCEv1: the same WRITE on the same switch, addressed to the router MAC
    req = Nic(a, MAC_A, ip_a, ip_b, ROUTER_MAC, 1, QPN_A, QPN_B)
    rsp = Nic(b, MAC_B, ip_b, ip_a, ROUTER_MAC, 1, QPN_B, QPN_A)
    post_write(req, target)
    t0 = target.now()
    emitted = run(target, [req, rsp], lambda: req.requester.stats.timeouts >= 1)
    assert target.now() - t0 >= TIMEOUT_NS  # no ACK: the timer ran its full course

    sent = req.sent
    assert len(sent) == 6  # the window, then all of it again after the timeout (go-back-N)
    assert sent[3:] == sent[:3]
    for f in sent[:3]:
        rec = decode(f)
        assert (rec.roce_version, int.from_bytes(f[12:14], "big")) == (1, C.ETH_P_ROCEV1)
        assert verify_icrc(f)
    assert [decode(f).bth_opcode for f in sent[:3]] == [
        C.RC_WRITE_FIRST, C.RC_WRITE_MIDDLE, C.RC_WRITE_LAST]
    # Why: each frame counted as RoCEv1 on the ingress port and dropped as RoCEv1 to the
    # router MAC (reason 6, on the ingress port).
    assert settle(target, "drops", a * 16 + DROP_ROCEV1_TO_ROUTER, 6) == (6, nbytes(sent))
    assert cell(target, "rocev1_rx", a) == (6, nbytes(sent))
    assert [cell(target, "drops", a * 16 + r)[0] for r in (DROP_NO_ROUTE, DROP_TTL)] == [0, 0]
    assert cell(target, "roce_rx", a * 8 + TC) == (3 + 6, nbytes(writes) + nbytes(sent))
    # Nothing reached the other subnet, nothing came back.
    assert roce_out(target.receive() + emitted, b) == [] and roce_out(emitted, a) == []
    assert rsp.received == [] and rsp.sent == [] and rsp.responder.stats.packets_received == 0
    assert cell(target, "roce_tx", b * 8 + TC) == (3, nbytes(expect_b))  # still the v2 ones
    assert cell(target, "rocev1_rx", b) == (0, 0)
    stats = req.requester.stats
    assert stats.timeouts == 1 and stats.retransmitted_packets == 3 and stats.naks == 0
    assert not req.requester.done and req.requester.una == 0


@pytest.mark.parametrize("version", [1, 2], ids=["rocev1", "rocev2"])
def test_bridged_segment_carries_both_versions(target, target_ports, tmp_path, version):
    """Positive control: on one L2 segment the switch bridges on the peer's MAC, and the
    same WRITE arrives unchanged and is ACKed, RoCEv1 exactly like RoCEv2."""
    a, b = target_ports[0], target_ports[1]
    configure(target, tmp_path, "l2", a, b, BRIDGED)
    req = Nic(a, MAC_A, BRIDGED[0], BRIDGED[1], MAC_B, version, QPN_A, QPN_B)
    rsp = Nic(b, MAC_B, BRIDGED[1], BRIDGED[0], MAC_A, version, QPN_B, QPN_A)
    post_write(req, target)
    emitted = run(target, [req, rsp], lambda: req.requester.idle)

    assert roce_out(emitted, b) == req.sent and len(req.sent) == 3  # bridged: bytes unchanged
    assert rsp.received == req.sent and rsp.rx_bad == 0
    assert roce_out(emitted, a) == rsp.sent and len(rsp.sent) == 1
    assert all(decode(f).roce_version == version for f in req.sent + rsp.sent)
    assert rsp.responder.stats.bytes_received == WRITE_LEN
    assert req.requester.stats.timeouts == 0 and len(req.requester.done) == 1
    assert settle(target, "roce_rx", a * 8 + TC, 3) == (3, nbytes(req.sent))
    assert settle(target, "roce_rx", b * 8 + TC, 1) == (1, nbytes(rsp.sent))
    # RoCEv1 is counted as such in both directions; RoCEv2 never is.
    v1 = version == 1
    assert cell(target, "rocev1_rx", a) == ((3, nbytes(req.sent)) if v1 else (0, 0))
    assert cell(target, "rocev1_rx", b) == ((1, nbytes(rsp.sent)) if v1 else (0, 0))
    assert cell(target, "drops", a * 16 + DROP_ROCEV1_TO_ROUTER) == (0, 0)
