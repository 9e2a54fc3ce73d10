"""The schemas of the other files a user writes: a scenario (controller/scenarios/*.yaml),
a fabric scenario (the same directory, with `fabric:`), a lab file (lab/topologies/), a
sweep grid (`rocelab sweep --grid`, controller/examples/sweep_deadlock.yaml).

Types, ranges and units are here; what needs the whole file (a flow's hosts exist in the
switch block, message <= bytes, the number of samples, a run's parameters belong to its
fabric scenario) stays with each loader (controller/scenarios/schema.py, lab/labfile.py),
which runs after this. A scenario that `extends` another is validated once merged."""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Literal

from pydantic import (
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    create_model,
    field_validator,
)

from controller.hosts.dcqcn import DcqcnParams

from .switch import Strict, SwitchConfig, SwitchPolicy
from .types import (
    Flag,
    Int,
    LinkSpeed,
    Number,
    Port,
    PositiveSize,
    Qpn,
    SizeField,
    SpeedField,
    TimeField,
    TrafficClass,
)

MAX_DURATION_US = 200_000  # 200 ms of virtual time (minutes of wall time): longer is a typo
Text = Annotated[str, StringConstraints(min_length=1)]
RunDuration = Number(0, MAX_DURATION_US, lo_open=True)  # also `rocelab run --duration-us`


def _expect_model(scope: str) -> type[Strict]:
    """`expect:` / `expect_fail:`: one optional key per registered check of this scope."""
    from controller.scenarios.checks import registered

    CHECKS = registered()  # noqa: N806 (the kinds load theirs: fabric_* checks)

    types = {"true": Literal[True], "fraction": Number(0, 1, lo_open=True), "count": Int(1, 10**9)}
    spec = {
        k: (
            types.get(c.kind, Number(0, 10**6, lo_open=True)) | None,
            Field(None, description=c.title),
        )
        for k, c in sorted(CHECKS.items())
        if c.scope == scope
    }
    return create_model(f"Expect_{scope}", __base__=Strict, **spec)


def _dcqcn_model() -> type[Strict]:
    spec = {
        f.name: ((Int(0, 10**15) if f.type in (int, "int") else Number(0, 1e15)) | None, None)
        for f in fields(DcqcnParams)
    }
    return create_model("DcqcnKnobs", __base__=Strict, **spec)


class LinkSpec(Strict):
    speed: LinkSpeed = 10e9
    prop_ns: Int(1, 10**8) = 1000


class NicSpec(Strict):
    window: Int(1, 65536) = 256
    timeout_us: Number(1, 10**6) = 1000
    ack_every: Int(1, 65536) = 16
    rp: Flag = True
    np: Flag = True
    dscp: Int(0, 63) = 26
    priority: TrafficClass = 3


class FlowSpec(Strict):
    src: Text
    dst: Text
    op: Annotated[str, StringConstraints(pattern="(?i)^(write|send|read)$")] = "WRITE"
    bytes: PositiveSize = "1GB"
    message: PositiveSize = "1MB"
    start_us: Number(0, MAX_DURATION_US) = 0
    name: Text | None = None
    qpn: Qpn | None = None
    peer_qpn: Qpn | None = None


class WatchSpec(Strict):
    port: Int(0, 511) | None = None
    class_: TrafficClass = Field(3, alias="class")


class SweepSpec(Strict):
    drop_rate: Annotated[list[Number(0, 0.5)], Field(min_length=1, max_length=16)] | None = None


class CaptureSpec(Strict):
    ports: list[Int(0, 511)] = []
    snaplen: Int(0, 65535) = 0
    cpu: Flag = True


class ScenarioFile(Strict):
    """A scenario: RoCEv2 hosts and one switch in virtual time (rocelab run NAME|FILE)."""

    model_config = ConfigDict(title="rocelab scenario")
    name: Text | None = None
    title: Text | None = None
    extends: Text | None = None
    duration_us: RunDuration = 2000
    warmup_us: Number(0, MAX_DURATION_US) = 0
    seed: Int(0, 2**32 - 1) = 1
    sample_us: Number(1, MAX_DURATION_US) = 5
    link: LinkSpec = LinkSpec()
    nic: NicSpec = NicSpec()
    dcqcn: _dcqcn_model() | None = None  # type: ignore[valid-type]
    switch: SwitchConfig
    flows: list[FlowSpec] = Field(min_length=1, max_length=64)
    watch: WatchSpec = WatchSpec()
    sweep: SweepSpec = SweepSpec()
    expect: _expect_model("switch") | None = None  # type: ignore[valid-type]
    expect_fail: _expect_model("switch") | None = None  # type: ignore[valid-type]
    capture: CaptureSpec = CaptureSpec()


RunLabel = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


FabricName = Literal["spreading", "deadlock", "spray", "storm"]  # controller.fabric.params.PARAMS


class FabricSpec(Strict):
    scenario: FabricName
    runs: dict[RunLabel, dict[str, Int(0, 10**6)] | None] = Field(min_length=1, max_length=8)


class FabricScenarioFile(Strict):
    """A fabric scenario: labelled runs of one of controller.fabric's multi-switch scenarios."""

    model_config = ConfigDict(title="rocelab fabric scenario")
    name: Text | None = None
    title: Text | None = None
    extends: Text | None = None
    seed: Int(0, 2**31 - 1) = 0
    fabric: FabricSpec
    expect: _expect_model("fabric") | None = None  # type: ignore[valid-type]
    expect_fail: _expect_model("fabric") | None = None  # type: ignore[valid-type]


Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,7}$")]
End = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,7}:[0-9]+$")]


class LabHost(Strict):
    switch: Name
    port: Port
    rate: SpeedField = "10M"
    delay: TimeField = "100us"


class LabLink(Strict):
    a: End
    b: End
    rate: SpeedField = "10M"
    delay: TimeField = "100us"


class LabFlow(Strict):
    src: Name
    dst: Name


class LabDcqcn(Strict):
    g: Number(0, 1, lo_open=True) | None = None
    alpha_timer: TimeField | None = None
    rate_timer: TimeField | None = None
    byte_counter: SizeField | None = None
    fast_recovery_steps: Int(1, 10**6) | None = None
    rate_ai: SpeedField | None = None
    rate_hai: SpeedField | None = None
    alpha_init: Number(0, 1) | None = None
    min_rate: SpeedField | None = None
    rate_reduce_interval: TimeField | None = None


class LabFile(Strict):
    """A congested lab: switches, hosts, links, flows, a policy and DCQCN knobs (make lab)."""

    model_config = ConfigDict(title="rocelab lab file")
    name: str | None = None
    description: str | None = None
    switches: list[Name] = Field(min_length=1, max_length=32)
    hosts: dict[Name, LabHost] = Field(min_length=1, max_length=32)
    links: list[LabLink] = []
    flows: list[LabFlow] = []
    duration: TimeField = "3s"
    policy: SwitchPolicy = SwitchPolicy()
    dcqcn: LabDcqcn = LabDcqcn()


GridValues = Annotated[list[Int(0, 2**31 - 1)], Field(min_length=1, max_length=100)]


class SweepGridFile(Strict):
    """A sweep grid: a fabric scenario and the values of its parameters (rocelab sweep --grid)."""

    model_config = ConfigDict(title="rocelab sweep grid")
    scenario: FabricName
    grid: dict[str, GridValues] = Field({}, max_length=8)
    metric: Text | None = None
    x: Text | None = None

    @field_validator("grid")
    @classmethod
    def _known_parameters_in_range(cls, grid: dict, info: ValidationInfo) -> dict:
        """What needs the scenario: its parameter names and each one's bounds."""
        from controller.fabric.params import PARAMS, bounds  # (loaded lazily: a cycle)

        scenario = info.data.get("scenario")
        params = PARAMS.get(scenario or "", {})
        for key, values in grid.items():
            if key not in params:
                raise ValueError(
                    f"{key}: {scenario} has no parameter {key!r} (it has {', '.join(params)})"
                )
            lo, hi = bounds(key)
            bad = [v for v in values if not lo <= v <= hi]
            if bad:
                raise ValueError(f"{key}: {bad[0]} is out of range {lo}..{hi}")
            if len(set(values)) != len(values):
                raise ValueError(f"{key}: a value given twice (a point is run once)")
        return grid

    @field_validator("x")
    @classmethod
    def _x_is_a_parameter(cls, x: str | None, info: ValidationInfo) -> str | None:
        from controller.fabric.params import PARAMS

        scenario = info.data.get("scenario")
        if x is not None and scenario in PARAMS and x not in PARAMS[scenario]:
            raise ValueError(f"{scenario} has no parameter {x!r}")
        return x
