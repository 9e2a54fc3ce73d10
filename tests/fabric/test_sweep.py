"""`rocelab sweep`: a small grid on a two-worker Dask LocalCluster equals the same runs made
serially, row for row, and bad --set values are one-line errors."""

from __future__ import annotations

import csv

import pytest

from controller.cli import main
from controller.fabric import sweep
from controller.fabric.scenarios import SCENARIOS


def test_scenario_names_match_the_registry():
    assert tuple(SCENARIOS) == sweep.SCENARIO_NAMES


def test_parse_sets_and_product_order():
    grid = sweep.parse_sets("deadlock", ["flows=3,4", "watchdog=0,1"])
    assert grid == {"flows": [3, 4], "watchdog": [0, 1]}
    pts = sweep.points("deadlock", grid)
    assert [(p["flows"], p["watchdog"]) for p in pts] == [(3, 0), (3, 1), (4, 0), (4, 1)]
    assert all(p["seed"] == 0 and p["duration_us"] == 400 for p in pts)  # defaults kept


@pytest.mark.parametrize(
    "sets, msg",
    [
        (["flows"], "expected KEY=V1"),
        (["nope=1"], "no parameter 'nope'"),
        (["flows=x"], "not a number"),
        (["flows=1", "flows=2"], "twice"),
        (["flows=1.5"], "not a number"),
        (["duration_us=-5"], "greater than or equal to 0"),
        (["flows=9"], "out of range"),
        (["watchdog=3"], "out of range"),
        (["seed=" + ",".join(["1"] * 101), "detect_us=" + ",".join(["10"] * 101)], "at most"),
    ],
)
def test_bad_sets_are_refused(sets, msg, capsys, tmp_path):
    argv = ["sweep", "deadlock", "--serial", "--out", str(tmp_path / "never")]
    for s in sets:
        argv += ["--set", s]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "never").exists()  # refused before anything ran or was written


@pytest.mark.slow
def test_dask_two_workers_equals_serial(tmp_path):
    grid = sweep.parse_sets("deadlock", ["flows=3,4", "duration_us=150"])
    pts = sweep.points("deadlock", grid)
    serial = sweep.run_serial("deadlock", pts)
    on_dask = sweep.run_dask("deadlock", pts, workers=2, processes=False)
    assert on_dask == serial
    # the two points really differ (a sweep that returned one row twice would not)
    assert serial[0]["deadlocked"] == 0 and serial[1]["deadlocked"] == 1
    assert serial[0]["goodput_gbps"] > 0 and serial[1]["goodput_gbps"] == 0
    # the CLI writes the CSV and the plot
    out = tmp_path / "sw"
    assert (
        main(
            [
                "sweep",
                "deadlock",
                "--serial",
                "--set",
                "flows=3,4",
                "--set",
                "duration_us=150",
                "--metric",
                "goodput_gbps",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [r["flows"] for r in rows] == ["3", "4"]
    assert float(rows[0]["goodput_gbps"]) == pytest.approx(serial[0]["goodput_gbps"])
    assert (out / "goodput_gbps_vs_flows.png").stat().st_size > 1000
    # the Parquet file is the same table, typed: read back, it equals the CSV cell for cell
    pq_rows = _parquet_rows(out / "sweep.parquet")
    assert pq_rows == sweep.normalise(serial)
    assert _as_csv_cells(pq_rows) == rows


def _parquet_rows(path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _as_csv_cells(rows: list[dict]) -> list[dict]:
    """What csv.DictWriter makes of each value (None is an empty cell)."""
    return [{k: "" if v is None else str(v) for k, v in r.items()} for r in rows]


def test_parquet_equals_csv_with_mixed_and_missing_cells(tmp_path):
    """A metric that is -1 (int) in one row and a float in another becomes one float column
    in both files; a string column and a cell missing from one row survive both ways."""
    rows = [
        {"flows": 3, "t_us": -1, "cycle": "", "gbps": 9.259259259259259},
        {"flows": 4, "t_us": 150.25, "cycle": "r0:2:3 r1:2:3", "gbps": 0.0, "extra": 7},
    ]
    norm = sweep.normalise(rows)
    assert norm[0]["t_us"] == -1.0 and isinstance(norm[0]["t_us"], float)
    assert norm[0]["extra"] is None and isinstance(norm[1]["flows"], int)
    sweep.write_csv(norm, tmp_path / "s.csv")
    sweep.write_parquet(norm, tmp_path / "s.parquet")
    back = _parquet_rows(tmp_path / "s.parquet")
    assert back == norm
    assert _as_csv_cells(back) == list(csv.DictReader((tmp_path / "s.csv").open()))
    import pyarrow.parquet as pq

    types = {f.name: str(f.type) for f in pq.read_schema(tmp_path / "s.parquet")}
    assert types == {
        "flows": "int64",
        "t_us": "double",
        "cycle": "string",
        "gbps": "double",
        "extra": "int64",
    }


def test_grid_file_is_typed_and_set_adds_to_it(tmp_path, capsys):
    example = str(
        sweep.Path(__file__).resolve().parents[2] / "controller/examples/sweep_deadlock.yaml"
    )
    scenario, grid, metric, x = sweep.load_grid(example)
    assert (scenario, metric, x) == ("deadlock", "goodput_gbps", "flows")
    assert grid == {"flows": [3, 4], "watchdog": [0, 1], "duration_us": [400]}
    assert sweep.parse_sets(scenario, ["watchdog=2"], grid)["watchdog"] == [2]
    for text, words in (
        ("scenario: deadlock\ngrid: {flows: [3, 9]}\n", ":2: grid: flows: 9 is out of range 1..4"),
        ("scenario: deadlock\ngrid: {nope: [1]}\n", "has no parameter 'nope'"),
        ("scenario: deadlock\ngrid: {flows: [3, 3]}\n", "given twice"),
        ("scenario: deadlock\ngrid: {flows: [.inf]}\n", "grid.flows[0]"),
        ("scenario: mars\n", "scenario"),
        ("grid: [1\n", "YAML syntax"),
    ):
        f = tmp_path / "g.yaml"
        f.write_text(text)
        assert main(["sweep", "--grid", str(f), "--serial", "--out", str(tmp_path / "never")]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "Traceback" not in err, (text, err)
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_declared_metrics_are_what_a_run_returns(name):
    """params.METRICS (what --metric is checked against before a sweep) against a real run
    at the shortest duration: every key returned matches one pattern, every pattern is used."""
    import re

    from controller.fabric.params import METRICS, bounds

    row = SCENARIOS[name].run(duration_us=bounds("duration_us")[0])
    patterns = METRICS[name]
    assert all(any(re.fullmatch(p, k) for p in patterns) for k in row), sorted(row)
    assert all(any(re.fullmatch(p, k) for k in row) for p in patterns), patterns


@pytest.mark.parametrize("opt", ["--metric", "--x"])
def test_unknown_metric_fails_before_any_point(opt, tmp_path, capsys):
    """A typo in --metric or --x: one line, exit 2, and nothing computed (no journal, no
    output directory): the check runs before the points (it used to fail at the plot)."""
    out = tmp_path / "out"
    argv = ["sweep", "spray", "--serial", "--set", "flows=1", "--out", str(out), opt, "nope"]
    if opt == "--x":
        argv += ["--metric", "goodput_gbps"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{opt} nope: not a parameter or metric of spray" in err, err
    assert not out.exists()
    assert (
        main(
            [
                "sweep",
                "spray",
                "--serial",
                "--set",
                "flows=1",
                "--out",
                str(out),
                "--metric",
                "innocent0_gbps",
            ]
        )
        == 2
    )  # storm's metric, not spray's
    capsys.readouterr()
