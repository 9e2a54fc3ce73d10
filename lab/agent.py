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
import select
import socket
import sys
import time
from dataclasses import dataclass, field

from controller.hosts.dcqcn import NotificationPoint
from controller.hosts.rc import (
    REQUEST_OPCODES,
    RESPONSE_OPCODES,
    WRITE,
    Pdu,
    RcRequester,
    RcResponder,
)
from controller.packets import Decoded, decode
from controller.packets import constants as C
from controller.packets.build import RoceSpec, cnp_frame, spec_frame

ETH_P_ALL = 0x0003


@dataclass
class Peer:
    mac: str
    ip: str
    local_qpn: int
    remote_qpn: int
    requester: RcRequester = field(init=False)
    responder: RcResponder = field(init=False)

    def __post_init__(self) -> None:
        self.requester = RcRequester(self.local_qpn, self.remote_qpn, mtu=1024, window=16,
                                     timeout_ns=50_000_000)
        self.responder = RcResponder(self.local_qpn, self.remote_qpn, mtu=1024, ack_every=4)


def parse_peer(text: str) -> Peer:
    try:
        mac, ip, lq, rq = text.split(",")
        return Peer(mac, ip, int(lq, 0), int(rq, 0))
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"--peer {text!r}: expected MAC,IP,LOCAL_QPN,REMOTE_QPN ({e})") from e


def payload_len(frame: bytes, rec: Decoded) -> int:
    """RoCEv2 payload bytes of a frame: UDP length minus BTH, extended headers, pad, ICRC."""
    off = 14 + (4 if rec.vlan_valid else 0)
    if rec.ip_version == 4:
        ihl = (frame[off] & 0x0F) * 4
        udp = off + ihl
    else:
        udp = off + 40
    udp_len = int.from_bytes(frame[udp + 4:udp + 6], "big")
    opcode = rec.bth_opcode
    ext = 0
    if opcode in C.RETH_OPCODES:
        ext += 16
    if opcode in C.IMMDT_OPCODES or opcode in C.AETH_OPCODES:
        ext += 4
    return max(0, udp_len - 8 - 12 - ext - 4 - rec.bth_pad)


class Agent:
    def __init__(self, sock: socket.socket, mac: str, ip: str, peers: list[Peer]):
        self.sock, self.mac, self.ip = sock, mac, ip
        self.peers = {p.local_qpn: p for p in peers}
        self.np = NotificationPoint()
        self.t0 = time.monotonic_ns()
        self.sent = 0
        self.received = 0
        self.ignored = 0
        self.cnps_received = 0

    def now(self) -> int:
        return time.monotonic_ns() - self.t0

    def _tx(self, peer: Peer, pdu: Pdu) -> None:
        kw: dict = {"ackreq": int(pdu.ackreq)}
        if pdu.reth is not None:
            kw.update(va=pdu.reth[0], rkey=pdu.reth[1], dlen=pdu.reth[2])
        if pdu.aeth is not None:
            kw.update(syndrome=pdu.aeth[0], msn=pdu.aeth[1])
        spec = RoceSpec(self.ip, peer.ip, pdu.opcode, pdu.dqpn, pdu.psn,
                        bytes(pdu.payload_len), eth_src=self.mac, eth_dst=peer.mac, **kw)
        self.sock.send(spec_frame(spec))
        self.sent += 1

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
            return
        pdu = Pdu(rec.bth_opcode, rec.bth_dqpn, rec.bth_psn, bool(rec.bth_ackreq),
                  payload_len(frame, rec),
                  (rec.reth_va, rec.reth_rkey, rec.reth_dlen) if rec.reth_valid else None,
                  (rec.aeth_syndrome, rec.aeth_msn) if rec.aeth_valid else None,
                  ce=bool(rec.ecn_ce), becn=bool(rec.bth_becn))
        if pdu.opcode in REQUEST_OPCODES:
            peer.responder.on_pdu(pdu, now)
            if pdu.ce and self.np.on_ce((peer.remote_qpn,), now):
                self.sock.send(cnp_frame(self.ip, peer.ip, peer.remote_qpn,
                                         eth_src=self.mac, eth_dst=peer.mac))
                self.sent += 1
        elif pdu.opcode in RESPONSE_OPCODES:
            peer.requester.on_pdu(pdu, now)

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
            "retransmitted": sum(p.requester.stats.retransmitted_packets
                                 for p in self.peers.values()),
            "naks_sent": sum(p.responder.stats.naks_sent for p in self.peers.values()),
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.agent", description=__doc__.split("\n")[0])
    ap.add_argument("--iface", required=True, help="interface to send and receive on")
    ap.add_argument("--mac", required=True)
    ap.add_argument("--ip", required=True)
    ap.add_argument("--peer", type=parse_peer, action="append", default=[],
                    help="MAC,IP,LOCAL_QPN,REMOTE_QPN (repeatable)")
    ap.add_argument("--messages", type=int, default=4, help="WRITEs to post to each peer")
    ap.add_argument("--size", type=int, default=2048, help="bytes per WRITE")
    ap.add_argument("--expect", type=int, default=0,
                    help="messages to receive (all peers together) before finishing")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before giving up")
    ap.add_argument("--start-at", type=float, default=None,
                    help="wall-clock time (time.time()) to start sending: lets every agent "
                         "open its socket first")
    ap.add_argument("--linger", type=float, default=0.3,
                    help="seconds to keep answering after finishing (late ACK requests)")
    args = ap.parse_args(argv)
    if not args.peer:
        ap.error("at least one --peer")

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((args.iface, 0))
    sock.setblocking(False)
    agent = Agent(sock, args.mac.lower(), args.ip, args.peer)
    if args.start_at is not None:
        time.sleep(max(0.0, args.start_at - time.time()))
    for peer in args.peer:
        for _ in range(args.messages):
            peer.requester.post(WRITE, args.size, agent.now())

    deadline = time.monotonic() + args.timeout
    finished_at: float | None = None
    while time.monotonic() < deadline:
        agent.pump()
        ready, _, _ = select.select([sock], [], [], 0.002)
        if ready:
            while True:
                try:
                    frame, addr = sock.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING:
                    continue  # our own transmissions, looped back to packet sockets
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
