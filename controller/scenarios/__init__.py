"""Declarative RoCEv2 scenarios (the *.yaml files here), the event loop that runs them on a
target (engine), and their reports (report)."""
