"""Bad scenario input: every case of issue 13 gets one line on stderr naming the key, exit 2,
and nothing runs (the target is never built: a hang or a 27 s MemoryError cannot start)."""

from __future__ import annotations

import math

import pytest
import yaml

from controller.cli import main
from controller.scenarios.scenario import load_scenario


def _write(tmp_path, edit) -> str:
    sc = load_scenario("lossy")
    sc.pop("_path")
    edit(sc)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(sc))
    return str(path)


def _set(path: str, value):
    def edit(sc: dict) -> None:
        *head, last = path.split(".")
        d = sc
        for k in head:
            d = d[int(k)] if isinstance(d, list) else d[k]
        if isinstance(d, list):
            d[int(last)] = value
        else:
            d[last] = value

    return edit


CASES = [
    ("zero flows", _set("flows", []), "flows"),
    ("unknown host", _set("flows.0.dst", "h9"), "flows[0].dst"),
    ("zero link speed", _set("link.speed", 0), "link.speed"),
    ("zero sample interval", _set("sample_us", 0), "sample_us"),
    ("negative sample interval", _set("sample_us", -5), "sample_us"),
    ("message 0", _set("flows.0.message", 0), "flows[0].message"),
    ("message 1 byte (a billion posts)", _set("flows.0.message", 1), "flows[0].message"),
    ("string for a number", _set("duration_us", "long"), "duration_us"),
    ("NaN", _set("warmup_us", math.nan), "warmup_us"),
    ("timeout 0", _set("nic.timeout_us", 0), "nic.timeout_us"),
    ("unknown key", _set("durration_us", 5), "durration_us"),
    ("unknown check", _set("expect.fair_shares", 0.1), "expect.fair_shares"),
    ("check value not true", _set("expect.goodput_monotone", False), "expect.goodput_monotone"),
    ("sweep out of range", _set("sweep.drop_rate", [0, 2]), "sweep.drop_rate[1]"),
    ("window 0", _set("nic.window", 0), "nic.window"),
    ("bad switch block", lambda sc: sc["switch"]["ports"][1].update(speed="fast"), "ports.1.speed"),
]


@pytest.fixture
def no_target(monkeypatch):
    """Fail the test if a run starts: a bad input must be refused before anything runs."""
    import controller.targets.p4sim as p4sim_target

    def refuse(*a, **k):
        raise AssertionError("a target was built for a bad scenario")

    monkeypatch.setattr(p4sim_target, "P4SimTarget", refuse)


@pytest.mark.parametrize(("what", "edit", "key"), CASES, ids=[c[0] for c in CASES])
def test_bad_scenario_is_one_line_exit_2(tmp_path, capsys, no_target, what, edit, key):
    path = _write(tmp_path, edit)
    assert main(["run", path, "--no-progress"]) == 2, what
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rocelab: "), err
    assert key in err and "Traceback" not in err, err


@pytest.mark.parametrize("value", ["0", "-100", "1e12", "nan"])
def test_bad_duration_option_is_exit_2(capsys, no_target, value):
    assert main(["run", "lossy", "--duration-us", value, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--duration-us" in err, err


def test_yaml_errors_give_the_line(tmp_path, capsys, no_target):
    bad = tmp_path / "syntax.yaml"
    bad.write_text("name: x\nflows: [\n")
    assert main(["run", str(bad)]) == 2
    assert f"{bad}:" in capsys.readouterr().err
    # a bad value names its line too
    path = _write(tmp_path, _set("sample_us", -5))
    line = next(
        i for i, t in enumerate(open(path).read().splitlines(), 1) if t.startswith("sample_us")
    )
    assert main(["run", path]) == 2
    assert f"{path}:{line}: sample_us" in capsys.readouterr().err


def test_extends_only_names_shipped_scenarios(tmp_path, capsys, no_target):
    path = tmp_path / "x.yaml"
    path.write_text("extends: /etc/passwd\n")
    assert main(["run", str(path)]) == 2
    assert "not a shipped scenario" in capsys.readouterr().err


def test_extends_merges_and_null_deletes():
    sc = load_scenario("incast-pfc-off")
    base = load_scenario("incast-pfc")
    assert "pfc" not in sc["switch"] and "pfc" in base["switch"]
    assert sc["flows"] == base["flows"] and sc["switch"]["buffer"] == base["switch"]["buffer"]
    assert "expect" not in sc and sc["expect_fail"] == {"zero_drops": True, "min_pauses": 2}
    assert sc["title"] != base["title"]
