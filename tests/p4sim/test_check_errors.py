"""The checker refuses bad and unsupported programs with file:line:column."""

from __future__ import annotations

import pytest

from p4sim.frontend.errors import P4SourceError
from p4sim.runtime.instance import load_program  # lowering + the runtime's const-entry check
from tests.p4sim.p4sim_helpers import program


def line_of(path: str, needle: str) -> int:
    for n, line in enumerate(open(path).read().splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(needle)


@pytest.mark.parametrize(
    "ig, fragment",
    [
        ("hdr.data.nosuch = 1;", "has no field 'nosuch'"),
        ("undefined_var = 1;", "unknown name 'undefined_var'"),
        ("hdr.data.a = hdr.data.c;", "cannot assign bit<16> to bit<8>"),
        ("if (hdr.data.a) { }", "condition must be bool"),
        ("hdr.data.a = hdr.data.a + hdr.data.c;", "different types"),
        ("hdr.data.a = hdr.data.a[9:2];", "out of range"),
        ("nosuch_table.apply();", "unknown name 'nosuch_table'"),
    ],
)
def test_type_and_name_errors_are_located(tmp_path, ig, fragment):
    path = program(tmp_path, ig="        " + ig)
    with pytest.raises(P4SourceError) as ei:
        load_program(path)
    e = ei.value
    assert fragment in e.reason
    assert e.span.file.endswith("prog.p4")
    assert e.span.line == line_of(path, ig)
    assert e.span.column >= 9
    assert e.headline().startswith(f"{path}:{e.span.line}:{e.span.column}: error:")


def test_unused_action_selector_loads_and_is_in_p4info(tmp_path):
    # it used to be refused by name; now it is an action profile no table uses
    from p4sim.p4info import p4info_from_model

    locals_ = """
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) sel;
    """
    path = program(tmp_path, ig_locals=locals_)
    (ap,) = p4info_from_model(load_program(path).model).action_profiles
    assert (ap.preamble.name.split(".")[-1], ap.with_selector, ap.size, list(ap.table_ids)) == (
        "sel",
        True,
        64,
        [],
    )


def test_header_not_byte_aligned_is_padded_like_p4c_bmv2(tmp_path):
    # p4c's BMv2 back end pads a 41-bit header to 6 bytes; the pad bits travel with it
    from p4sim.runtime.switch import Switch

    path = program(tmp_path)
    txt = (
        open(path)
        .read()
        .replace(
            "header data_t { bit<8> a; bit<8> b; bit<16> c; bit<32> d; }",
            "header data_t { bit<8> a; bit<8> b; bit<16> c; bit<1> d; }",
        )
    )
    open(path, "w").write(txt)
    sw = Switch(path)
    eth = bytes.fromhex("0000000000aa0000000000bb1234")
    sw.send(0, eth + bytes([1, 2, 0, 3, 0xB5, 0xEE]))
    (o,) = sw.receive()
    assert o.data == eth + bytes([1, 2, 0, 3, 0xB5, 0xEE])


def test_duplicate_const_entry_is_located(tmp_path):
    locals_ = """
    action a(bit<8> v) { hdr.data.b = v; }
    table t {
        key = { hdr.data.a: exact; }
        actions = { a; }
        const entries = {
            1: a(1);
            1: a(2);
        }
    }
    """
    path = program(tmp_path, ig_locals=locals_)
    with pytest.raises(P4SourceError) as ei:
        load_program(path)
    assert "already exists" in ei.value.reason
    assert ei.value.span.line == line_of(path, "1: a(2);")


def test_unused_action_is_still_type_checked(tmp_path):
    locals_ = """
    action never_used(bit<8> v) { hdr.data.nope = v; }
    """
    path = program(tmp_path, ig_locals=locals_)
    with pytest.raises(P4SourceError) as ei:
        load_program(path)
    assert "no field 'nope'" in ei.value.reason
    assert ei.value.span.line == line_of(path, "never_used")
