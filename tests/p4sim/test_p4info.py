"""ProgramModel -> P4Info: p4c's id scheme, contents, file formats, p4runtime-shell."""

from __future__ import annotations

import pytest

from p4rtproto import p4info_pb2
from p4sim.model import (
    ActionInfo,
    ActionRef,
    ControllerHeaderField,
    ControllerHeaderInfo,
    CounterInfo,
    DigestInfo,
    KeyField,
    MeterInfo,
    Param,
    ProgramModel,
    RegisterInfo,
    TableInfo,
)
from p4sim.p4info import (
    P4InfoError,
    jenkins_one_at_a_time,
    p4info_from_model,
    read_p4info,
    shortest_unique_suffixes,
    write_p4info,
)


def ref_hash(name: str) -> int:
    """Jenkins one-at-a-time, written independently of p4sim.p4info (mod 2**32 steps)."""
    m = 2**32
    h = 0
    for ch in name.encode():
        h = (h + ch) % m
        h = (h + h * 1024) % m
        h = h ^ (h // 64)
    h = (h + h * 8) % m
    h = h ^ (h // 2048)
    h = (h + h * 32768) % m
    return h


def ref_id(prefix: int, name: str) -> int:
    return prefix * 2**24 + ref_hash(name) % 2**24


def test_hash_matches_reference_and_p4c_ids():
    for name in ["", "a", "MyIngress.ipv4_lpm", "NoAction", "x" * 100, "ünïcode.t"]:
        assert jenkins_one_at_a_time(name.encode()) == ref_hash(name)
    # ids printed by p4c in the P4 tutorials' basic.p4info.txt
    assert ref_id(0x02, "MyIngress.ipv4_lpm") == 37375156
    assert ref_id(0x01, "MyIngress.ipv4_forward") == 28792405
    assert ref_id(0x01, "NoAction") == 21257015
    assert ref_id(0x01, "MyIngress.drop") == 25652968


def model() -> ProgramModel:
    m = ProgramModel(source="/x/roce_switch.p4")
    m.actions = {
        "NoAction": ActionInfo("NoAction"),
        "MyIngress.drop": ActionInfo("MyIngress.drop", annotations=('@name("drop")',)),
        "MyIngress.fwd": ActionInfo(
            "MyIngress.fwd", params=(Param("port", 9, 1), Param("dmac", 48, 2))
        ),
        "MyEgress.mark": ActionInfo("MyEgress.mark", id=0x01000077),
        "MyEgress.drop": ActionInfo("MyEgress.drop", id=0x55),
    }
    m.tables = {
        "MyIngress.fwd_table": TableInfo(
            "MyIngress.fwd_table",
            keys=(
                KeyField("hdr.eth.dst", "exact", 48, 1),
                KeyField("hdr.ipv4.dst", "lpm", 32, 2),
                KeyField("meta.tc", "ternary", 3, 3),
                KeyField("sm.ingress_port", "range", 9, 4),
                KeyField("meta.flag", "optional", 1, 5),
            ),
            actions=(
                ActionRef("MyIngress.fwd", "TABLE_ONLY"),
                ActionRef("MyIngress.drop"),
                ActionRef("NoAction", "DEFAULT_ONLY"),
            ),
            default_action="MyIngress.fwd",
            default_params=(3, 0x0A0B),
            size=512,
            direct_counter="MyIngress.fwd_counter",
            direct_meter="MyIngress.fwd_meter",
        ),
        "MyEgress.t": TableInfo(
            "MyEgress.t",
            actions=(ActionRef("MyEgress.mark"),),
            default_action="MyEgress.mark",
            const_default_action=True,
            const_entries=True,
            initial_entries=True,
            annotations=("@my_tag",),
        ),
    }
    m.counters = {
        "MyIngress.port_pkts": CounterInfo("MyIngress.port_pkts", unit="packets_and_bytes", size=64)
    }
    m.direct_counters = {
        "MyIngress.fwd_counter": CounterInfo(
            "MyIngress.fwd_counter", unit="packets", table="MyIngress.fwd_table"
        )
    }
    m.meters = {"MyIngress.m": MeterInfo("MyIngress.m", unit="packets", size=16)}
    m.direct_meters = {
        "MyIngress.fwd_meter": MeterInfo("MyIngress.fwd_meter", table="MyIngress.fwd_table")
    }
    m.registers = {"MyEgress.r": RegisterInfo("MyEgress.r", bitwidth=19, size=8)}
    m.controller_headers = {
        "packet_in_h": ControllerHeaderInfo(
            "packet_in_h",
            kind="packet_in",
            fields=(
                ControllerHeaderField("ingress_port", 9, 1),
                ControllerHeaderField("_pad", 7, 2),
            ),
        ),
        "packet_out_h": ControllerHeaderInfo(
            "packet_out_h", kind="packet_out", fields=(ControllerHeaderField("egress_port", 9, 1),)
        ),
    }
    m.digests = {"learn_t": DigestInfo("learn_t", fields=(("src", 48), ("port", 9)))}
    return m


def by_name(items, name):
    found = [x for x in items if x.preamble.name == name]
    assert len(found) == 1, name
    return found[0]


def test_ids_follow_p4c_scheme_and_user_ids_win():
    info = p4info_from_model(model())
    acts = {a.preamble.name: a.preamble.id for a in info.actions}
    assert acts["NoAction"] == ref_id(0x01, "NoAction")
    assert acts["MyIngress.fwd"] == ref_id(0x01, "MyIngress.fwd")
    assert acts["MyEgress.mark"] == 0x01000077  # @id with its prefix
    assert acts["MyEgress.drop"] == 0x01000055  # @id without prefix gets one
    tables = {t.preamble.name: t.preamble.id for t in info.tables}
    assert tables == {
        "MyIngress.fwd_table": ref_id(0x02, "MyIngress.fwd_table"),
        "MyEgress.t": ref_id(0x02, "MyEgress.t"),
    }
    assert info.counters[0].preamble.id == ref_id(0x12, "MyIngress.port_pkts")
    assert info.direct_counters[0].preamble.id == ref_id(0x13, "MyIngress.fwd_counter")
    assert info.meters[0].preamble.id == ref_id(0x14, "MyIngress.m")
    assert info.direct_meters[0].preamble.id == ref_id(0x15, "MyIngress.fwd_meter")
    assert info.registers[0].preamble.id == ref_id(0x16, "MyEgress.r")
    assert info.digests[0].preamble.id == ref_id(0x17, "learn_t")
    cpm = {c.preamble.name: c.preamble.id for c in info.controller_packet_metadata}
    # p4c: the id hashes the header type's name; the preamble name is the annotation value
    assert cpm == {
        "packet_in": ref_id(0x04, "packet_in_h"),
        "packet_out": ref_id(0x04, "packet_out_h"),
    }


def test_collision_probes_linearly_in_sorted_order():
    m = ProgramModel(source="p.p4")
    taken = ref_id(0x01, "C.a")
    m.actions = {
        "C.b": ActionInfo("C.b"),
        "C.user": ActionInfo("C.user", id=taken),  # occupies C.a's natural id
        "C.a": ActionInfo("C.a"),
    }
    info = p4info_from_model(m)
    ids = {a.preamble.name: a.preamble.id for a in info.actions}
    assert ids["C.user"] == taken
    assert ids["C.a"] == 0x01000000 | ((ref_hash("C.a") + 1) % 2**24)
    assert ids["C.b"] == ref_id(0x01, "C.b")


def test_bad_user_ids():
    m = ProgramModel(source="p.p4")
    m.actions = {"a": ActionInfo("a", id=0x02000001)}
    with pytest.raises(P4InfoError, match="wrong 8-bit prefix"):
        p4info_from_model(m)
    m.actions = {"a": ActionInfo("a", id=7), "b": ActionInfo("b", id=0x01000007)}
    with pytest.raises(P4InfoError, match="assigned to multiple declarations"):
        p4info_from_model(m)
    m.actions = {}
    m.tables = {"t": TableInfo("t", actions=(ActionRef("missing"),))}
    with pytest.raises(P4InfoError, match="action 'missing' is not in the program model"):
        p4info_from_model(m)


def test_aliases_are_shortest_unique_suffixes():
    got = shortest_unique_suffixes(
        ["MyIngress.t", "MyEgress.t", "MyIngress.fwd", "NoAction", "a.b.c", "d.b.c", ".top"]
    )
    assert got == {
        "MyIngress.t": "MyIngress.t",
        "MyEgress.t": "MyEgress.t",
        "MyIngress.fwd": "fwd",
        "NoAction": "NoAction",
        "a.b.c": "a.b.c",
        "d.b.c": "d.b.c",
        "top": "top",
    }
    info = p4info_from_model(model())
    assert by_name(info.actions, "MyIngress.fwd").preamble.alias == "fwd"
    assert by_name(info.actions, "MyIngress.drop").preamble.alias == "MyIngress.drop"
    assert by_name(info.tables, "MyEgress.t").preamble.alias == "t"


def test_table_contents():
    info = p4info_from_model(model())
    t = by_name(info.tables, "MyIngress.fwd_table")
    MF = p4info_pb2.MatchField
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in t.match_fields] == [
        (1, "hdr.eth.dst", 48, MF.EXACT),
        (2, "hdr.ipv4.dst", 32, MF.LPM),
        (3, "meta.tc", 3, MF.TERNARY),
        (4, "sm.ingress_port", 9, MF.RANGE),
        (5, "meta.flag", 1, MF.OPTIONAL),
    ]
    AR = p4info_pb2.ActionRef
    assert [(r.id, r.scope, list(r.annotations)) for r in t.action_refs] == [
        (ref_id(1, "MyIngress.fwd"), AR.TABLE_ONLY, ["@tableonly"]),
        (ref_id(1, "MyIngress.drop"), AR.TABLE_AND_DEFAULT, []),
        (ref_id(1, "NoAction"), AR.DEFAULT_ONLY, ["@defaultonly"]),
    ]
    assert t.size == 512 and not t.is_const_table and t.const_default_action_id == 0
    assert list(t.direct_resource_ids) == [
        ref_id(0x13, "MyIngress.fwd_counter"),
        ref_id(0x15, "MyIngress.fwd_meter"),
    ]
    ida = t.initial_default_action
    assert ida.action_id == ref_id(1, "MyIngress.fwd")
    # at the parameter's width in bytes, as p4c 1.2.5.16 writes them (1.2.4.0: b"\x03")
    assert [(a.param_id, a.value) for a in ida.arguments] == [
        (1, b"\x00\x03"),
        (2, b"\x00\x00\x00\x00\x0a\x0b"),
    ]
    e = by_name(info.tables, "MyEgress.t")
    assert e.is_const_table and e.has_initial_entries and e.size == 1024
    assert e.const_default_action_id == 0x01000077
    assert list(e.preamble.annotations) == ["@my_tag"]


def test_other_resources():
    info = p4info_from_model(model())
    assert info.pkg_info.arch == "v1model" and info.pkg_info.name == ""  # as p4c: no @pkginfo
    fwd = by_name(info.actions, "MyIngress.fwd")
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "port", 9), (2, "dmac", 48)]
    # @name is expressed by the name itself, not repeated as an annotation
    assert list(by_name(info.actions, "MyIngress.drop").preamble.annotations) == []
    c = info.counters[0]
    assert c.spec.unit == p4info_pb2.CounterSpec.BOTH and c.size == 64
    dc = info.direct_counters[0]
    assert dc.spec.unit == p4info_pb2.CounterSpec.PACKETS
    assert dc.direct_table_id == ref_id(0x02, "MyIngress.fwd_table")
    assert info.meters[0].spec.unit == p4info_pb2.MeterSpec.PACKETS and info.meters[0].size == 16
    assert info.direct_meters[0].spec.unit == p4info_pb2.MeterSpec.BYTES
    r = info.registers[0]
    assert r.type_spec.bitstring.bit.bitwidth == 19 and r.size == 8
    pin = by_name(info.controller_packet_metadata, "packet_in")
    assert pin.preamble.alias == "packet_in"
    assert list(pin.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(md.id, md.name, md.bitwidth) for md in pin.metadata] == [
        (1, "ingress_port", 9),
        (2, "_pad", 7),
    ]
    d = info.digests[0]
    assert d.type_spec.struct.name == "learn_t"
    members = info.type_info.structs["learn_t"].members
    assert [(x.name, x.type_spec.bitstring.bit.bitwidth) for x in members] == [
        ("src", 48),
        ("port", 9),
    ]
    # every id is unique across resource kinds (p4runtime-shell indexes them together)
    ids = [
        o.preamble.id
        for kind in (
            "tables",
            "actions",
            "counters",
            "direct_counters",
            "meters",
            "direct_meters",
            "registers",
            "controller_packet_metadata",
            "digests",
        )
        for o in getattr(info, kind)
    ]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("fmt, ext", [("text", ".txt"), ("binary", ".pb"), ("json", ".json")])
def test_write_and_read_formats(tmp_path, fmt, ext):
    path = tmp_path / f"p4info{ext}"
    written = write_p4info(model(), str(path), fmt=fmt)
    assert read_p4info(str(path)) == written
    assert read_p4info(str(path), fmt=fmt) == p4info_from_model(model())
    if fmt == "text":
        assert 'name: "MyIngress.fwd_table"' in path.read_text()
    with pytest.raises(ValueError, match="unknown P4Info format"):
        write_p4info(model(), str(tmp_path / "x"), fmt="yaml")


def _shell_with(info: p4info_pb2.P4Info, tmp_path):
    """p4runtime-shell (its own venv, a subprocess: tests/clients/p4rtshell_client.py)
    with `info` loaded as its context."""
    import importlib.util
    from pathlib import Path

    from google.protobuf import text_format

    spec = importlib.util.spec_from_file_location(
        "p4rtshell_client", Path(__file__).resolve().parents[1] / "clients" / "p4rtshell_client.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    python = mod.shell_python()
    if python is None:
        pytest.fail(f"no p4runtime-shell venv at {mod.VENV_PYTHON}: run `make setup`")
    path = tmp_path / "p4info.txt"
    path.write_text(text_format.MessageToString(info))
    sh = mod.ShellClient(python)
    sh.call("set_p4info", path=str(path))
    return sh


def test_p4runtime_shell_accepts_p4info(tmp_path):
    from google.protobuf import text_format

    from p4rtproto import p4runtime_pb2

    sh = _shell_with(p4info_from_model(model()), tmp_path)
    try:
        # names and unique suffixes resolve as the shell's users type them
        assert sh.call("table_id", name="fwd_table") == ref_id(0x02, "MyIngress.fwd_table")
        assert sh.call("action_id", name="fwd") == ref_id(0x01, "MyIngress.fwd")
        assert (
            sh.call("obj", type="action", name="drop") is None
        )  # ambiguous suffix, as in the shell
        assert sh.call("mf_id", table="MyIngress.fwd_table", field="hdr.ipv4.dst") == 2
        assert sh.call("param_id", action="MyIngress.fwd", param="dmac") == 2
        pin = text_format.Parse(
            sh.call("obj", type="controller_packet_metadata", name="packet_in"),
            p4info_pb2.ControllerPacketMetadata(),
        )
        assert pin.metadata[0].name == "ingress_port"

        got = sh.call(
            "te_msg",
            table="MyIngress.fwd_table",
            action="MyIngress.fwd",
            match={"hdr.eth.dst": "00:11:22:33:44:55", "hdr.ipv4.dst": "10.0.0.0/8"},
            params={"port": "5", "dmac": "0a:0b:0c:0d:0e:0f"},
            priority=1,
        )
        msg = text_format.Parse(got["msg"], p4runtime_pb2.TableEntry())
        assert msg.table_id == ref_id(0x02, "MyIngress.fwd_table")
        assert [m.field_id for m in msg.match] == [1, 2]
        assert msg.match[1].lpm.prefix_len == 8
        assert msg.action.action.action_id == ref_id(0x01, "MyIngress.fwd")
        assert [(p.param_id, p.value) for p in msg.action.action.params] == [
            (1, b"\x05"),
            (2, bytes.fromhex("0a0b0c0d0e0f")),
        ]
        assert got["direct_counter"] and got["direct_meter"]
    finally:
        sh.close()


def test_roce_switch_p4info_loads_in_p4runtime_shell(tmp_path):
    """The real program, compiled by p4sim, gives P4Info that p4runtime-shell can use."""
    import os

    from p4sim.lower import load_program

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    compiled = load_program(os.path.join(root, "p4src", "roce_switch.p4"))
    info = p4info_from_model(compiled.model)
    assert info.tables and info.actions
    sh = _shell_with(info, tmp_path)
    try:
        action_names = {a.preamble.name for a in info.actions}
        for t in info.tables:
            assert sh.call("table_id", name=t.preamble.name) == t.preamble.id
            if compiled.model.tables[t.preamble.name].id is None:
                assert t.preamble.id == ref_id(0x02, t.preamble.name)
            for ar in t.action_refs:
                assert sh.call("obj_by_id", id=ar.id) in action_names
    finally:
        sh.close()
    kinds = {c.preamble.name for c in info.controller_packet_metadata}
    assert kinds == {"packet_in", "packet_out"}
    ids = [
        o.preamble.id
        for kind in (
            "tables",
            "actions",
            "counters",
            "direct_counters",
            "meters",
            "registers",
            "controller_packet_metadata",
        )
        for o in getattr(info, kind)
    ]
    assert len(ids) == len(set(ids))
