"""The warm-start index (p4sim.compiled.program.bind): a new process whose program's module is
built loads it without making the source (the ~2 s of typed_source on roce_switch.p4); an
edit to p4sim's code misses the index and makes the source again (a new module when the
source changed); a damaged index entry is ignored and rewritten, never an error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from p4sim.compiled import program
from p4sim.lower import load_program
from p4sim.runtime.switch import Switch
from tests.p4sim.compiled_helpers import compiled_cache, needs_compiler  # noqa: F401 (autouse fixture)

ROOT = Path(__file__).resolve().parents[2]
PROG = ROOT / "tests" / "p4sim" / "programs" / "checksum_ipv4.p4"

# A fresh process: one switch; prints its backend, its module and how many sources it made.
CHILD = """
from p4sim.compiled import program
from p4sim.lower import load_program
from p4sim.runtime.switch import Switch
sw = Switch(load_program({prog!r}))
mod = [m for m in program.build._loaded if m.startswith("p4_checksum_ipv4_")]
print(sw._ns["__p4sim_backend__"], ",".join(mod), len(program._SOURCES))
"""


def child(pythonpath: Path = ROOT) -> tuple[str, str, int]:
    env = dict(os.environ, P4SIM_PROFILE="fast", PYTHONPATH=str(pythonpath))
    r = subprocess.run(
        [sys.executable, "-c", CHILD.format(prog=str(PROG))],
        env=env,
        cwd=pythonpath,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    backend, mod, made = r.stdout.split()
    return backend, mod, int(made)


def copy_of_p4sim(tmp_path: Path, old: str, new: str, file: str) -> Path:
    """p4sim copied under tmp_path with `old` replaced by `new` in `file` (a planted edit)."""
    shutil.copytree(
        ROOT / "p4sim", tmp_path / "p4sim", ignore=shutil.ignore_patterns("__pycache__")
    )
    f = tmp_path / "p4sim" / file
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    return tmp_path


@needs_compiler
def test_a_warm_process_loads_the_module_without_making_the_source(tmp_path):
    first = child()  # builds the module if this run's cache has not, and indexes it
    assert first[0] == "compiled"
    warm = child()
    assert warm == ("compiled", first[1], 0)  # same module, no source made

    # negative control: an edit to the generator that leaves its output alone misses the
    # index (p4sim's code is part of the key) and makes the source; the module is the same
    comment = copy_of_p4sim(tmp_path / "a", "BIND = ", "# planted\nBIND = ", "compiled/program.py")
    assert child(comment) == ("compiled", first[1], 1)
    # an edit that changes the made source: a miss, then a new module built from it
    changed = copy_of_p4sim(
        tmp_path / "b",
        '"# cython: infer_types=False"',
        '"# cython: infer_types=False\\n# planted"',
        "compiled/program.py",
    )
    got = child(changed)
    assert got[0] == "compiled" and got[1] != first[1] and got[2] == 1
    assert child(changed) == got[:2] + (0,)  # and that one is indexed under its own key


@needs_compiler
@pytest.mark.parametrize(
    "entry",
    [
        b"",
        b"\xff\xfe garbage",
        b"../../../etc/passwd",
        b"p4_checksum_ipv4_zz",
        b"p4_other_program_0123456789abcdef",
        b"p4_checksum_ipv4_0123456789abcdef",
    ],
)
def test_a_damaged_index_entry_is_ignored_and_rewritten(entry, tmp_path, monkeypatch):
    """Unreadable, malformed, another program's, or naming no built module: a miss."""
    monkeypatch.setenv("P4SIM_PROFILE", "fast")
    keys: list[str] = []
    real_key = program.index_key
    monkeypatch.setattr(program, "index_key", lambda *a: keys.append(real_key(*a)) or keys[-1])
    prog = load_program(str(PROG))
    sw = Switch(prog)  # built (once per run) in the shared cache and loaded in this process
    assert sw._ns["__p4sim_backend__"] == "compiled"
    good = next(m for m in program.build._loaded if m.startswith("p4_checksum_ipv4_"))
    # the damaged entry in a cache of this test's own: the shared one's entry is what the
    # warm-start test's processes read, possibly at this moment (xdist)
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path))
    entry_path = Path(program._index_path(keys[0]))
    entry_path.parent.mkdir()
    entry_path.write_bytes(entry)
    # this process made the source above: forget it, so a miss shows as a source made
    monkeypatch.setattr(program, "_SOURCES", type(program._SOURCES)())
    assert Switch(prog)._ns["__p4sim_backend__"] == "compiled"
    assert len(program._SOURCES) == 1  # the entry was not used: the source was made
    assert keys[-1] == keys[0] and entry_path.read_text().strip() == good  # and the entry rewritten


def test_index_lookup_accepts_only_a_module_name_of_its_stem(tmp_path, monkeypatch):
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path))
    program.index_store("k", "p4_x_0123456789abcdef")
    assert program.index_lookup("k", "p4_x") == "p4_x_0123456789abcdef"
    assert program.index_lookup("k", "p4_y") is None
    assert program.index_lookup("absent", "p4_x") is None
    assert [
        n for n in os.listdir(tmp_path / ".index") if n.startswith(".tmp-")
    ] == []  # renamed into place
