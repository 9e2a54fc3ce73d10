"""`p4sim` command line: exit codes and one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4sim.cli import main
from tests.p4sim.p4sim_helpers import program

ROOT = Path(__file__).resolve().parents[2]


def test_stf_pass_and_fail(tmp_path, capsys):
    prog = program(tmp_path, ig="hdr.data.a = hdr.data.a + 1;")
    good = tmp_path / "ok.stf"
    good.write_text(
        "# comment\npacket 0 0000000000aa0000000000bb1234 01020003 00000004\n"
        "expect 1 0000000000aa0000000000bb1234 02020003 0000****$\n"
    )
    assert main(["stf", prog, str(good)]) == 0
    assert "PASS" in capsys.readouterr().out
    bad = tmp_path / "bad.stf"
    bad.write_text(
        "packet 0 0000000000aa0000000000bb1234 01020003 00000004\n"
        "expect 1 0000000000aa0000000000bb1234 01020003 00000004$\n"
        "expect 1 00\n"
    )
    assert main(["stf", prog, str(bad)]) == 1
    out = capsys.readouterr().out
    assert "differs" in out and "never came" in out


def test_stf_bad_command_is_usage_error(tmp_path, capsys):
    prog = program(tmp_path)
    bad = tmp_path / "bad.stf"
    bad.write_text("frobnicate 1 2\n")
    # strict: an unknown command is a usage error (p4c's runner, the default, ignores it)
    assert main(["stf", "--strict", prog, str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{bad}:1:") and "frobnicate" in err and "\n" not in err
    # a command with a bad argument is a usage error in both modes
    bad.write_text("add nosuch a:1 x()\n")
    assert main(["stf", prog, str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{bad}:1:") and "nosuch" in err and "\n" not in err


def test_p4_error_is_one_line_with_location(tmp_path, capsys):
    prog = program(tmp_path, ig="hdr.data.zz = 1;")
    assert main(["compile", "--emit", "python", prog]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(prog + ":") and "no field 'zz'" in err


def test_compile_emits_python(tmp_path, capsys):
    prog = program(tmp_path)
    assert main(["compile", "--emit", "python", prog]) == 0
    out = capsys.readouterr().out
    assert "def P_P_" in out and "class H_eth_t" in out
    compile(out, "generated", "exec")


def test_bad_usage(capsys):
    assert main(["nosuchcommand"]) == 2
    assert main(["stf"]) == 2


def test_p4info_text_and_binary(tmp_path, capsys):
    from p4rtproto import p4info_pb2

    prog = str(ROOT / "p4src" / "roce_switch.p4")
    out = tmp_path / "p4info.bin"
    assert (
        main(["p4info", prog, "-I", str(ROOT / "p4src"), "--format", "binary", "-o", str(out)]) == 0
    )
    info = p4info_pb2.P4Info.FromString(out.read_bytes())
    names = {t.preamble.name for t in info.tables}
    assert "RoceIngress.fwd.ipv4_lpm" in names
    assert main(["p4info", prog, "-I", str(ROOT / "p4src")]) == 0
    assert "RoceIngress.fwd.ipv4_lpm" in capsys.readouterr().out


def test_compile_emits_ir_and_ast(tmp_path, capsys):
    prog = program(tmp_path)
    assert main(["compile", "--emit", "ir", prog]) == 0
    out = capsys.readouterr().out
    assert "header data_t (64 bits)" in out and "pipeline:" in out
    assert main(["compile", "--emit", "ast", prog]) == 0
    assert "HeaderDecl" in capsys.readouterr().out


def test_missing_main_is_located_in_the_users_file(tmp_path, capsys):
    src = tmp_path / "nomain.p4"
    src.write_text("#include <core.p4>\n#include <v1model.p4>\nheader h_t { bit<8> a; }\n")
    assert main(["compile", "--emit", "ir", str(src)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"{src}:3:1: error: the program has no `main` package instantiation"
    )


def test_warnings_are_shown_and_not_fatal(tmp_path, capsys):
    src = tmp_path / "warn.p4"
    src.write_text("#include <core.p4>\n#warning look here\n")
    assert main(["compile", "--emit", "ast", str(src)]) == 0
    assert f"{src}:2:1: warning: look here" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["env", "flag"])
def test_a_bad_profile_is_one_line_exit_2_in_every_tool(tmp_path, how):
    # P4SIM_PROFILE is read when p4sim.runtime.tables is imported and when a switch is built;
    # the --profile flags take only the two names: either way each tool says so in one line,
    # before it starts anything
    env = {**os.environ, "P4SIM_PROFILE": "turbo"} if how == "env" else dict(os.environ)
    flag = ["--profile", "turbo"] if how == "flag" else []
    prog = program(tmp_path)
    stf = tmp_path / "empty.stf"
    stf.write_text("")
    for cmd in (
        [sys.executable, "-m", "p4sim.cli", *flag, "stf", prog, str(stf)],
        [
            sys.executable,
            "-m",
            "p4sim.server_cli",
            *flag,
            "--no-p4",
            "--grpc-server-addr",
            "127.0.0.1:0",
        ],
        [
            sys.executable,
            "-m",
            "controller.cli",
            *flag,
            "run",
            "incast-dcqcn",
            "--out",
            str(tmp_path / "out"),
        ],
    ):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        last = r.stderr.strip().splitlines()[-1:]
        assert r.returncode == 2 and "Traceback" not in r.stderr, (cmd, r.stderr)
        want = (
            "P4SIM_PROFILE='turbo': expected one of fast, reference" if how == "env" else "'turbo'"
        )
        assert last and want in last[0], (cmd, r.stderr)


@pytest.mark.parametrize("profile", ["fast", "reference"])
def test_version_says_which_pieces_run(profile):
    env = {k: v for k, v in os.environ.items() if k != "P4SIM_PROFILE"}
    for tool in ("p4sim.cli", "p4sim.server_cli"):
        r = subprocess.run(
            [sys.executable, "-m", tool, "--profile", profile, "--version"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr
        line = r.stdout.strip()
        if profile == "reference":
            assert "profile reference (python backend, python write path" in line, line
            assert tool == "p4sim.cli" or line.endswith("grpc-python front end)"), line
        else:  # what can be built here runs; what cannot is said in one line and runs Python
            from p4sim.compiled.build import unavailable_reason
            from p4sim.server.native import unavailable_reason as native_unavailable

            pieces = (
                "python backend, python write path"
                if unavailable_reason()
                else "compiled backend, compiled write path"
            )
            assert f"profile fast ({pieces}" in line, (line, r.stderr)
            front = "grpc-python" if native_unavailable() else "native"
            assert tool == "p4sim.cli" or line.endswith(f"{front} front end)"), (line, r.stderr)
