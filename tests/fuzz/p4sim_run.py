"""Run a generated case on p4sim (in process, the same steps as the BMv2 driver)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from p4rtproto.entities import Exact, Lpm, TableEntry
from p4sim.externs.counter import counter_read
from p4sim.externs.register import register_read
from p4sim.runtime.instance import load_program
from p4sim.runtime.switch import Switch

from .gen import Case
from .outcome import Outcome

# Each random program runs once, with a handful of packets: the fast profile's C build of a
# new program (~10 s here) would be nearly all of its cost, while the reference profile is
# what p4sim's semantics are defined by (compiled == reference is the corpus differential's
# job, tests/p4sim). `python -m tests.fuzz --profile fast` runs the compiled backend instead.
DEFAULT_PROFILE = "reference"


@contextmanager
def _profile(name: str):
    """P4SIM_PROFILE for the switch built inside (read when its pipeline is instantiated),
    restored after: the batch may run inside a pytest worker whose other tests use the default."""
    from p4sim.profile import ENV

    before = os.environ.get(ENV)
    os.environ[ENV] = name
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def run(case: Case, source: Path, profile: str = DEFAULT_PROFILE) -> Outcome:
    with _profile(profile):
        sw = Switch(load_program(str(source)))
    for session, port in case.clone_sessions.items():
        sw.clone_session_set(session, [(port, 0)])
    for e in case.entries:
        table = sw.tables[e.table]
        match = {
            kn: (Exact(v) if m is None else Lpm(v, m))
            for kn, (_, v, m) in zip(table.key_names, e.keys, strict=True)
        }
        sw.table_add(TableEntry(table=e.table, match=match, action=e.action, params=dict(e.args)))
    result = Outcome()
    for port, frame in case.packets:
        sw.send(port, frame)
        sw.run_until_idle()
        per: dict[int, list[bytes]] = {}
        for o in sw.receive():
            per.setdefault(o.port, []).append(o.data)
        result.packets.append(per)
    for name in case.registers:
        result.registers[name] = [int(v) for v in register_read(sw, name, None)]
    for name, _size in case.counters:
        result.counters[name] = [(int(p), int(b)) for p, b in counter_read(sw, name, None)]
    return result
