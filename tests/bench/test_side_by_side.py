"""bench.side_by_side: the table of ratios to BMv2's perf build, and (with the real
toolchain) the p4runtime section's BMv2 path end to end at its smallest size."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import side_by_side
from bench.side_by_side import DEFAULT_LABEL, PERF_LABEL, Row
from bench.veth_forwarding import Step, past_peak

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    Row("INSERT", "insert", "/s", cpu_key="insert_cpu"),
    Row("counters", "ms", "ms", higher_better=False),
]


def _trial(perf: float, ours: float, perf_ms: float, our_ms: float) -> dict[str, dict[str, float]]:
    return {
        PERF_LABEL: {"insert": perf, "insert_cpu": 2.0, "ms": perf_ms},
        "p4sim": {"insert": ours, "insert_cpu": 1.0, "ms": our_ms},
        DEFAULT_LABEL: {"insert": perf / 4, "ms": perf_ms * 2},
    }


def test_table_ratios_are_per_trial_and_oriented(capsys):
    # trial 1: 1.5x the rate, half the time; trial 2: 2x the rate, 2/3 the time: medians 1.75x
    trials = [_trial(100, 150, 40, 20), _trial(200, 400, 30, 20)]
    side_by_side.table(ROWS, trials, [PERF_LABEL, "p4sim", DEFAULT_LABEL])
    out = capsys.readouterr().out
    ins = next(line for line in out.splitlines() if line.startswith("| INSERT"))
    cnt = next(line for line in out.splitlines() if line.startswith("| counters"))
    assert "| 150/s (2.0 us CPU) |" in ins  # the perf build's median, absolute
    assert "1.75x [1.50-2.00] (275/s, 1.0 us CPU)" in ins
    assert "**0.25x**" in ins  # below the perf build: marked
    assert "1.75x [1.50-2.00]" in cnt  # less time is better: perf / ours
    assert "**0.50x**" in cnt
    assert re.search(
        r"\| row \| BMv2 perf build \(median\) \| p4sim \(x perf build\) \| BMv2 default build", out
    )


def _step(rate: int, delivered: float, loss: float) -> Step:
    return Step(rate, rate, delivered, loss, 5.0)


def test_sweep_stops_only_past_the_peak():
    rising = [_step(10_000, 10_000, 0), _step(20_000, 19_000, 0.05), _step(40_000, 30_000, 0.25)]
    assert not past_peak(rising)  # still growing: the next rate may deliver more
    assert not past_peak(rising + [_step(80_000, 30_500, 0.6)])  # one lossy flat step: not yet
    flat = rising + [_step(80_000, 30_500, 0.6), _step(120_000, 29_000, 0.75)]
    assert past_peak(flat)  # two lossy steps with nothing gained over the best before them
    growing_again = [
        _step(10_000, 10_000, 0),
        _step(20_000, 20_000, 0),
        _step(40_000, 40_000, 0),
        _step(60_000, 40_500, 0.33),
        _step(80_000, 60_000, 0.25),
    ]
    assert not past_peak(growing_again)  # the last step delivered more: keep rising
    assert not past_peak(rising[:2] + [_step(40_000, 40_000, 0.0), _step(80_000, 41_000, 0.5)])


def test_p4runtime_side_by_side_with_bmv2():
    """The section's BMv2 path (p4sim-switch and BMv2's perf build started and alternated
    here, one small trial): the table has every row, each with a ratio."""
    found, why = side_by_side.find()
    if found is None:
        pytest.skip(f"no BMv2 here: {why}")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "p4runtime",
            "--bmv2",
            "--rtt-n",
            "150",
            "--no-native-echo",
            "--no-bmv2-default",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = res.stdout
    assert res.returncode == 0 and "FAILED" not in out + res.stderr, (
        out[-2000:] + res.stderr[-2000:]
    )
    ratio = r"\*?\*?\d+\.\d\dx\*?\*? \("  # p4sim's column (the default build's is left out: time)
    for row in (
        "table INSERT, 4,000 in 500s",
        "table DELETE",
        "PacketOut->PacketIn, 1 in flight",
        "PacketOut->PacketIn, 32 in flight",
        "counters, every cell",
    ):
        assert re.search(
            rf"^\| {re.escape(row)}[^|]* \| [\d,.]+(/s| ms).* \| {ratio}", out, re.MULTILINE
        ), f"no side-by-side row {row!r} in:\n{out}"


def _parser():
    import argparse

    ap = argparse.ArgumentParser(prog="bench x")
    side_by_side.add_options(ap, "every row", ("--grpc-addr", "--against"))
    return ap


def test_bmv2_option_with_a_switch_of_its_own_is_a_usage_error(monkeypatch, capsys):
    def never():
        raise AssertionError("find() called: the conflict was not seen")

    monkeypatch.setattr(side_by_side, "find", never)
    ap = _parser()
    assert "none of --grpc-addr, --against is given" in " ".join(ap.format_help().split())
    with pytest.raises(SystemExit) as exc:
        side_by_side.choose(ap, True, {"--grpc-addr": "h:1", "--against": None})
    assert exc.value.code == 2
    assert (
        "--bmv2 starts its own switches: not with --grpc-addr, --against" in capsys.readouterr().err
    )
    assert (
        side_by_side.choose(ap, None, {"--grpc-addr": "h:1", "--against": None}) is None
    )  # default: quietly off
    assert side_by_side.choose(ap, False, {"--grpc-addr": None, "--against": None}) is None


def test_bmv2_option_without_a_toolchain(monkeypatch, capsys):
    monkeypatch.setattr(side_by_side, "find", lambda: (None, "no BMv2 toolchain (test)"))
    ap = _parser()
    assert side_by_side.choose(ap, None, {"--grpc-addr": None}) is None
    assert "BMv2 columns absent: no BMv2 toolchain (test)" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match=r"^--bmv2: no BMv2 toolchain \(test\)$"):
        side_by_side.choose(ap, True, {"--grpc-addr": None})
