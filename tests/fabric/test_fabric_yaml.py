"""The fabric scenario files (controller/scenarios/fabric-*.yaml) through `rocelab run`'s
path: each passes its checks and each negative control fails the check it names, on data.
One test per family, so the memoised runs a control shares with its scenario run once."""

from __future__ import annotations

import json
import re

import pytest

from controller.cli import main
from controller.scenarios.scenario import list_scenarios, load_scenario, run_scenario
from controller.scenarios.schema import ScenarioError

pytestmark = pytest.mark.slow

FAMILIES = {
    "fabric-spreading": ["fabric-spreading-no-incast", "fabric-spreading-no-dcqcn"],
    "fabric-storm": ["fabric-storm-calm", "fabric-storm-no-watchdog"],
    "fabric-deadlock": ["fabric-deadlock-acyclic", "fabric-deadlock-no-watchdog"],
    "fabric-spray": ["fabric-spray-gbn", "fabric-spray-ecmp-only"],
}


def test_every_fabric_file_is_in_a_family():
    shipped = {n for n in list_scenarios() if "fabric" in load_scenario(n)}
    assert shipped == set(FAMILIES) | {c for cs in FAMILIES.values() for c in cs}


def _run(name: str):
    res = run_scenario(load_scenario(name), None, progress=False)
    assert res.verdicts, name
    return res


@pytest.mark.parametrize("family", list(FAMILIES))
def test_fabric_scenario_and_its_controls(family):
    res = _run(family)
    assert res.ok, [(v.name, v.detail) for v in res.verdicts if not v.ok]
    assert not any(v.name.startswith("control:") for v in res.verdicts)
    for control in FAMILIES[family]:
        c = _run(control)
        assert c.ok, [(v.name, v.detail) for v in c.verdicts]
        # every verdict of a control is a predicted failure on real data
        assert all(
            v.name.startswith("control:") and "fails as the control predicts" in v.detail
            for v in c.verdicts
        ), control


def test_rocelab_run_reports_the_watchdog_counters(tmp_path, capsys):
    """`rocelab run fabric-storm --out`: the text report has the watchdog's table per queue
    and telemetry_watchdog.json its pfcwd_* counters next to the switch's own; the runs
    without a watchdog show none. And a control whose check passes is a failure."""
    assert main(["run", "fabric-storm", "--out", str(tmp_path), "--no-progress"]) == 0
    cap = capsys.readouterr()
    text = cap.out
    # which p4sim the switches run, as a one-switch run says it (issue 34)
    assert re.search(r"^rocelab: p4sim profile (fast|reference)", cap.err, re.M), cap.err
    assert "PFC watchdog per queue:" in text
    tel = json.loads((tmp_path / "telemetry_watchdog.json").read_text())
    hit = [(sw, r) for sw, js in tel.items() for r in js["per_port_class"] if r["pfcwd_detected"]]
    # one storm queue: leaf0's port toward the stuck NIC h0_0 (port 1), class 3
    assert [(sw, r["port"], r["class"]) for sw, r in hit] == [("leaf0", 1, 3)]
    row = hit[0][1]
    assert row["pfcwd_ignored"] > 0 and row["pfcwd_restored"] == 0  # stuck to the end
    # the XOFFs before the trip reached the switch's MAC (its pfc_rx); those after it the
    # port layer ignored, so the switch never counted them
    assert 0 < row["pfc_rx"] < row["pfcwd_ignored"]
    calm = json.loads((tmp_path / "telemetry_fault.json").read_text())
    assert all(
        r["pfcwd_detected"] == r["pfcwd_ignored"] == 0
        for js in calm.values()
        for r in js["per_port_class"]
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["ok"] and {r["label"] for r in summary["runs"]} == {"calm", "fault", "watchdog"}
    wd = next(r for r in summary["runs"] if r["label"] == "watchdog")
    assert wd["metrics"]["pfcwd_ignored_frames"] == row["pfcwd_ignored"]

    # fabric-storm-calm's prediction turned round (its "fault" run with the stuck NIC
    # again, the runs above): the storm check passes, so the control PASSED and fails
    sc = load_scenario("fabric-storm-calm")
    sc["fabric"]["runs"]["fault"]["stuck"] = 1
    res = run_scenario(sc, None, progress=False)
    assert not res.ok and "PASSED, but this control must fail it" in res.verdicts[0].detail


def _bad(tmp_path, text: str) -> str:
    p = tmp_path / "f.yaml"
    p.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(str(p))
    return str(exc.value)


def test_bad_fabric_files_are_refused_by_key(tmp_path):
    runs = "fabric: {scenario: storm, runs: {a: {stuck: 1}}}\n"
    assert "fabric.scenario" in _bad(
        tmp_path, "fabric: {scenario: tor, runs: {a: {}}}\nexpect: {fabric_storm: true}\n"
    )
    assert "fabric.runs.a.flows" in _bad(
        tmp_path, "fabric: {scenario: storm, runs: {a: {flows: 2}}}\nexpect: {fabric_storm: true}\n"
    )
    assert "fabric.runs.a.watchdog" in _bad(
        tmp_path,
        "fabric: {scenario: storm, runs: {a: {watchdog: 3}}}\nexpect: {fabric_storm: true}\n",
    )
    assert "fabric.runs.a.stuck" in _bad(
        tmp_path,
        "fabric: {scenario: storm, runs: {a: {stuck: true}}}\nexpect: {fabric_storm: true}\n",
    )
    # a one-switch check or key in a fabric file, a fabric check in a one-switch file
    assert "expect.zero_drops" in _bad(tmp_path, runs + "expect: {zero_drops: true}\n")
    assert "flows" in _bad(tmp_path, runs + "flows: []\nexpect: {fabric_storm: true}\n")
    assert "expect" in _bad(tmp_path, runs)  # no check at all
    assert "fabric.runs" in _bad(
        tmp_path, "fabric: {scenario: storm, runs: {}}\nexpect: {fabric_storm: true}\n"
    )
    one = load_scenario("incast-pfc")
    one["expect"] = {"fabric_storm": True}
    from controller.scenarios.schema import validate

    with pytest.raises(ScenarioError, match="expect.fabric_storm"):
        validate(one)


def test_bad_fabric_run_options_are_usage_errors(capsys):
    assert main(["run", "fabric-storm", "--duration-us", "5"]) == 2
    assert main(["run", "fabric-storm", "--seed", str(2**31)]) == 2
    assert main(["run", "fabric-storm", "--program", "x.p4"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 3
