"""The binding point between the runtime and the compiled backend.

The compiled backend reads some of the runtime's objects at fixed offsets (slots.py: the
switch's, the traffic manager's and its port state's slots, an entry's fields) and its
driver checks the traffic manager's class (drive.py). It does not import p4sim.runtime for
them: the runtime hands its classes over here when it is imported (p4sim/runtime/switch.py
calls `bind_runtime`), so imports flow one way, runtime -> compiled, and the compiled
backend can be read and tested against any classes with the same slots.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeClasses:
    """What the compiled backend reads of the runtime: classes whose `__slots__` it probes."""

    switch: type  # p4sim.runtime.switch.Switch
    traffic_manager: type  # p4sim.runtime.tm.TrafficManager
    port_state: type  # p4sim.runtime.tm._PortState
    rec: type  # p4sim.runtime.tables.Rec: this process's entry class (compiled or Python)


_bound: RuntimeClasses | None = None


def bind_runtime(classes: RuntimeClasses) -> None:
    """Hand the runtime's classes to the compiled backend (once per process; the same again
    is allowed, another set is a bug: built modules have probed the first)."""
    global _bound
    if _bound is not None and _bound != classes:
        raise RuntimeError("p4sim.compiled: the runtime's classes are already bound to others")
    _bound = classes


def runtime() -> RuntimeClasses:
    """The runtime's classes (bound when p4sim.runtime.switch is imported)."""
    if _bound is None:
        raise RuntimeError("p4sim.compiled: no runtime bound (import p4sim.runtime.switch first)")
    return _bound
