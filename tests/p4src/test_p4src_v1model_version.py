"""roce_switch.p4 sets the v1model version it needs itself, so real p4c compiles it as is.

p4c's v1model.p4 defaults V1MODEL_VERSION to 20180101, where `counter` takes no index type
parameter: `counter<bit<32>>` is refused there ("Type counter has 0 type parameter(s), but
it is specialized with 1"). p4sim's v1model.p4 has the same default, so the program without
its `#define` line must fail in p4sim too, at the first `counter<bit<32>>`.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from p4sim.check import P4TypeError
from p4sim.lower import load_program

ROOT = Path(__file__).resolve().parents[2]
P4SRC = ROOT / "p4src"
DEFINE = re.compile(r"^#define V1MODEL_VERSION 20200408\b.*$", re.M)


def test_program_defines_the_version_before_including_v1model() -> None:
    text = (P4SRC / "roce_switch.p4").read_text()
    m = DEFINE.search(text)
    assert m, "roce_switch.p4 must #define V1MODEL_VERSION 20200408 itself"
    assert m.start() < text.index("#include <v1model.p4>")


def test_without_the_define_p4sim_refuses_it_as_p4c_does(tmp_path: Path) -> None:
    shutil.copytree(P4SRC / "include", tmp_path / "include")
    text = (P4SRC / "roce_switch.p4").read_text()
    stripped, n = DEFINE.subn("", text)
    assert n == 1
    (tmp_path / "roce_switch.p4").write_text(stripped)
    with pytest.raises(P4TypeError) as ei:
        load_program(str(tmp_path / "roce_switch.p4"))
    e = ei.value
    assert Path(e.span.file).name == "telemetry.p4"
    line = (tmp_path / "include" / "telemetry.p4").read_text().splitlines()[e.span.line - 1]
    assert line[e.span.column - 1 :].startswith("counter<bit<32>>")
    assert "Type counter has 0 type parameter(s), but it is specialized with 1" in e.headline()
