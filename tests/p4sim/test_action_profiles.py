"""action_profile / action_selector: P4Info as p4c writes it, and the switch-level runtime
(p4sim.runtime.action_profile). The P4Runtime side is tests/p4sim_runtime/test_p4rt_action_profiles.py."""

from __future__ import annotations

import pytest

from p4sim.lower import load_program
from p4sim.model import Exact, FailedPrecondition, NotFound, P4SimError, TableEntry
from p4sim.p4info import p4info_from_model
from p4sim.runtime.switch import Switch
from tests.p4sim.test_p4info import ref_id

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> r; bit<16> c; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set(bit<8> r) { hdr.h.r = r; sm.egress_spec = 1; }
    action_selector(HashAlgorithm.xor16, 32w8, 32w16) sel;
    table ts {
        key = { hdr.h.c : selector; hdr.h.k : exact; }
        actions = { set; }
        implementation = sel;
    }
    table tp {
        key = { hdr.h.k : exact; }
        actions = { set; }
        implementation = action_profile(32w2);
    }
    apply { if (hdr.h.k < 0x80) { ts.apply(); } else { tp.apply(); } }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "ap.p4"
    p.write_text(PROGRAM)
    return str(p)


def test_p4info_action_profiles_and_table_implementation(path):
    info = p4info_from_model(load_program(path).model)
    aps = {a.preamble.name: a for a in info.action_profiles}
    tables = {t.preamble.name: t for t in info.tables}
    assert set(aps) == {"I.sel", "implementation"}  # in place, no @name: the property's name
    sel, impl = aps["I.sel"], aps["implementation"]
    assert sel.preamble.id == ref_id(0x11, "I.sel")  # P4Ids.ACTION_PROFILE
    assert impl.preamble.id == ref_id(0x11, "implementation")
    assert (sel.with_selector, sel.size, list(sel.table_ids)) == (
        True,
        8,
        [tables["I.ts"].preamble.id],
    )
    assert (impl.with_selector, impl.size, list(impl.table_ids)) == (
        False,
        2,
        [tables["I.tp"].preamble.id],
    )
    assert tables["I.ts"].implementation_id == sel.preamble.id
    assert tables["I.tp"].implementation_id == impl.preamble.id
    # a selector key is no match field, but keeps its place in the ids (p4c FieldIdAllocator)
    assert [(f.id, f.name) for f in tables["I.ts"].match_fields] == [(2, "hdr.h.k")]


def test_xor16_selector_and_member_refcounts(path):
    sw = Switch(path)
    sel = sw.action_profile("sel")
    for mid in (4, 3):  # handles 0, 1
        sel.member_add(mid, "set", {"r": mid})
    sel.group_add(1, [3, 4])
    sw.table_add(TableEntry("ts", {"hdr.h.k": Exact(5)}, "", group=1))
    for c in (0x0000, 0x0001, 0x0102, 0xFFFE):
        sw.send(0, bytes([5, 0]) + c.to_bytes(2, "big"))
        (o,) = sw.receive()
        assert o.data[1] == [4, 3][c % 2], hex(c)  # xor16 of one 16-bit word is the word
    with pytest.raises(FailedPrecondition):
        sel.member_delete(3)
    with pytest.raises(FailedPrecondition):
        sel.group_delete(1)
    sw.table_clear("ts")  # releases the group
    sel.group_delete(1)  # releases its members
    sel.member_delete(3)
    sel.member_delete(4)
    assert not sel.members and not sel.groups


def test_indirect_table_refuses_direct_actions_and_unknown_targets(path):
    sw = Switch(path)
    with pytest.raises(P4SimError, match="names a member or a group"):
        sw.table_add(TableEntry("tp", {"hdr.h.k": Exact(0x90)}, "set", {"r": 1}))
    with pytest.raises(NotFound):
        sw.table_add(TableEntry("tp", {"hdr.h.k": Exact(0x90)}, "", member=7))
    with pytest.raises(P4SimError, match="no selector"):
        sw.table_add(TableEntry("tp", {"hdr.h.k": Exact(0x90)}, "", group=7))
    prof = sw.action_profile("implementation")
    prof.member_add(7, "set", {"r": 7})
    with pytest.raises(P4SimError, match="does not fit"):
        prof.member_add(8, "set", {"r": 256})
    sw.table_add(TableEntry("tp", {"hdr.h.k": Exact(0x90)}, "", member=7))
    sw.send(0, bytes([0x90, 0, 0, 0]))
    (o,) = sw.receive()
    assert o.data[1] == 7
    (e,) = sw.table_entries("tp")
    assert (e.action, e.member, e.group) == ("", 7, None)


def test_modify_moves_an_entry_between_member_and_group(path):
    sw = Switch(path)
    sel = sw.action_profile("sel")
    sel.member_add(1, "set", {"r": 1})
    sel.member_add(2, "set", {"r": 2})
    sel.group_add(9, [2])
    key = {"hdr.h.k": Exact(5)}
    sw.table_add(TableEntry("ts", key, "", member=1))
    sw.table_modify(TableEntry("ts", dict(key), "", group=9))
    sw.send(0, bytes([5, 0, 0, 0]))
    assert sw.receive()[0].data[1] == 2
    sel.member_delete(1)  # no longer used: the modify released it
    with pytest.raises(FailedPrecondition):
        sel.group_delete(9)
    with pytest.raises(NotFound):  # a refused modify changes nothing
        sw.table_modify(TableEntry("ts", dict(key), "", member=1))
    (e,) = sw.table_entries("ts")
    assert (e.member, e.group) == (None, 9)
    sw.table_delete(TableEntry("ts", dict(key), ""))
    sel.group_delete(9)
    sel.member_delete(2)


@pytest.mark.parametrize("algo", ["crc32", "crc32_custom", "identity"])
def test_selector_algorithms(tmp_path, algo):
    # crc32 and crc32_custom (BMv2's default parameters are crc32's) against zlib; identity:
    # the packed bytes as a number (the per-switch algorithms go through the switch's table)
    import zlib

    p = tmp_path / "ap.p4"
    p.write_text(PROGRAM.replace("HashAlgorithm.xor16", f"HashAlgorithm.{algo}"))
    sw = Switch(str(p))
    sel = sw.action_profile("sel")
    for mid in range(3):
        sel.member_add(mid, "set", {"r": mid})
    sel.group_add(1, [0, 1, 2])
    sw.table_add(TableEntry("ts", {"hdr.h.k": Exact(5)}, "", group=1))
    got, want = [], []
    for c in (0, 1, 2, 0x1234, 0xBEEF, 0xFFFF):
        sw.send(0, bytes([5, 0]) + c.to_bytes(2, "big"))
        got.append(sw.receive()[0].data[1])
        data = c.to_bytes(2, "big")
        want.append((c if algo == "identity" else zlib.crc32(data)) % 3)
    assert got == want
    assert len(set(want)) > 1
