"""Config validation (`rocelab check`): messages name the key, arithmetic is shown,
exit codes 0/1/2; units; compiling a config into entities the real program accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from controller.config import (
    ConfigError,
    check,
    headroom_needed,
    load_yaml,
    parse_config,
    parse_size,
    parse_speed,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "controller" / "examples"


def findings(data: dict) -> dict[str, str]:
    cfg, errors = parse_config(data)
    return {f.key: f.message for f in check(cfg, errors) if f.level == "error"}


BASE = {
    "ports": {1: {"speed": "10G", "cable_m": 3}, 2: {"speed": "10G", "cable_m": 3}},
    "hosts": {
        "h1": {"port": 1, "mac": "02:00:00:00:00:01", "ip": "10.0.0.1"},
        "h2": {"port": 2, "mac": "02:00:00:00:00:02", "ip": "10.0.0.2"},
    },
}


def test_units():
    assert parse_size("5KB", "k").value == 5000
    assert parse_size("200KiB", "k").value == 200 * 1024
    s = parse_size("40 pkts", "k")
    assert s.packets and s.to_packets(1098) == 40 and s.to_bytes(1098) == 40 * 1098
    assert parse_size("5KB", "k").to_packets(1098) == 5  # ceil(5000 / 1098)
    assert parse_speed("25G", "s") == 25e9 and parse_speed("100Gbps", "s") == 100e9
    with pytest.raises(ConfigError, match="ecn.kmin"):
        parse_size("lots", "ecn.kmin")


def test_headroom_arithmetic():
    need, lines = headroom_needed(100e9, 100, 1500, 3840)
    # frames on the wire carry 8 B preamble/SFD + 12 B IFG: 1518 + 20 (frame being sent)
    # + 64 + 20 (PFC) + 2*100 m*5 ns/m*100 Gb/s/8 = 12500 + 3840 bits = 480 + 1538
    assert need == 1538 + 84 + 12500 + 480 + 1538 == 16140
    assert any("12500 B" in line for line in lines) and lines[-1] == "= 16140 B needed"


def test_headroom_default_response_is_8023_annex_31b():
    # 802.3 Annex 31B: 394 quanta x 512 = 201,728 bit times = 25,216 B at 100G (not 3840 bits)
    need, lines = headroom_needed(100e9, 100, 1500)
    assert need == 1538 + 84 + 12500 + 25216 + 1538 == 40876
    assert any("201728 bit times (802.3 Annex 31B at 100 Gb/s)" in line for line in lines)
    # 10G: 60 quanta = 30,720 bit times = 3840 B; 3 m of cable = 30 ns = 37.5 -> 38 B
    assert headroom_needed(10e9, 3, 1500)[0] == 1538 + 84 + 38 + 3840 + 1538 == 7038
    # 50G is not listed: the next listed speed's (100G) bound, never a smaller one
    assert headroom_needed(50e9, 0, 1500)[0] == 1538 + 84 + 0 + 25216 + 1538


def test_good_config_has_no_errors():
    assert findings(BASE) == {}
    cfg, errors = parse_config(load_yaml(EXAMPLES / "lab.yaml"))
    assert [f for f in check(cfg, errors) if f.level == "error"] == []


@pytest.mark.parametrize(
    "patch,key,words",
    [
        ({"ports": {1: {"mtu": 1500}, 2: {"mtu": 9000}}}, "ports.1.mtu", "differs"),
        ({"roce_mtu": 4096}, "ports.1.mtu", "does not fit"),
        (
            {
                "ecn": {
                    "profiles": {"p": {"kmin": "200KB", "kmax": "5KB"}},
                    "apply": [{"ports": "all", "class": 3, "profile": "p"}],
                }
            },
            "ecn.profiles.p.kmin",
            "Kmin must be < Kmax",
        ),
        (
            {"pfc": {"classes": [3], "xoff": "10 pkts", "xon": "20 pkts", "headroom": "10KB"}},
            "pfc.xon",
            "XON must be < XOFF",
        ),
        (
            {"pfc": {"classes": [3], "xoff": "40 pkts", "xon": "20 pkts", "headroom": "1KB"}},
            "pfc.headroom (port 1, class 3)",
            "1.0 KB < 7.0 KB needed",
        ),
        (
            {"ecn": {"profiles": {"p": {"kmin": "5KB", "kmax": "200KB", "pmax": 2}}}},
            "ecn.profiles.p.pmax",
            "(0, 1]",
        ),
        ({"bogus": 1}, "bogus", "unknown key"),
        ({"ports": {1: {"speed": "fast"}}}, "ports.1.speed", "expected a speed"),
    ],
)
def test_errors_name_the_key(patch, key, words):
    data = json.loads(json.dumps(BASE))
    data = {**data, **{k: v for k, v in patch.items() if k != "ports"}}
    if "ports" in patch:
        data["ports"] = {int(p): {**BASE["ports"][int(p)], **v} for p, v in patch["ports"].items()}
        data["ports"].setdefault(2, BASE["ports"][2])
    found = findings(data)
    assert key in found, found
    assert words in found[key]


def test_cli_exit_codes_and_json(tmp_path, capsys):
    assert main(["check", str(EXAMPLES / "lab.yaml")]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "= 7038 B needed" in out  # the arithmetic is shown
    assert main(["check", str(EXAMPLES / "bad.yaml")]) == 1
    out = capsys.readouterr().out
    assert "ERROR pfc.xon" in out and "ERROR hosts.h2.port: port 3 is not in ports" in out
    assert main(["check", "--json", str(EXAMPLES / "bad.yaml")]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and any(f["key"] == "ecn.profiles.bad.kmin" for f in doc["findings"])
    bad_yaml = tmp_path / "broken.yaml"
    bad_yaml.write_text("ports:\n  1: {speed: 10G\n")
    assert main(["check", str(bad_yaml)]) == 1
    out = capsys.readouterr().out
    assert f"{bad_yaml}:" in out and "YAML syntax" in out
    assert main(["check", str(tmp_path / "missing.yaml")]) == 2
    capsys.readouterr()
    assert (
        main(["check"]) == 2
    )  # argparse's error returned as the exit code (p4sim.cliargs.parse_argv)
    assert capsys.readouterr().err.count("\n") == 1


def test_broken_scenario_file_is_a_located_error(tmp_path, capsys):
    bad = tmp_path / "s.yaml"
    bad.write_text("name: s\nflows:\n  - {src: h1, dst: h3\n")
    assert main(["run", str(bad)]) == 2  # bad scenario input is bad usage (issue 13)
    err = capsys.readouterr().err
    assert f"{bad}:" in err and "YAML syntax" in err and "Traceback" not in err
    assert main(["run", "no-such-scenario"]) == 2
    assert "known: " in capsys.readouterr().err
