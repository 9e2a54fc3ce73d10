"""The real compiler on the program: p4c's BMv2 back end (p4c-bm2-ss, found by
controller.targets.toolchain) compiles p4src/roce_switch.p4 as it is, with no warning, and
names every P4Runtime object as p4sim does. Part of the BMv2 tier (`make test` runs it with
--target bmv2 when a toolchain is found)."""

from __future__ import annotations

import json

import pytest
from google.protobuf import text_format

from controller.targets import DEFAULT_PROGRAM, from_p4
from controller.targets.toolchain import compile_p4, toolchain
from p4rtproto import p4info_pb2

pytestmark = pytest.mark.only_target("bmv2")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    why = toolchain().p4c_problem()
    if why:
        pytest.skip(f"needs p4c: {why}")
    return compile_p4(DEFAULT_PROGRAM, tmp_path_factory.mktemp("p4c"))


def test_p4c_compiles_the_program_with_no_warning(compiled):
    assert "warning" not in compiled.stderr.lower(), compiled.stderr
    assert "error" not in compiled.stderr.lower(), compiled.stderr
    bmv2 = json.loads(compiled.bmv2_json.read_text())
    assert bmv2["program"].endswith("roce_switch.p4") and bmv2["pipelines"]


def _objects(p4info: p4info_pb2.P4Info) -> set[tuple[str, str, int]]:
    """(kind, name, id) of every named object of a P4Info."""
    out = set()
    for fd, value in p4info.ListFields():
        if fd.is_repeated:
            out |= {(fd.name, o.preamble.name, o.preamble.id) for o in value}
    return out


def test_p4c_and_p4sim_give_every_object_the_same_name_and_id(compiled):
    ref = text_format.Parse(compiled.p4info.read_text(), p4info_pb2.P4Info())
    ours = p4info_pb2.P4Info()
    ours.ParseFromString(from_p4(DEFAULT_PROGRAM).p4info)
    assert len(_objects(ref)) > 50  # tables, actions, counters, registers, packet metadata
    assert _objects(ours) == _objects(ref)
