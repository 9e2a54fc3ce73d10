"""DCQCN end-host algorithms (Zhu et al., "Congestion Control for Large-Scale RDMA
Deployments", SIGCOMM 2015): the notification point (NP, receiver side) and the reaction
point (RP, sender side).

The RP keeps a current rate R_C, a target rate R_T and alpha:
- on a CNP (rate decrease):  R_T = R_C;  R_C = R_C * (1 - alpha/2);  alpha = (1-g)*alpha + g;
  the timer, byte counter and their stage counts T, BC restart at zero.
- alpha timer (every K us) with no CNP seen since the last tick:  alpha = (1-g)*alpha.
- rate-increase events, one per timer period (T += 1) and one per byte-counter B bytes sent
  (BC += 1); on each event, with F fast-recovery steps:
    max(T, BC) < F          fast recovery:     R_C = (R_T + R_C) / 2
    min(T, BC) > F          hyper increase:    R_T += i * R_HAI, i = min(T, BC) - F;  R_C = (R_T + R_C)/2
    otherwise               additive increase: R_T += R_AI;  R_C = (R_T + R_C) / 2
  R_T and R_C never exceed the line rate; R_C never falls below `min_rate`.

Time is in integer nanoseconds (virtual or wall); the RP is driven by its owner: `on_cnp`,
`on_sent(nbytes)` and `tick(now)` for the two timers. Nothing here knows about frames.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class DcqcnParams:
    """Every DCQCN knob, with the paper's defaults."""

    g: float = 1 / 256  # alpha gain
    alpha_timer_ns: int = 55_000  # K: alpha update period when no CNP arrives
    rate_timer_ns: int = 55_000  # T: rate-increase timer period
    byte_counter: int = 10 * 1024 * 1024  # B: bytes sent per rate-increase event
    fast_recovery_steps: int = 5  # F
    rate_ai_bps: float = 40e6  # R_AI: additive increase step
    rate_hai_bps: float = 100e6  # R_HAI: hyper increase step
    alpha_init: float = 1.0
    min_rate_bps: float = 10e6  # floor for R_C (NICs keep a minimum rate)
    cnp_interval_ns: int = 50_000  # NP: at most one CNP per flow per interval
    rate_reduce_interval_ns: int = 0  # RP: ignore CNPs closer than this (0 = react to every CNP)

    def as_table(self) -> list[tuple[str, str]]:
        """The values a run used, as (name, value) rows for printing."""
        rows = []
        for key, value in asdict(self).items():
            if key == "g":
                text = f"{value:.6g} (1/{round(1 / value)})" if value else "0"
            elif key.endswith("_ns"):
                text = f"{value / 1000:g} us"
            elif key.endswith("_bps"):
                text = f"{value / 1e6:g} Mb/s"
            elif key == "byte_counter":
                text = f"{value} B ({value / 2**20:g} MiB)"
            else:
                text = f"{value:g}"
            rows.append((key, text))
        return rows

    def validate(self) -> None:
        """Raise ValueError naming the first knob out of its range."""
        if not 0 < self.g <= 1:
            raise ValueError(f"dcqcn.g must be in (0, 1], got {self.g}")
        for name in ("alpha_timer_ns", "rate_timer_ns", "byte_counter", "fast_recovery_steps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"dcqcn.{name} must be > 0, got {getattr(self, name)}")
        if self.rate_ai_bps < 0 or self.rate_hai_bps < 0 or self.min_rate_bps <= 0:
            raise ValueError("dcqcn rates must be positive")
        if not 0 <= self.alpha_init <= 1:
            raise ValueError(f"dcqcn.alpha_init must be in [0, 1], got {self.alpha_init}")
        for name in ("cnp_interval_ns", "rate_reduce_interval_ns"):
            if getattr(self, name) < 0:
                raise ValueError(f"dcqcn.{name} must be >= 0, got {getattr(self, name)}")


class ReactionPoint:
    """The DCQCN rate limiter of one sending QP (flow)."""

    def __init__(self, line_rate_bps: float, params: DcqcnParams | None = None, now_ns: int = 0):
        self.p = params or DcqcnParams()
        self.line_rate = float(line_rate_bps)
        self.rc = self.line_rate  # current rate
        self.rt = self.line_rate  # target rate
        self.alpha = self.p.alpha_init
        self.t_count = 0  # T: timer expirations since the last cut
        self.bc_count = 0  # BC: byte-counter expirations since the last cut
        self.bytes_since = 0  # bytes toward the next byte-counter event
        self.cnp_since_alpha = False
        self.next_alpha_ns = now_ns + self.p.alpha_timer_ns
        self.next_rate_ns = now_ns + self.p.rate_timer_ns
        self.last_cut_ns: int | None = None
        self.cnps = 0  # CNPs received
        self.cnp_times: list[int] = []  # when each arrived (the CNP-spacing check reads them)
        self.cuts = 0  # rate decreases performed
        self.active = False  # DCQCN only starts increasing after the first cut

    # -- events
    def on_cnp(self, now_ns: int) -> bool:
        """A CNP for this flow arrived; returns True when the rate was cut."""
        self.cnps += 1
        self.cnp_times.append(now_ns)
        self.cnp_since_alpha = True
        if (
            self.last_cut_ns is not None
            and self.p.rate_reduce_interval_ns
            and now_ns - self.last_cut_ns < self.p.rate_reduce_interval_ns
        ):
            return False
        self.rt = self.rc
        self.rc = max(self.p.min_rate_bps, self.rc * (1 - self.alpha / 2))
        self.alpha = (1 - self.p.g) * self.alpha + self.p.g
        self.t_count = 0
        self.bc_count = 0
        self.bytes_since = 0
        self.next_rate_ns = now_ns + self.p.rate_timer_ns
        self.next_alpha_ns = now_ns + self.p.alpha_timer_ns
        self.cnp_since_alpha = False  # this CNP already raised alpha
        self.last_cut_ns = now_ns
        self.cuts += 1
        self.active = True
        return True

    def on_sent(self, nbytes: int) -> None:
        """`nbytes` left the NIC for this flow: feeds the byte counter."""
        if not self.active:
            return
        self.bytes_since += nbytes
        while self.bytes_since >= self.p.byte_counter:
            self.bytes_since -= self.p.byte_counter
            self.bc_count += 1
            self._increase()

    def tick(self, now_ns: int) -> None:
        """Run both timers up to `now_ns` (call at or after `next_event()`)."""
        while self.next_alpha_ns <= now_ns:
            if not self.cnp_since_alpha:
                self.alpha = (1 - self.p.g) * self.alpha
            self.cnp_since_alpha = False
            self.next_alpha_ns += self.p.alpha_timer_ns
        while self.next_rate_ns <= now_ns:
            self.next_rate_ns += self.p.rate_timer_ns
            if self.active:
                self.t_count += 1
                self._increase()

    def next_event(self) -> int:
        return min(self.next_alpha_ns, self.next_rate_ns)

    # -- the increase state machine
    def _increase(self) -> None:
        f = self.p.fast_recovery_steps
        hi, lo = max(self.t_count, self.bc_count), min(self.t_count, self.bc_count)
        if hi < f:
            pass  # fast recovery: R_T unchanged
        elif lo > f:
            self.rt += (lo - f) * self.p.rate_hai_bps
        else:
            self.rt += self.p.rate_ai_bps
        self.rt = min(self.rt, self.line_rate)
        self.rc = min((self.rt + self.rc) / 2, self.line_rate)
        if self.rc >= self.line_rate and self.rt >= self.line_rate:
            self.active = False  # recovered fully: back to line rate, nothing to increase

    @property
    def stage(self) -> str:
        f = self.p.fast_recovery_steps
        hi, lo = max(self.t_count, self.bc_count), min(self.t_count, self.bc_count)
        return "fast" if hi < f else ("hyper" if lo > f else "additive")


class NotificationPoint:
    """The receiver side: CE-marked RoCE data -> at most one CNP per flow per interval."""

    def __init__(self, interval_ns: int = 50_000):
        self.interval_ns = interval_ns
        self._last: dict[tuple, int] = {}
        self.ce_seen = 0
        self.cnps_sent = 0

    def on_ce(self, flow: tuple, now_ns: int) -> bool:
        """A CE-marked packet of `flow` arrived; True when a CNP must be sent now."""
        self.ce_seen += 1
        last = self._last.get(flow)
        if last is not None and now_ns - last < self.interval_ns:
            return False
        self._last[flow] = now_ns
        self.cnps_sent += 1
        return True
