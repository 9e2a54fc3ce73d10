"""The compiled backend (p4sim.compiled) against the Python reference: each program runs
its STF on a switch of each backend and everything observable must be equal (every output
packet with its port and time, drops and stats, counters, registers, log, digests, and the
STF verdict with its messages). A planted difference in the compiled source must be caught.

CI runs a sample (a few seconds of gcc each; artefacts cached per user); the whole corpus
runs with P4SIM_DIFF_CORPUS=all (`make test-compiled`).
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest

from p4sim import compiled, profile
from p4sim.compiled import build, program
from p4sim.lower import load_program
from p4sim.runtime.switch import Switch
from p4sim.stf import StfRunner
from tests.p4sim.compiled_helpers import PROFILE_OF, compiled_cache, needs_compiler, quick_build  # noqa: F401 (autouse fixture)

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "p4sim" / "programs"
ALL = sorted(
    p
    for p in CORPUS.glob("*.p4")
    if not p.name.startswith("reject_") and p.with_suffix(".stf").exists()
)
# counters, registers, clones, multicast, recirculation, checksums, parser errors, tables
SAMPLE = [
    "counter_indirect",
    "register_rw",
    "clone_e2e",
    "multicast",
    "recirculate",
    "checksum_ipv4",
]
PROGRAMS = (
    ALL if os.environ.get("P4SIM_DIFF_CORPUS") == "all" else [CORPUS / f"{n}.p4" for n in SAMPLE]
)


def observe(prog_path: Path, backend: str, monkeypatch) -> dict:
    """Run the program's STF on a fresh switch of `backend`; everything it can observe."""
    monkeypatch.setenv("P4SIM_PROFILE", PROFILE_OF[backend])
    sw = Switch(load_program(str(prog_path)))
    assert sw._ns["__p4sim_backend__"] == backend  # no silent fallback
    outputs: list[tuple[int, bytes, int]] = []
    receive = sw.receive

    def recording_receive():
        got = receive()
        outputs.extend((o.port, o.data, o.time_ns) for o in got)
        return got

    sw.receive = recording_receive  # type: ignore[method-assign]
    stf = prog_path.with_suffix(".stf")
    res = StfRunner(sw, str(stf)).run_text(stf.read_text())
    outputs.extend((o.port, o.data, o.time_ns) for o in receive())
    return {
        "stf": (res.ok, res.messages, res.packets_sent, res.packets_checked),
        "outputs": outputs,
        "stats": dict(sw.stats),
        "counters": {n: sw.counter_read(n, None) for n in sw.counters},
        "registers": {n: sw.register_read(n, None) for n in sw.registers},
        "log": list(sw.log),
        "digests": list(sw.digests),
    }


@needs_compiler
@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.stem)
def test_compiled_equals_python(prog: Path, monkeypatch):
    ref = observe(prog, "python", monkeypatch)
    assert ref["stf"][0], ref["stf"][1]
    assert ref["outputs"], "a differential test needs packets to compare"
    assert observe(prog, "compiled", monkeypatch) == ref


@needs_compiler
def test_a_planted_difference_in_the_compiled_code_is_caught(monkeypatch):
    quick_build(monkeypatch)
    prog = CORPUS / "checksum_ipv4.p4"
    ref = observe(prog, "python", monkeypatch)

    def plant(src: str) -> str:
        # the first header the parser extracts is left invalid: it is no longer emitted
        head, parser = src.split("    def P_", 1)
        assert "._v = True" in parser
        return head + "    def P_" + parser.replace("._v = True", "._v = False", 1)

    real_typed = program.typed_source
    monkeypatch.setattr(program, "typed_source", lambda p, injected: plant(real_typed(p, injected)))
    got = observe(prog, "compiled", monkeypatch)
    assert got != ref
    assert got["outputs"] != ref["outputs"]


def test_unknown_profile_is_a_one_line_error(monkeypatch):
    monkeypatch.setenv("P4SIM_PROFILE", "turbo")
    with pytest.raises(ValueError, match="P4SIM_PROFILE='turbo': expected one of fast, reference"):
        compiled.selected()


def test_without_cython_the_switch_runs_python_and_says_so_once(monkeypatch, capsys):
    def unavailable():
        raise build.CompileUnavailable("Cython is not installed (test)")

    monkeypatch.setattr(build, "_cython_version", unavailable)
    monkeypatch.setenv("P4SIM_PROFILE", "fast")
    profile._said.clear()
    prog = load_program(str(CORPUS / "checksum_ipv4.p4"))
    assert Switch(prog)._ns["__p4sim_backend__"] == "python"
    assert Switch(prog)._ns["__p4sim_backend__"] == "python"
    err = capsys.readouterr().err
    assert (
        err.count("compiled backend unavailable") == 1 and "Cython is not installed (test)" in err
    )


def test_cache_is_pruned_oldest_first(tmp_path):
    for i, name in enumerate(["a.so", "b.so", "c.so"]):
        f = tmp_path / name
        f.write_bytes(b"x" * 1000)
        os.utime(f, (1000 + i, 1000 + i))
    build.prune(str(tmp_path), max_bytes=2000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.so", "c.so"]


@needs_compiler
def test_a_damaged_cache_entry_is_rebuilt_once(tmp_path, monkeypatch):
    """A cached module that no longer loads (a truncated file) is built again, not an error.
    (Built, not loaded, before it is damaged: overwriting a mapped module would crash.)"""
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path))
    source = "answer = 6 * 7\n"
    name = f"damaged_{build.module_key(source)}"
    so = tmp_path / (name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    build._build(source, name, str(tmp_path), str(so))
    assert so.read_bytes()[:4] == b"\x7fELF"
    so.write_bytes(b"not an ELF file")
    assert build.build_module(source, "damaged").answer == 42
    assert so.read_bytes()[:4] == b"\x7fELF"
