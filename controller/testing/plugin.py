"""pytest plugin: choose the target a test runs against, without editing the test.

Registered through pyproject's `pytest11` entry point. The `target` fixture
(see controller/testing/fixtures) hands tests a `controller.targets.Target`.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocelab", "rocelab targets")
    group.addoption("--target", default="p4sim", choices=["p4sim", "p4sim-grpc", "bmv2", "hw"],
                    help="data-plane target for tests taking the `target` fixture")
    group.addoption("--grpc-addr", default=None, help="P4Runtime endpoint host:port")
    group.addoption("--device-id", type=int, default=1, help="P4Runtime device id")
    group.addoption("--port-map", default=None,
                    help="switch port to host interface, e.g. 1=veth1,2=veth2")
    group.addoption("--p4-artifacts", default=None,
                    help="directory with P4Info and BMv2 JSON compiled elsewhere")
    group.addoption("--bmv2-docker", default=None, help="run simple_switch_grpc in this image")
