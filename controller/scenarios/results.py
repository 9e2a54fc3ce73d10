"""What a scenario run gives: each flow's figures, each run's, and the verdicts of the
checks on them. Below the checks, the engine and the reports, which all read them (the
checks judge RunResults; a ScenarioResult holds their Verdicts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.hosts.dcqcn import DcqcnParams

if TYPE_CHECKING:
    from controller.telemetry import Telemetry


@dataclass
class Verdict:
    name: str
    ok: bool
    detail: str
    no_data: bool = False  # the check had nothing to judge (and so failed)


@dataclass
class FlowResult:
    name: str
    src: str
    dst: str
    qpn: int
    goodput_bps: float = 0.0  # in-order payload delivered in the window
    sent_bytes: int = 0
    retransmitted: int = 0
    naks: int = 0
    timeouts: int = 0
    cnps: int = 0
    ce: int = 0
    final_rate_bps: float = 0.0  # the RP's rate limit when the run ended
    mean_rate_bps: float = 0.0  # the RP's rate limit averaged over the measurement window
    cnp_times: list[int] = field(default_factory=list)


@dataclass
class RunResult:
    scenario: str
    seed: int
    label: str  # sweep point, or ""
    duration_ns: int
    warmup_ns: int
    flows: list[FlowResult]
    series: dict[str, Any]  # time series for the plots
    counters: dict[str, int]
    queue: dict[str, float]
    dcqcn: DcqcnParams
    captures: dict[int, list[tuple[int, bytes]]]
    wall_s: float = 0.0
    line_bps: float = 10e9
    sweep_value: float | None = None
    notes: list[str] = field(default_factory=list)
    telemetry: Telemetry | None = None  # the switch's counters per port and class
    capacity_bps: float = 0.0  # payload capacity of the bottleneck (checks.payload_capacity_bps)
    taps: dict[int, list[tuple[int, bytes, str]]] = field(default_factory=dict)  # wire taps
    snaplen: int = 0


@dataclass
class ScenarioResult:
    scenario: dict
    runs: list[RunResult]
    verdicts: list[Verdict]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)
