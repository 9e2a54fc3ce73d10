"""Shared by the roce_rx tests: controller.fil.run builds and runs roce_rx modules."""

from __future__ import annotations

from controller.fil.run import FAULTS, RECORD_BITS, RTL, failure_text, run_sim
from controller.fil.run import run_rx as run

__all__ = ["FAULTS", "RECORD_BITS", "RTL", "failure_text", "run", "run_sim"]
