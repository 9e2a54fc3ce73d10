"""Link shaping with tc: a link's delay (netem) and, on a host's NIC, its line rate.

Where each knob goes matters. The congestion the lab studies must build in the *switch's*
egress queue, where roce_switch.p4 reads enq_qdepth and marks ECN; a rate limit on a veth
the switch transmits on would queue in the kernel instead, invisible to the P4 program.
So a switch's side of a link only gets netem delay (the switch's own egress rate,
p4sim-switch `--port-rate` or BMv2 `set_queue_rate`, is the link's speed), and a host's
side gets delay plus the link's rate (the NIC's line rate: a paced sender never exceeds it,
the shaper only keeps a mis-paced one honest).
"""

from __future__ import annotations

import subprocess

NETEM_LIMIT = 1000  # packets netem may hold: a rate-limited NIC backlog, never a drop here
TBF_BURST = 3 * 1500  # bytes: a few frames, so a paced sender is never held up
TBF_LIMIT = 200_000  # bytes tbf may queue before dropping


class ShapeError(RuntimeError):
    pass


def _kbit(bps: float) -> str:
    return f"{max(1, round(bps / 1000))}kbit"


def tc_argv(
    iface: str, delay_ns: int, rate_bps: float | None = None, netem: bool = True
) -> list[str]:
    """`tc qdisc replace dev IFACE root netem delay D [rate R] limit N`; without netem (a
    kernel built without sch_netem) `tbf` for the rate alone, or nothing (an empty list)."""
    base = ["tc", "qdisc", "replace", "dev", iface, "root"]
    if netem:
        argv = base + ["netem", "delay", f"{max(1, round(delay_ns / 1000))}us"]
        if rate_bps is not None:
            argv += ["rate", _kbit(rate_bps)]
        return argv + ["limit", str(NETEM_LIMIT)]
    if rate_bps is None:
        return []
    return base + ["tbf", "rate", _kbit(rate_bps), "burst", str(TBF_BURST), "limit", str(TBF_LIMIT)]


def _tc(argv: list[str], netns: str | list[str] | None) -> subprocess.CompletedProcess:
    return subprocess.run(_inside(netns) + argv, capture_output=True, text=True, timeout=30)


def _inside(netns: str | list[str] | None) -> list[str]:
    """The command prefix that runs a command in `netns`: a named namespace, or a prefix
    of our own (Mininet's hosts: `mnexec -a PID`)."""
    if netns is None:
        return []
    return ["ip", "netns", "exec", netns] if isinstance(netns, str) else list(netns)


_netem: bool | None = None  # does this kernel have sch_netem? (None: not tried yet)


def netem_available() -> bool | None:
    """Whether the kernel had sch_netem when shape() first tried it (some VM kernels are
    built without it: links then get their rate from tbf and no delay)."""
    return _netem


def shape(
    iface: str, delay_ns: int, rate_bps: float | None = None, netns: str | list[str] | None = None
) -> list[str]:
    """Install the qdisc on `iface` (inside `netns`); returns the tc command it ran ([] when
    there was nothing to do: no netem here and no rate to set)."""
    global _netem
    if _netem is not False:
        argv = tc_argv(iface, delay_ns, rate_bps, netem=True)
        done = _tc(argv, netns)
        if done.returncode == 0:
            _netem = True
            return argv
        if "unknown" not in done.stderr or _netem is True:
            raise ShapeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
        _netem = False  # "Specified qdisc kind is unknown": no delay emulation on this kernel
    argv = tc_argv(iface, delay_ns, rate_bps, netem=False)
    if argv:
        done = _tc(argv, netns)
        if done.returncode != 0:
            raise ShapeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return argv


def qdisc(iface: str, netns: str | list[str] | None = None) -> str:
    """`tc qdisc show dev IFACE`, for reports and tests."""
    return _tc(["tc", "qdisc", "show", "dev", iface], netns).stdout.strip()
