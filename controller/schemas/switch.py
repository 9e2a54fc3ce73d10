"""The switch config's schema (controller/examples/lab.yaml; the `switch:` block of a
scenario): every key, its type, range and unit. Cross-field rules that need the whole
config (a host's port exists, XON < XOFF, headroom for the cable, Kmax within the buffer)
are `controller.config.check`, run on the typed result."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .types import (
    Flag,
    Int,
    IpAddr,
    IpPrefix,
    Mac,
    Metres,
    Port,
    Probability,
    Qpn,
    SizeField,
    SpeedField,
    TrafficClass,
)


class Strict(BaseModel):
    """Unknown keys are errors (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


class PortSpec(Strict):
    speed: SpeedField = 10e9
    mtu: Int(576, 9216) | None = Field(None, description="default: the top-level mtu")
    cable_m: Metres = 2.0
    mac: Mac | None = Field(None, description="default: 02:00:00:00:ff:<port>")


class QpSpec(Strict):
    qpn: Qpn
    peer: str
    peer_qpn: Qpn


class HostSpec(Strict):
    port: Port
    mac: Mac
    ip: IpAddr
    qps: list[QpSpec] = []


class RouteSpec(Strict):
    prefix: IpPrefix
    port: Port
    dmac: Mac = "02:00:00:00:00:00"


class ClassesSpec(Strict):
    dscp: dict[Int(0, 63), TrafficClass] = {}
    pcp: dict[Int(0, 7), TrafficClass] = {}


class EcnProfileSpec(Strict):
    kmin: SizeField = "5KB"
    kmax: SizeField = "200KB"
    pmax: Probability = 0.01
    drop_non_ect: Flag = False


class EcnApplySpec(Strict):
    ports: Literal["all"] | list[Port] = "all"
    class_: TrafficClass = Field(alias="class")
    profile: str


class EcnSpec(Strict):
    profiles: dict[str, EcnProfileSpec] = {}
    apply: list[EcnApplySpec] = []


class PfcSpec(Strict):
    classes: list[TrafficClass] = []
    xoff: SizeField = "40 pkts"
    xon: SizeField = "20 pkts"
    quanta: Int(1, 0xFFFF) = 0xFFFF
    refresh_us: Int(1, 10**7) = 100
    headroom: SizeField | None = Field(
        None, description="buffer kept above XOFF for what is in flight"
    )
    response_bits: Int(0, 10**7) | None = Field(
        None, description="the peer's reaction delay; default: 802.3 Annex 31B for the port speed"
    )


class BufferSpec(Strict):
    packets: Int(1, 10**7) = 1024


class CnpSpec(Strict):
    mode: Literal["host", "switch"] = "host"
    class_: TrafficClass = Field(6, alias="class")
    dscp: Int(0, 63) = 48
    interval_us: Int(0, 10**6) = 50


class FaultSpec(Strict):
    kind: Literal["every_nth", "psn"]
    host: str
    qpn: Qpn
    n: Int(1, 10**9) | None = None
    psn: Int(0, 0xFFFFFF) | None = None


class MirrorMatch(Strict):
    src: str | None = None
    dst: str | None = None
    qpn: Qpn | None = None


class MirrorSpec(Strict):
    session: Int(1, 0xFFFF)
    port: Port
    match: MirrorMatch = MirrorMatch()
    truncate: Int(0, 0xFFFF) = 0
    priority: Int(0, 0xFFFF) = 1


class SwitchPolicy(Strict):
    """A switch config without its ports (a lab file's `policy:`: the fabric gives them)."""

    name: str | None = None
    description: str | None = None
    program: str | None = None
    mtu: Int(576, 9216) = 1500
    roce_mtu: Int(256, 4096) = 1024
    router_mac: Mac = "02:00:00:00:00:fe"
    ports: dict[Port, PortSpec] = {}
    hosts: dict[str, HostSpec] = {}
    routing: Literal["l2", "l3"] = "l3"
    routes: list[RouteSpec] = []
    classes: ClassesSpec = ClassesSpec()
    ecn: EcnSpec = EcnSpec()
    pfc: PfcSpec | None = None
    buffer: BufferSpec = BufferSpec()
    cnp: CnpSpec = CnpSpec()
    faults: list[FaultSpec] = []
    mirror: list[MirrorSpec] = []


class SwitchConfig(SwitchPolicy):
    """A switch config file (rocelab check / apply)."""

    model_config = ConfigDict(title="rocelab switch config")

    @field_validator("ports")
    @classmethod
    def _some_port(cls, ports: dict) -> dict:
        if not ports:
            raise ValueError("at least one port is required")
        return ports
