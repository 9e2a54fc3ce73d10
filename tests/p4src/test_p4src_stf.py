"""Run every STF test of p4src/roce_switch.p4 through p4sim's STF runner.

One test per p4src/tests/*.stf (a behaviour each: forwarding, ECN thresholds, PFC edges,
CNP generation and rate limit, fault injection, ...). The program is compiled once per
worker; each STF gets a fresh switch. Also checks that the committed .stf files are what
p4src/tests/gen_stf.py writes, and that the CNPs the switch is expected to build carry a
valid ICRC according to the packet library's independent decoder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.packets import decode, verify_icrc
from p4sim.lower import load_program
from p4sim.runtime.switch import Switch
from p4sim.stf import StfRunner

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "roce_switch.p4"
STF_DIR = ROOT / "p4src" / "tests"
STFS = sorted(STF_DIR.glob("*.stf"))


@pytest.fixture(scope="module")
def compiled():
    return load_program(str(PROGRAM))


def test_there_are_stf_tests() -> None:
    assert len(STFS) >= 15


@pytest.mark.parametrize("stf", STFS, ids=[p.stem for p in STFS])
def test_stf(compiled, stf: Path) -> None:
    sw = Switch(compiled, cpu_port=None)
    result = StfRunner(sw, str(stf), strict=True).run_text(stf.read_text())
    assert result.ok, result.report()
    assert result.packets_sent > 0


def test_stf_files_are_generated() -> None:
    proc = subprocess.run(
        [sys.executable, str(STF_DIR / "gen_stf.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr


def _expected_frames() -> list[tuple[str, bytes]]:
    out = []
    for stf in STFS:
        for line in stf.read_text().splitlines():
            words = line.split()
            if len(words) >= 3 and words[0] == "expect" and "*" not in words[2]:
                out.append((stf.stem, bytes.fromhex(words[2].rstrip("$"))))
    return out


def test_expected_cnps_have_valid_icrc() -> None:
    cnps = [(name, f) for name, f in _expected_frames() if decode(f).is_cnp and decode(f).bth_becn]
    assert len(cnps) >= 5
    for name, frame in cnps:
        d = decode(frame)
        assert verify_icrc(frame), name
        assert d.err_icrc == 0 and d.bth_dqpn in (0x34, 0xABCDEF), name


def _readme_rows(prefixes: tuple[str, ...]) -> list[list[str]]:
    rows = []
    for line in (ROOT / "p4src" / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and cells[0].strip("`").startswith(prefixes):
            rows.append(cells)
    return rows


def _ticked(cell: str) -> list[str]:
    return [t.split("(")[0] for t in cell.split("`")[1::2]]


def test_readme_tables_match_the_program(compiled) -> None:
    """Every table p4src/README.md documents exists with exactly those keys and actions."""
    model = compiled.model
    rows = _readme_rows(("RoceIngress.", "RoceEgress."))
    assert {r[0].strip("`") for r in rows} == set(model.tables)
    for cells in rows:
        info = model.tables[cells[0].strip("`")]
        assert set(_ticked(cells[1])) == {k.name for k in info.keys}, info.name
        actions = {a.name.rsplit(".", 1)[-1] for a in info.actions}
        assert set(_ticked(cells[2])) <= actions, info.name


def test_readme_counters_and_registers_exist(compiled) -> None:
    model = compiled.model
    names = {r[0].strip("`") for r in _readme_rows(tuple("abcdefghijklmnopqrstuvwxyz"))}
    assert set(model.counters) <= names
    assert set(model.registers) <= names
