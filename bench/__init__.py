"""rocelab's benchmarks (`make bench`, `python -m bench NAME`): see __main__.py."""

# p4sim-switch's performance configuration: the native (grpc++) front end and the compiled
# backend, each opt-in and built on first use (g++, libgrpc++-dev, Cython). Issue 19 compares
# p4sim with BMv2's performance build (itself an opt-in build: -O3, logging compiled out), so
# the P4Runtime and forwarding sections run this configuration next to the default one, in
# the same run, wherever it builds. The default (grpc-python, Python backend) stays the reference.
PERF_CONFIG = {"P4SIM_FRONTEND": "native", "P4SIM_BACKEND": "compiled"}


def perf_config_available() -> bool:
    """Whether the performance configuration's front end builds here (the compiled backend
    falls back to Python by itself, with one line, when it cannot)."""
    from p4sim.server.native import unavailable_reason

    return not unavailable_reason()
