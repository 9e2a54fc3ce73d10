"""Kind `p4sim` (the default): the embedded switch in this process, in virtual time.

Given --grpc-addr it stands for a p4sim-switch already running there (kind p4runtime), as
`rocelab counters --grpc-addr HOST:PORT` has always meant. A lab runs it as p4sim-switch.
"""

from __future__ import annotations

from controller.targets.config import ConfigError, TargetConfig
from controller.targets.registry import TargetKind, get, names


class P4SimKind(TargetKind):
    name = "p4sim"
    help = "the embedded switch in this process, in virtual time (default)"
    in_process = True
    switch_kind = "p4sim-grpc"

    def resolve(self, cfg: TargetConfig) -> TargetKind:
        return get("p4runtime") if cfg.grpc_addr else self

    def check(self, cfg: TargetConfig, context: str = "cli") -> None:
        if cfg.port_map:
            others = names(lambda k: not k.in_process)
            raise ConfigError(
                f"--port-map needs a switch outside this process (--target {', '.join(others)})"
            )

    def compile_p4(self, path):
        from controller.targets.p4sim import program_from_p4

        return program_from_p4(path)

    def open(self, cfg, program=None, process=None):
        from controller.targets.p4sim import P4SimTarget

        t = P4SimTarget(
            program if program is not None else self.program(cfg), cfg.cpu_port, cfg.seed
        )
        for port, bps in sorted(cfg.port_rates.items()):
            t.set_port_speed(port, bps)
        return t


KIND = P4SimKind()
