"""tests/p4sim checks the P4 language on p4sim's reference profile (pure Python).

The corpus, the STF programs and the semantics tests build a few hundred small programs, and
a compiled build of each (Cython, then gcc: seconds each) would add many minutes to a CI run
that starts with an empty cache. The fast profile's compiled backend is checked against the
reference here by the differential tests (test_compiled*.py, test_typed*.py), which choose
the profile per switch; `make test-compiled` runs the whole corpus both ways. The other test
folders (servers, controller, scenarios, fabric, labs) run the default, fast, profile."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def reference_profile(monkeypatch):
    monkeypatch.setenv("P4SIM_PROFILE", "reference")
