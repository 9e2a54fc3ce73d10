"""Kind `hw`: a hardware switch over P4Runtime, its ports cabled to NICs here
(docs/bringup.md). The suite needs all three of --grpc-addr, --port-map, --p4-artifacts."""

from __future__ import annotations

from controller.targets.config import ConfigError, TargetConfig

from .p4runtime import RemoteKind


class HwKind(RemoteKind):
    name = "hw"
    help = "a hardware switch at --grpc-addr, ports cabled to --port-map NICs (docs/bringup.md)"

    def check(self, cfg: TargetConfig, context: str = "cli") -> None:
        need = [("--grpc-addr", cfg.grpc_addr)]
        if context == "pytest":  # the suite sends on real ports a compiled program forwards
            need += [
                ("--port-map", cfg.port_map),
                ("--p4-artifacts", cfg.options.get("p4_artifacts")),
            ]
        missing = [opt for opt, v in need if not v]
        if missing:
            raise ConfigError(
                f"--target {self.name} needs {', '.join(missing)} (see docs/bringup.md)"
            )


KIND = HwKind()
