"""Fixtures shared by the target tests."""

from __future__ import annotations

import pytest

from controller.targets.toolchain import PREFIX_ENV, toolchain


@pytest.fixture
def no_bmv2(monkeypatch):
    """The environment of a machine without BMv2 and p4c: no ROCELAB_BMV2_PREFIX, a PATH of
    the system's own directories (skipped where BMv2 or p4c is installed there)."""
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    monkeypatch.setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    if toolchain().simple_switch_grpc or toolchain().p4c:
        pytest.skip(f"BMv2 or p4c is installed in the system's PATH: {toolchain().describe()}")
