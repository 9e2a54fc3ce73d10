"""Every `python -m bench` section at its smallest size (`--smoke`): it exits 0 and prints
its figures in the usual shape, each next to the baseline it is read against in the same
run. The bench broke once, unnoticed, when an API it used moved; this keeps it honest.
Figures are not checked against targets here (speed targets live in the bench itself).
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys

import pytest

from bench.__main__ import SECTIONS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM = r"[\d,]+(?:\.\d+)?"
SAME_RUN = rf"= {NUM} empty-loop iterations of {NUM} ns, same run"


def _table_growth() -> list[str]:
    out = []
    for kind in ("exact", "lpm", "ternary"):
        out.append(
            rf"{kind} +100 entries: +{NUM} pps +\(1\.00 x the 100 figure; {NUM} us/packet "
            rf"{SAME_RUN}; install {NUM} us/entry in-process\)"
        )
        out.append(rf"{kind} +400 entries: +{NUM} pps +\({NUM} x the 100 figure; ")
    out += [
        r"exact +algorithm: exact match",
        r"lpm +algorithm: longest prefix match",
        r"ternary +algorithm: tuple space search: .*\((\d+) installed\)",
    ]
    return out


# per section: the lines (regexes) its output must contain
EXPECT: dict[str, list[str]] = {
    "p4sim_pipeline": [
        rf"payload +{n} B: +{NUM} pps +\({NUM} us/packet {SAME_RUN}; 300 of 300 forwarded\)"
        for n in (64, 1024)
    ]
    + [r"us/packet by stage: new headers/metadata"],
    "table_growth": _table_growth(),
    "p4runtime": [
        rf"table INSERT .*: {NUM}/s = \d+% of a no-work unary echo of the same bytes \({NUM}/s\)",
        rf"table DELETE .*: {NUM}/s = \d+% of a no-work unary echo",
        rf"PacketOut->PacketIn, 1 in flight: {NUM}/s = \d+% of the StreamChannel echo \({NUM}/s\)",
        rf"PacketOut->PacketIn, 32 in flight: {NUM}/s = \d+% of the echo \({NUM}/s\)",
        rf"rocelab counters \({NUM} cells, {NUM} MB\): {NUM} ms",
    ],
    "veth_forwarding": [
        rf"p4sim-switch, {n} B payload \(frames checked, digest [0-9a-f]{{12}}\):"
        for n in (64, 1024)
    ]
    + [
        rf"offered +{NUM} pps: sent +{NUM} pps.*, delivered +{NUM} pps \(loss {NUM}%; {NUM} us switch CPU/frame;"
        rf" sender {NUM} us CPU/frame\)",
        rf"peak: {NUM} pps delivered at {NUM} offered = {NUM}x BMv2 perf build \({NUM} pps\) .*"
        rf"reflector \(no switch, same run\): {NUM} pps",
    ],
    "scenario": [
        rf"incast-dcqcn, 0\.5 ms virtual at 10 Gb/s: {NUM} s wall",
        rf"{NUM} frames through the switch .*: {NUM} frames/s wall",
    ],
    "paper": [r"paper \(fluid fixed point\) +rocelab \(measured\)"]
    + [rf"^{n} +R_C per flow \(Gb/s\) +{NUM} +{NUM}" for n in (2, 4, 8)],
    "packets": [
        rf"{n:5d} B payload: build {NUM}/s, build\+decode {NUM}/s; scapy build {NUM}/s \(baseline\): "
        rf"build is {NUM}x scapy"
        for n in (64, 1024)
    ],
    "fabric": [
        rf" 2 hosts, 0\.05 ms virtual: .* {NUM} frames, .*\(1\.00x the 2-host figure\), .*\(1\.00x\)",
        rf" 4 hosts, 0\.05 ms virtual: .*\({NUM}x the 2-host figure\)",
        r"fabric +hosts +sw +frames .* switch +traffic +host +event +packet +other",
        rf"leaf-spine 2x4x4 +16 +6 +{NUM} .*\| +{NUM} +{NUM} +{NUM} +{NUM} +{NUM} +{NUM}",
        rf"fat-tree k=4 +16 +20 +{NUM} .*\| ",
        rf"linearity: {NUM}x the 16-host CPU per frame at 16 hosts",
        rf"sweep of 1 deadlock points \(200 us each\) on 1 local worker process\(es\): {NUM} s wall",
    ],
    "hdl": [r"icarus +64 +\d+ +\d+ +\d+ .* ok \(no bubble\)"],
    "fil": [
        rf"fil icarus DATA_WIDTH 64: 10 us virtual in {NUM} s wall .* virtual us/s wall, .* 0 mismatches"
    ],
}
NEEDS = {"hdl": "iverilog", "fil": "iverilog"}  # the simulator the smoke run uses


def test_every_section_has_a_smoke_size_and_expected_output():
    assert set(SECTIONS) == set(EXPECT)
    for name in SECTIONS:
        smoke = importlib.import_module(f"bench.{name}").SMOKE
        assert smoke and all(a.startswith("-") for a in smoke[:1]), name


@pytest.mark.parametrize("section", SECTIONS)
def test_bench_section_smoke(section):
    res = subprocess.run(
        [sys.executable, "-m", "bench", section, "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = res.stdout
    assert res.returncode == 0, (
        f"bench {section} --smoke failed:\n{out[-2000:]}\n{res.stderr[-2000:]}"
    )
    assert "FAILED" not in out + res.stderr
    if section == "veth_forwarding" and os.geteuid() != 0:
        assert "veth_forwarding skipped: needs root" in out, out
        return
    tool = NEEDS.get(section)
    if tool and shutil.which(tool) is None:
        # without the simulator the section says so (and exits 0); with it, figures are required
        assert re.search(rf"{'fil ' if section == 'fil' else ''}icarus.* skipped: ", out), out
        return
    for pat in EXPECT[section]:
        assert re.search(pat, out, re.MULTILINE), (
            f"bench {section}: no line matching {pat!r} in:\n{out}"
        )
    if section == "table_growth":
        groups = int(re.search(r"tuple space search: .*\((\d+) installed\)", out).group(1))
        assert groups > 8  # the ACL mix: the prefix-mask shapes plus the random mask tuples


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_runs_nothing(flag, monkeypatch, capsys):
    """`python -m bench --help` once ran every section (minutes). Any section it would
    import here fails, so a help that runs the bench returns 1 and prints '== bench'."""
    import bench.__main__ as main_mod

    def refuse(name):
        raise AssertionError(f"--help imported {name}")

    monkeypatch.setattr(main_mod.importlib, "import_module", refuse)
    assert main_mod.main([flag]) == 0
    out = capsys.readouterr().out
    assert "usage: python -m bench" in out and "== bench" not in out
    for name in SECTIONS:
        assert re.search(rf"^  {name} +\S", out, re.MULTILINE), name


def _refuse_to_run(monkeypatch) -> list[str]:
    """Every section's run() replaced by one that records its name and fails."""
    ran: list[str] = []
    for name in SECTIONS:

        def refuse(argv, name=name):
            ran.append(name)
            raise AssertionError(f"--help ran bench {name}")

        monkeypatch.setattr(importlib.import_module(f"bench.{name}"), "run", refuse)
    return ran


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_section_help_prints_its_help_and_runs_nothing(flag, monkeypatch, capsys):
    """`python -m bench SECTION --help`: argparse's help inside run() would exit the whole
    bench, and a section without argparse ignored the flag and ran."""
    import bench.__main__ as main_mod

    ran = _refuse_to_run(monkeypatch)
    for name in SECTIONS:
        assert main_mod.main([name, flag]) == 0
        out = capsys.readouterr().out
        assert f"python -m bench {name}" in out and "== bench" not in out, out
    assert main_mod.main(["p4runtime", "veth_forwarding", flag]) == 0
    out = capsys.readouterr().out
    assert out.count("usage: python -m bench") == 2 and "--bmv2" in out and "--rtt-n" in out
    assert main_mod.main(["nosuch", flag]) == 2
    assert ran == []


def test_negative_control_help_not_seen_runs_the_section(monkeypatch, capsys):
    import bench.__main__ as main_mod

    ran = _refuse_to_run(monkeypatch)
    monkeypatch.setattr(
        main_mod, "wants_help", lambda opts: False
    )  # planted: the flag is not looked at
    assert main_mod.main(["packets", "--help"]) == 1
    assert ran == ["packets"] and "== bench packets" in capsys.readouterr().out


def test_section_help_from_the_command_line():
    res = subprocess.run(
        [sys.executable, "-m", "bench", "p4runtime", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert (
        res.stdout.startswith("usage: python -m bench p4runtime") and "== bench" not in res.stdout
    )
