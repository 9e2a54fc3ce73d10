"""rocelab traffic agent: one host's RC queue pairs on a real interface (AF_PACKET).

Runs inside a lab host (a network namespace): for each peer it keeps one RC QP (the
project's requester/responder state machines, `controller.hosts.rc`), posts WRITEs to that
peer, answers the peer's requests with ACK/NAK (go-back-N as a NIC does), answers CE-marked
data with CNPs (DCQCN notification point) and prints one JSON summary on stdout.

    python -m lab.agent --iface eth0 --mac 02:00:00:00:00:01 --ip 10.0.0.1 \
        --peer 02:00:00:00:00:02,10.0.0.2,0x101,0x102 --messages 8 --size 2048 \
        --expect 8 --timeout 10

`--peer MAC,IP,LOCAL_QPN,REMOTE_QPN` may repeat (incast receivers have several peers).
The kernel never sees these frames as its own: the agent writes raw Ethernet frames built
by `controller.packets` and decodes what arrives with the same library.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field

from controller.hosts.dcqcn import NotificationPoint
from controller.hosts.host import pdu_of
from controller.hosts.rc import (
    REQUEST_OPCODES,
    RESPONSE_OPCODES,
    WRITE,
    Pdu,
    RcRequester,
    RcResponder,
)
from controller.packets import decode
from controller.packets.build import RoceSpec, cnp_frame, spec_frame
from controller.targets.afpacket import AfPacketPorts

# The requester's retransmission timeout. It gives up after retry_cnt (7) timeouts without
# progress: at 50 ms that was 350 ms, which a loaded 2-core CI machine exceeded once (an
# agent or the switch descheduled); 250 ms tolerates ~2 s of stall. Queues in a congested
# lab hold tens of ms more, so it passes its own, larger value.
REQUEST_TIMEOUT_NS = 250_000_000


@dataclass
class Peer:
    mac: str
    ip: str
    local_qpn: int
    remote_qpn: int
    timeout_ns: int = REQUEST_TIMEOUT_NS
    requester: RcRequester = field(init=False)
    responder: RcResponder = field(init=False)

    def __post_init__(self) -> None:
        self.requester = RcRequester(
            self.local_qpn, self.remote_qpn, mtu=1024, window=16, timeout_ns=self.timeout_ns
        )
        self.responder = RcResponder(self.local_qpn, self.remote_qpn, mtu=1024, ack_every=4)


def parse_peer(text: str) -> Peer:
    try:
        mac, ip, lq, rq = text.split(",")
        return Peer(mac, ip, int(lq, 0), int(rq, 0))
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"--peer {text!r}: expected MAC,IP,LOCAL_QPN,REMOTE_QPN ({e})"
        ) from e


class Agent:
    def __init__(
        self,
        port: AfPacketPorts,
        mac: str,
        ip: str,
        peers: list[Peer],
        np_interval_ns: int = 50_000,
    ):
        self.port, self.mac, self.ip = port, mac, ip
        self.peers = {p.local_qpn: p for p in peers}
        self.np = NotificationPoint(np_interval_ns)
        self.t0 = time.monotonic_ns()
        self.sent = 0
        self.received = 0
        self.ignored = 0
        self.cnps_received = 0

    def now(self) -> int:
        return time.monotonic_ns() - self.t0

    def _tx(self, peer: Peer, pdu: Pdu) -> int:
        """Send `pdu` to `peer`; returns the frame's length in bytes."""
        kw: dict = {"ackreq": int(pdu.ackreq)}
        if pdu.reth is not None:
            kw.update(va=pdu.reth[0], rkey=pdu.reth[1], dlen=pdu.reth[2])
        if pdu.aeth is not None:
            kw.update(syndrome=pdu.aeth[0], msn=pdu.aeth[1])
        spec = RoceSpec(
            self.ip,
            peer.ip,
            pdu.opcode,
            pdu.dqpn,
            pdu.psn,
            bytes(pdu.payload_len),
            eth_src=self.mac,
            eth_dst=peer.mac,
            **kw,
        )
        frame = spec_frame(spec)
        self.port.send(0, frame)
        self.sent += 1
        return len(frame)

    def pump(self) -> None:
        now = self.now()
        for peer in self.peers.values():
            peer.requester.check_timeout(now)
            while (pdu := peer.requester.next_pdu(now)) is not None:
                self._tx(peer, pdu)
            while peer.responder.out:
                self._tx(peer, peer.responder.out.popleft())

    def on_frame(self, frame: bytes) -> None:
        rec = decode(frame)
        if rec.is_pfc:
            self.on_pfc(rec)
            return
        if not rec.is_roce or rec.roce_version != 2 or rec.err_icrc or rec.err_ip_csum:
            self.ignored += 1
            return
        peer = self.peers.get(rec.bth_dqpn)
        if peer is None:
            self.ignored += 1
            return
        self.received += 1
        now = self.now()
        if rec.is_cnp:
            self.cnps_received += 1
            self.on_cnp(peer, now)
            return
        pdu = pdu_of(frame, rec)
        if pdu.opcode in REQUEST_OPCODES:
            peer.responder.on_pdu(pdu, now)
            if pdu.ce and self.np.on_ce((peer.remote_qpn,), now):
                self.port.send(
                    0,
                    cnp_frame(
                        self.ip, peer.ip, peer.remote_qpn, eth_src=self.mac, eth_dst=peer.mac
                    ),
                )
                self.sent += 1
        elif pdu.opcode in RESPONSE_OPCODES:
            peer.requester.on_pdu(pdu, now)

    def on_cnp(self, peer: Peer, now: int) -> None:
        """A CNP for `peer`'s QP: this agent has no reaction point (lab.dcqcn_agent has)."""

    def on_pfc(self, rec) -> None:
        """A PFC frame from the switch: this agent does not pause (lab.dcqcn_agent does)."""
        self.ignored += 1

    def done(self, expect: int) -> bool:
        sent_all = all(p.requester.idle for p in self.peers.values())
        got = sum(p.responder.stats.messages for p in self.peers.values())
        return sent_all and got >= expect

    def summary(self) -> dict:
        return {
            "ip": self.ip,
            "frames_sent": self.sent,
            "frames_received": self.received,
            "frames_ignored": self.ignored,
            "cnps_sent": self.np.cnps_sent,
            "cnps_received": self.cnps_received,
            "ce_marked_received": sum(p.responder.stats.ce_marked for p in self.peers.values()),
            "messages_completed": sum(len(p.requester.done) for p in self.peers.values()),
            "messages_received": sum(p.responder.stats.messages for p in self.peers.values()),
            "bytes_acked": sum(p.requester.stats.acked_bytes for p in self.peers.values()),
            "bytes_received": sum(p.responder.stats.bytes_received for p in self.peers.values()),
            "retransmitted": sum(
                p.requester.stats.retransmitted_packets for p in self.peers.values()
            ),
            "naks_sent": sum(p.responder.stats.naks_sent for p in self.peers.values()),
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.agent", description=__doc__.split("\n")[0])
    ap.add_argument("--iface", required=True, help="interface to send and receive on")
    ap.add_argument("--mac", required=True)
    ap.add_argument("--ip", required=True)
    ap.add_argument(
        "--peer",
        type=parse_peer,
        action="append",
        default=[],
        help="MAC,IP,LOCAL_QPN,REMOTE_QPN (repeatable)",
    )
    ap.add_argument("--messages", type=int, default=4, help="WRITEs to post to each peer")
    ap.add_argument("--size", type=int, default=2048, help="bytes per WRITE")
    ap.add_argument(
        "--expect",
        type=int,
        default=0,
        help="messages to receive (all peers together) before finishing",
    )
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before giving up")
    ap.add_argument(
        "--start-at",
        type=float,
        default=None,
        help="wall-clock time (time.time()) to start sending: lets every agent "
        "open its socket first",
    )
    ap.add_argument(
        "--linger",
        type=float,
        default=0.3,
        help="seconds to keep answering after finishing (late ACK requests)",
    )
    args = ap.parse_args(argv)
    if not args.peer:
        ap.error("at least one --peer")

    port = AfPacketPorts({0: args.iface})
    agent = Agent(port, args.mac.lower(), args.ip, args.peer)
    if args.start_at is not None:
        time.sleep(max(0.0, args.start_at - time.time()))
    for peer in args.peer:
        for _ in range(args.messages):
            peer.requester.post(WRITE, args.size, agent.now())

    deadline = time.monotonic() + args.timeout
    finished_at: float | None = None
    while time.monotonic() < deadline:
        agent.pump()
        for _, frame in port.poll(0.002):
            agent.on_frame(frame)
        if finished_at is None and agent.done(args.expect):
            finished_at = time.monotonic()
        if finished_at is not None and time.monotonic() - finished_at >= args.linger:
            break
    agent.pump()
    out = agent.summary()
    out["ok"] = agent.done(args.expect)
    print(json.dumps(out), flush=True)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
