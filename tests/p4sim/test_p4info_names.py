"""P4Info names and ids of whole programs, as p4c's front end leaves them.

p4c generates P4Info after its front end (backends/bmv2/simple_switch/main.cpp calls
serializeP4RuntimeIfRequired before the mid end), so names are those of
frontends/p4/hierarchicalNames.cpp (prefix = declared name of the enclosing controls,
instances inlined under their name), localizeActions.cpp (a global action used in a control
is copied into it; a relative @name then gets the control prefix), and
unusedDeclarations.cpp (tables never applied, and actions only they use, are removed).
Ids: (prefix << 24) | (jenkins one-at-a-time(name) & 0xffffff), see test_p4info.ref_id.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.check.controlplane import field_ids
from p4sim.lower import load_program
from p4sim.p4info import build_p4info
from tests.p4sim.test_p4info import ref_id

ACTION, TABLE = 0x01, 0x02

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
"""


def _p4info(tmp_path: Path, body: str):
    src = tmp_path / "prog.p4"
    src.write_text(PRELUDE + body)
    info = build_p4info(load_program(str(src)).model)
    tables = {t.preamble.name: t.preamble.id for t in info.tables}
    actions = {a.preamble.name: a.preamble.id for a in info.actions}
    return tables, actions


def test_ids_equal_those_p4c_published(tmp_path):
    """p4c's own P4Info for a control `ingress` with a table `simple_table` (actions `dummy`,
    NoAction) and an action `do_action` only called from `apply` (testdata
    p4_16_samples_outputs/gauntlet_exit_combination_1-bmv2.p4.p4info.txtpb) has these ids;
    the directly called action is listed too."""
    tables, actions = _p4info(
        tmp_path,
        """
control ingress(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action dummy() { }
    action do_action() { hd.h.b = 1; }
    table simple_table { key = { hd.h.a: exact; } actions = { dummy; NoAction; } default_action = NoAction; }
    apply { simple_table.apply(); do_action(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), ingress(), E(), C(), D()) main;
""",
    )
    assert tables == {"ingress.simple_table": 39789425}
    assert actions == {
        "NoAction": 21257015,
        "ingress.dummy": 18214157,
        "ingress.do_action": 21566949,
    }


def test_prefix_is_the_declared_control_name(tmp_path):
    """@name on a control and the name of a top-level instance passed to V1Switch do not
    enter the names (HierarchicalNames::getName is the declaration's name)."""
    tables, actions = _p4info(
        tmp_path,
        """
@name("renamed_ig") control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action set_b(bit<8> v) { hd.h.b = v; }
    table t { key = { hd.h.a: exact; } actions = { set_b; } }
    apply { t.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    table u { key = { hd.h.a: exact; } actions = { NoAction; } }
    apply { u.apply(); }
}
Ing() ig_instance;
E() eg_instance;
V1Switch(P(), V(), ig_instance, eg_instance, C(), D()) main;
""",
    )
    assert tables == {"Ing.t": ref_id(TABLE, "Ing.t"), "E.u": ref_id(TABLE, "E.u")}
    assert actions == {
        "Ing.set_b": ref_id(ACTION, "Ing.set_b"),
        "NoAction": ref_id(ACTION, "NoAction"),
    }


def test_sub_control_instances_and_global_actions(tmp_path):
    """Each instance of a sub-control has its own objects under `<Control>.<instance>`
    (an @name on the instance replaces its name; `.x` makes it global); a global action
    keeps its global name, with or without a relative @name (p4c 1.2.5.16, checked with
    p4c-bm2-ss on this program; p4c 1.2.4.0 named the first `Ing.fwd` and `E.fwd`)."""
    tables, actions = _p4info(
        tmp_path,
        """
@name("fwd") action forward(bit<9> port) { }
action plain_global() { }
control Sub(inout headers_t hd) {
    action mark() { hd.h.b = 7; }
    table st { key = { hd.h.a: exact; } actions = { mark; plain_global; } }
    apply { st.apply(); }
}
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    table t { key = { hd.h.a: exact; } actions = { forward; } }
    Sub() s1;
    @name("second") Sub() s2;
    @name(".top") Sub() s3;
    apply { t.apply(); s1.apply(hd); s2.apply(hd); s3.apply(hd); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    table et { key = { hd.h.a: exact; } actions = { forward; } }
    apply { et.apply(); }
}
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
""",
    )
    assert set(tables) == {"Ing.t", "Ing.s1.st", "Ing.second.st", "top.st", "E.et"}
    assert set(actions) == {
        "fwd",
        "plain_global",
        "Ing.s1.mark",
        "Ing.second.mark",
        "top.mark",
        "NoAction",
    }
    for name, uid in actions.items():
        assert uid == ref_id(ACTION, name), name
    for name, uid in tables.items():
        assert uid == ref_id(TABLE, name), name


def test_unused_tables_and_their_actions_are_not_in_p4info(tmp_path):
    """p4c removes a table that is never applied ("Table t is not used; removing") before
    P4Info, then the actions nobody references any more; a control action called directly
    stays (only its call is inlined)."""
    tables, actions = _p4info(
        tmp_path,
        """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action only_in_unused() { hd.h.b = 1; }
    action shared() { hd.h.b = 2; }
    action called() { hd.h.b = 3; }
    action never_used() { hd.h.b = 4; }
    table unused_t { key = { hd.h.a: exact; } actions = { only_in_unused; shared; } }
    table used_t { key = { hd.h.a: exact; } actions = { shared; } }
    action inner() { hd.h.b = 5; }
    action outer() { inner(); }
    apply { used_t.apply(); called(); outer(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
""",
    )
    assert set(tables) == {"Ing.used_t"}
    # `inner` is called only from another action: p4c's InlineActions inlines it there and
    # it is then unused (p4c 1.2.5.16 samples crc32-bmv2, issue232-bmv2)
    assert set(actions) == {"Ing.shared", "Ing.called", "Ing.outer", "NoAction"}


def _info(tmp_path: Path, body: str):
    src = tmp_path / "prog.p4"
    src.write_text(
        PRELUDE
        + body
        + """
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""
    )
    return build_p4info(load_program(str(src)).model)


def test_type_info_is_written_once_something_asks_for_it(tmp_path):
    """p4c 1.2.5.16 writes an empty `type_info {}` when a table, an action parameter, a
    controller header, an extern instance or an extern function called in a control asks for
    it (p4RuntimeSerializer.cpp), and none otherwise (samples arith-bmv2, empty-bmv2)."""
    bare = _info(
        tmp_path,
        "control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm)"
        " { apply { hd.h.a = 1; } }",
    )
    assert not bare.HasField("type_info")
    called = _info(
        tmp_path,
        "control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm)"
        " { apply { mark_to_drop(sm); } }",
    )
    assert called.HasField("type_info") and called.type_info.ByteSize() == 0
    # an action parameter asks for it, but a directly called action has none left: p4c's
    # front end binds them all at the call (removeParameters.cpp; p4c-bm2-ss 1.2.5.16 lists
    # `Ing.a` without params and writes no type_info for this program)
    called = _info(
        tmp_path,
        "control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm)"
        " { action a(bit<8> v) { hd.h.a = v; } apply { a(3); } }",
    )
    assert not called.HasField("type_info")
    assert [(a.preamble.name, len(a.params)) for a in called.actions] == [("Ing.a", 0)]
    param = _info(
        tmp_path,
        "control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm)"
        " { action a(bit<8> v) { hd.h.a = v; }"
        " table t { actions = { a; } } apply { t.apply(); } }",
    )
    assert param.HasField("type_info")
    assert [len(a.params) for a in param.actions if a.preamble.name == "Ing.a"] == [1]


def test_initial_entries_and_default_action_arguments(tmp_path):
    """p4c 1.2.5.16: has_initial_entries when `entries` or `const entries` holds an entry,
    is_const_table for `const entries` even when empty (getHasInitialEntries, getConstTable);
    initial_default_action arguments at the parameter's width in bytes (default_action-bmv2:
    "\\000\\000\\000\\n" for bit<32> 10)."""
    info = _info(
        tmp_path,
        """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action a(bit<32> v) { hd.h.a = (bit<8>)v; }
    table init_t { key = { hd.h.a: exact; } actions = { a; } default_action = a(10);
                   entries = { 1 : a(2); } }
    table const_empty { key = { hd.h.b: exact; } actions = { a; } const entries = { } }
    table plain { key = { hd.h.b: exact; } actions = { a; } }
    apply { init_t.apply(); const_empty.apply(); plain.apply(); }
}""",
    )
    t = {x.preamble.name: x for x in info.tables}
    assert (t["Ing.init_t"].has_initial_entries, t["Ing.init_t"].is_const_table) == (True, False)
    assert (t["Ing.const_empty"].has_initial_entries, t["Ing.const_empty"].is_const_table) == (
        False,
        True,
    )
    assert (t["Ing.plain"].has_initial_entries, t["Ing.plain"].is_const_table) == (False, False)
    assert [a.value for a in t["Ing.init_t"].initial_default_action.arguments] == [
        b"\x00\x00\x00\n"
    ]


def test_table_without_default_action_refers_to_noaction_defaultonly(tmp_path):
    """p4c's CreateBuiltins gives a table without default_action `default_action =
    NoAction` and adds `@defaultonly NoAction` to its actions: P4Info shows the ref."""
    src = tmp_path / "prog.p4"
    src.write_text(
        PRELUDE
        + """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action to_cpu() { sm.egress_spec = 64; }
    table t0 { key = { sm.ingress_port: ternary; } actions = { to_cpu; } }
    apply { t0.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""
    )
    info = build_p4info(load_program(str(src)).model)
    (t,) = info.tables
    refs = [(r.id, r.scope, list(r.annotations)) for r in t.action_refs]
    assert refs == [
        (ref_id(ACTION, "Ing.to_cpu"), 0, []),
        (ref_id(ACTION, "NoAction"), 2, ["@defaultonly"]),
    ]  # 2: DEFAULT_ONLY
    assert t.initial_default_action.action_id == ref_id(ACTION, "NoAction")


def test_field_ids_follow_p4c_field_id_allocator():
    """@id values first; the others get 1, 2, ... by position, an @id'd element still
    using up its position's number (p4c FieldIdAllocator)."""
    assert field_ids([None, None, None]) == [1, 2, 3]
    assert field_ids([5, None, None]) == [5, 2, 3]
    assert field_ids([None, 1, None]) == [2, 1, 3]
    assert field_ids([None, None, 2]) == [1, 3, 2]
    with pytest.raises(ValueError, match="used multiple times"):
        field_ids([4, 4])
    with pytest.raises(ValueError, match="not a valid @id"):
        field_ids([0])


def test_id_annotations_on_params_keys_and_packet_metadata(tmp_path):
    src = tmp_path / "prog.p4"
    src.write_text(
        PRELUDE.replace(
            "struct meta_t",
            """@controller_header("packet_in")
header pin_t { @id(7) bit<9> port; bit<7> pad; }
struct meta_t""",
        )
        + """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> first, @id(1) bit<8> second, bit<8> third) { hd.h.b = first + second + third; }
    table t { key = { hd.h.a: exact; hd.h.b: exact @id(9); } actions = { set; } }
    apply { t.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""
    )
    info = build_p4info(load_program(str(src)).model)
    (act,) = [a for a in info.actions if a.preamble.name == "Ing.set"]
    assert [(p.name, p.id) for p in act.params] == [("first", 2), ("second", 1), ("third", 3)]
    (t,) = info.tables
    assert [(f.name, f.id) for f in t.match_fields] == [("hd.h.a", 1), ("hd.h.b", 9)]
    (pin,) = info.controller_packet_metadata
    assert [(f.name, f.id) for f in pin.metadata] == [("port", 7), ("pad", 2)]


def test_documentation_and_hidden_objects(tmp_path):
    """@brief/@description fill the preamble's `doc` (p4c addDocumentation), other
    annotations stay in `annotations`; a @hidden table is not in P4Info."""
    src = tmp_path / "prog.p4"
    src.write_text(
        PRELUDE
        + """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    @brief("Sets b") @description("Writes the parameter to h.b") @my_tag(1)
    action setb(bit<8> v) { hd.h.b = v; }
    table t { key = { hd.h.a: exact; } actions = { setb; } }
    @hidden table h { key = { hd.h.b: exact; } actions = { NoAction; } }
    apply { t.apply(); h.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""
    )
    info = build_p4info(load_program(str(src)).model)
    (a,) = [x for x in info.actions if x.preamble.name == "Ing.setb"]
    assert (a.preamble.doc.brief, a.preamble.doc.description) == (
        "Sets b",
        "Writes the parameter to h.b",
    )
    assert list(a.preamble.annotations) == ["@my_tag(1)"]
    assert [t.preamble.name for t in info.tables] == ["Ing.t"]


def test_value_sets(tmp_path):
    """Parser value sets are in P4Info (prefix 0x03) under `<Parser>.<name>`; a bit<W>
    element gives one unnamed exact match (p4c P4RuntimeAnalyzer::addValueSet)."""
    src = tmp_path / "prog.p4"
    src.write_text("""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
parser Prs(packet_in pk, out headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) singles;
    state start {
        pk.extract(hd.h);
        transition select(hd.h.a) { singles: accept; default: accept; }
    }
}
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hd, inout meta_t m) { apply { } }
control C(inout headers_t hd, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hd) { apply { pk.emit(hd.h); } }
V1Switch(Prs(), V(), Ing(), E(), C(), D()) main;
""")
    info = build_p4info(load_program(str(src)).model)
    vs = {v.preamble.name: v for v in info.value_sets}
    assert set(vs) == {"Prs.singles"}
    assert vs["Prs.singles"].preamble.id == ref_id(0x03, "Prs.singles")
    assert vs["Prs.singles"].size == 4
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in vs["Prs.singles"].match] == [
        (1, "", 8, 2)
    ]  # 2: EXACT


def test_direct_counter_follows_its_table(tmp_path):
    """A direct counter is in P4Info with its table's id; one no (applied) table uses is
    left out, as p4c serialises direct resources from their table."""
    src = tmp_path / "prog.p4"
    src.write_text(
        PRELUDE
        + """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) used_dc;
    direct_counter(CounterType.packets) lonely_dc;
    direct_counter(CounterType.bytes) dead_dc;
    table t { key = { hd.h.a: exact; } actions = { NoAction; } counters = used_dc; }
    table never { key = { hd.h.a: exact; } actions = { NoAction; } counters = dead_dc; }
    apply { t.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""
    )
    info = build_p4info(load_program(str(src)).model)
    assert [(c.preamble.name, c.preamble.id, c.direct_table_id) for c in info.direct_counters] == [
        ("Ing.used_dc", ref_id(0x13, "Ing.used_dc"), ref_id(TABLE, "Ing.t"))
    ]
    assert [t.preamble.name for t in info.tables] == ["Ing.t"]
    assert list(info.tables[0].direct_resource_ids) == [ref_id(0x13, "Ing.used_dc")]


def test_controller_header_id_comes_from_the_header_type(tmp_path):
    """p4c adds the @controller_header *type* to its symbol table: the id hashes the type's
    name, the preamble is named after the annotation. 81826293 is the id p4c gives a
    `packet_in_header_t` (as in P4Info files p4c generated for other projects)."""
    src = tmp_path / "prog.p4"
    src.write_text(
        PRELUDE.replace(
            "struct meta_t",
            """@controller_header("packet_in")
header packet_in_header_t { bit<9> ingress_port; bit<7> pad; }
struct meta_t""",
        )
        + """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""
    )
    info = build_p4info(load_program(str(src)).model)
    (cpm,) = info.controller_packet_metadata
    assert (cpm.preamble.id, cpm.preamble.name, cpm.preamble.alias) == (
        81826293,
        "packet_in",
        "packet_in",
    )
    assert cpm.preamble.id == ref_id(0x04, "packet_in_header_t")


def test_param_name_annotation_and_key_constants_as_p4c_prints_them(tmp_path):
    """`@name` on an action parameter names it in P4Info and for table writes (p4c sample
    name_annotations_to_p4info-bmv2: BMv2 JSON's runtime_data too); a key's integer constant
    is printed as p4c's Util::toString prints it: width prefix kept, no leading zeros
    (sample match-on-exprs2-bmv2: `0x010101010101` -> `0x10101010101`)."""
    src = tmp_path / "prog.p4"
    src.write_text(
        PRELUDE
        + """
control Ing(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(@name("orange") bit<9> port, bit<8> v) { sm.egress_spec = port; hd.h.b = v; }
    table t {
        key = { hd.h.a & 0x0F : exact; hd.h.b & 8w0x07 : ternary; hd.h.a & 0b0011 : exact; }
        actions = { fwd; }
    }
    apply { t.apply(); }
}
control E(inout headers_t hd, inout meta_t m, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""
    )
    info = build_p4info(load_program(str(src)).model)
    (table,) = info.tables
    assert [k.name for k in table.match_fields] == [
        "hd.h.a & 0xf",
        "hd.h.b & 8w0x7",
        "hd.h.a & 0b11",
    ]
    (fwd,) = [a for a in info.actions if a.preamble.name == "Ing.fwd"]
    assert [(p.id, p.name) for p in fwd.params] == [(1, "orange"), (2, "v")]
