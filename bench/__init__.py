"""rocelab's benchmarks (`make bench`, `python -m bench NAME`): see __main__.py."""

# p4sim's two profiles (p4sim.profile): fast, the default (compiled backend and write path,
# the native grpc++ front end, each built on first use: g++, libgrpc++-dev, Cython), and
# reference (pure Python, grpc-python). The P4Runtime and forwarding sections run this tree's
# p4sim-switch on the reference profile and, wherever the native front end builds, on the
# fast one (PERF_CONFIG) in the same run, so each row is read as fast against reference.
PERF_CONFIG = {"P4SIM_PROFILE": "fast"}
REFERENCE_CONFIG = {"P4SIM_PROFILE": "reference"}


def perf_config_available() -> bool:
    """Whether the fast profile's front end builds here (the compiled backend falls back
    to Python by itself, with one line, when it cannot)."""
    from p4sim.server.native import unavailable_reason

    return not unavailable_reason()
