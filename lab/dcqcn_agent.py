"""DCQCN lab agent: a paced RoCEv2 sender (reaction point) and receiver (notification point)
on a real interface, in wall-clock time.

    python -m lab.dcqcn_agent --iface eth0 --mac 02:00:00:00:00:01 --ip 10.0.0.1 \
        --peer 02:00:00:00:00:fe,10.0.1.1,0x101,0x301 --send --line-rate 4M \
        --duration 3 --dcqcn '{"g": 0.0625, "rate_timer_ns": 40000000}'

Built on `lab.agent.Agent` (RC queue pairs over AF_PACKET, the NP answering CE-marked data
with CNPs at most once per flow per interval). With `--send` every peer gets one RC WRITE
stream for `--duration` seconds, paced by `controller.hosts.dcqcn.ReactionPoint`: a packet
leaves only when the flow's current rate R_C allows it (inter-packet gap = wire bits / R_C),
a CNP for the flow's QP cuts R_C, and the RP's timers and byte counter raise it again. PFC
frames for the data's class stop transmission for the pause time they carry (quanta of 512
bit times at the line rate) or until the XON. The receiver runs until SIGTERM (the lab
stops it once every sender has finished) or its own `--timeout`.
One JSON summary on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import time

from controller.hosts.dcqcn import DcqcnParams, ReactionPoint
from controller.hosts.rc import WRITE
from controller.targets.afpacket import AfPacketPorts

from .agent import Agent, Peer, parse_peer

WIRE_OVERHEAD = 24  # preamble + SFD, FCS, inter-frame gap: what a frame costs beyond its bytes
QUANTUM_BITS = 512  # one PFC pause quantum (802.1Qbb)
MESSAGES_AHEAD = 2  # WRITEs kept posted per flow while sending
MAX_POLL_S = 0.002


class DcqcnAgent(Agent):
    def __init__(
        self,
        port: AfPacketPorts,
        mac: str,
        ip: str,
        peers: list[Peer],
        *,
        line_rate_bps: float,
        params: DcqcnParams,
        send: bool,
        tc: int = 3,
        message_bytes: int = 16384,
    ):
        if params.min_rate_bps > line_rate_bps:  # a "cut" would raise the rate above line rate
            raise ValueError(
                f"DCQCN min_rate {params.min_rate_bps:g} b/s is above the line "
                f"rate {line_rate_bps:g} b/s"
            )
        super().__init__(port, mac, ip, peers, np_interval_ns=params.cnp_interval_ns)
        self.line_rate, self.tc, self.message_bytes = line_rate_bps, tc, message_bytes
        now = self.now()
        self.rps = (
            {q: ReactionPoint(line_rate_bps, params, now) for q in self.peers} if send else {}
        )
        self.next_tx = dict.fromkeys(self.rps, 0)
        self.sending = send
        self.send_started_ns: int | None = None
        self.posted = 0
        self.rate_min = line_rate_bps
        self.paused_until = 0
        self.paused_ns = 0
        self.pfc_xoff_rx = self.pfc_xon_rx = 0
        self._last_pump = now

    # -- events from the wire
    def on_cnp(self, peer: Peer, now: int) -> None:
        rp = self.rps.get(peer.local_qpn)
        if rp is not None and rp.on_cnp(now):
            self.rate_min = min(self.rate_min, rp.rc)

    def on_pfc(self, rec) -> None:
        if not rec.pfc_cev >> self.tc & 1:
            self.ignored += 1
            return
        quanta = getattr(rec, f"pfc_quanta{self.tc}")
        now = self.now()
        if quanta == 0:
            self.pfc_xon_rx += 1
            self.paused_until = now
        else:
            self.pfc_xoff_rx += 1
            self.paused_until = now + round(quanta * QUANTUM_BITS * 1e9 / self.line_rate)

    # -- the paced transmit side
    def pump(self) -> None:
        now = self.now()
        if now < self.paused_until:
            self.paused_ns += now - self._last_pump  # paused since the last pass (roughly)
        self._last_pump = now
        for qpn, peer in self.peers.items():
            req = peer.requester
            req.check_timeout(now)
            rp = self.rps.get(qpn)
            if rp is None:
                continue
            rp.tick(now)
            if self.sending:
                while len(req.wrs) < MESSAGES_AHEAD:
                    req.post(WRITE, self.message_bytes, now)
                    self.posted += 1
            if now < self.paused_until:
                continue
            while now >= self.next_tx[qpn]:
                pdu = req.next_pdu(now)
                if pdu is None:  # window full or nothing posted: no credit piles up meanwhile
                    self.next_tx[qpn] = now
                    break
                n = self._tx(peer, pdu) + WIRE_OVERHEAD
                rp.on_sent(n)
                gap = round(n * 8 * 1e9 / rp.rc)
                # a wake-up less than a gap late keeps the schedule (the rate holds on
                # average); after a longer idle (window, pause) the schedule restarts now
                due = self.next_tx[qpn]
                self.next_tx[qpn] = (due if now - due < gap else now) + gap
        for peer in self.peers.values():
            while peer.responder.out:
                self._tx(peer, peer.responder.out.popleft())

    def wait_s(self) -> float:
        """How long the loop may sleep in poll: until the next paced packet, at most 2 ms."""
        if not self.rps:
            return MAX_POLL_S
        due = min(self.next_tx.values()) - self.now()
        return min(MAX_POLL_S, max(0.0, due / 1e9))

    def finished_sending(self) -> bool:
        return all(p.requester.idle for q, p in self.peers.items() if q in self.rps)

    def summary(self) -> dict:
        out = super().summary()
        out["role"] = "sender" if self.rps else "receiver"
        out["messages_posted"] = self.posted
        out["timeouts"] = sum(p.requester.stats.timeouts for p in self.peers.values())
        out["pfc_xoff_received"] = self.pfc_xoff_rx
        out["pfc_xon_received"] = self.pfc_xon_rx
        out["paused_ms"] = round(self.paused_ns / 1e6, 1)
        if self.rps:
            rps = list(self.rps.values())
            # over the whole active time: start to the last acknowledgement (the drain too)
            span = self.now() - (self.send_started_ns or 0)
            out.update(
                {
                    "line_rate_bps": self.line_rate,
                    "rp_cnps": sum(rp.cnps for rp in rps),
                    "rate_reductions": sum(rp.cuts for rp in rps),
                    "rate_min_bps": round(self.rate_min),
                    "rate_final_bps": round(min(rp.rc for rp in rps)),
                    "alpha_final": round(max(rp.alpha for rp in rps), 4),
                    "goodput_bps": round(out["bytes_acked"] * 8 / (span / 1e9)) if span > 0 else 0,
                }
            )
        return out


def parse_params(text: str) -> DcqcnParams:
    """DcqcnParams from a JSON object of its field names (never evaluated as code)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--dcqcn: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise argparse.ArgumentTypeError("--dcqcn: expected a JSON object")
    known = {f.name for f in dataclasses.fields(DcqcnParams)}
    bad = sorted(set(data) - known)
    if bad:
        raise argparse.ArgumentTypeError(f"--dcqcn: unknown knob {bad[0]!r}")
    try:
        params = DcqcnParams(**data)
        params.validate()
    except (TypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(f"--dcqcn: {e}") from None
    return params


def _rate(text: str) -> float:
    from controller.config import ConfigError, parse_speed

    try:
        value = parse_speed(text, "--line-rate")
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if not 0 < value <= 100e9:
        raise argparse.ArgumentTypeError("--line-rate must be in (0, 100G]")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m lab.dcqcn_agent", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--iface", required=True)
    ap.add_argument("--mac", required=True)
    ap.add_argument("--ip", required=True)
    ap.add_argument(
        "--peer",
        type=parse_peer,
        action="append",
        default=[],
        help="MAC,IP,LOCAL_QPN,REMOTE_QPN (repeatable; MAC: the next hop's)",
    )
    ap.add_argument("--send", action="store_true", help="send a WRITE stream to every peer")
    ap.add_argument("--line-rate", type=_rate, default=10e6, help="NIC line rate, e.g. 4M")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds of sending")
    ap.add_argument("--message-size", type=int, default=16384, help="bytes per WRITE")
    ap.add_argument(
        "--dcqcn",
        type=parse_params,
        default=DcqcnParams(),
        help="DCQCN knobs as a JSON object of DcqcnParams fields",
    )
    ap.add_argument(
        "--rto-ms",
        type=float,
        default=1000.0,
        help="RC retransmission timeout (queues in a congested lab are long)",
    )
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before giving up")
    ap.add_argument(
        "--start-at",
        type=float,
        default=None,
        help="wall-clock time (time.time()) to start sending",
    )
    args = ap.parse_args(argv)
    if not args.peer:
        ap.error("at least one --peer")
    if not 0 < args.duration <= 600 or not 0 < args.timeout <= 3600:
        ap.error("--duration must be in (0, 600] s and --timeout in (0, 3600] s")
    if not 1 <= args.message_size <= 1 << 30 or not 1 <= args.rto_ms <= 60_000:
        ap.error("--message-size must be 1..2^30 bytes and --rto-ms 1..60000")
    for p in args.peer:
        p.timeout_ns = round(args.rto_ms * 1e6)
        p.__post_init__()  # rebuild the QPs with that timeout

    if args.dcqcn.min_rate_bps > args.line_rate:
        ap.error(f"--dcqcn min_rate_bps {args.dcqcn.min_rate_bps:g} is above --line-rate")
    stop = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    port = AfPacketPorts({0: args.iface})
    agent = DcqcnAgent(
        port,
        args.mac.lower(),
        args.ip,
        args.peer,
        line_rate_bps=args.line_rate,
        params=args.dcqcn,
        send=args.send,
        message_bytes=args.message_size,
    )
    if args.start_at is not None:
        time.sleep(min(30.0, max(0.0, args.start_at - time.time())))
    agent.send_started_ns = agent.now()
    t_stop = time.monotonic() + args.duration
    deadline = time.monotonic() + args.timeout
    while not stop and time.monotonic() < deadline:
        agent.pump()
        for _, frame in port.poll(agent.wait_s()):
            agent.on_frame(frame)
        if agent.sending and time.monotonic() >= t_stop:
            agent.sending = False
        if args.send and not agent.sending and agent.finished_sending():
            break  # every WRITE posted was acknowledged
    agent.pump()
    out = agent.summary()
    if args.send:
        out["ok"] = (
            agent.finished_sending()
            and out["messages_completed"] == agent.posted > 0
            and all(p.requester.state != "ERR" for p in args.peer)
        )
    else:
        out["ok"] = out["messages_received"] > 0
    print(json.dumps(out), flush=True)
    port.close()
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
