"""P4 expression and statement semantics of the generated code, checked on packets."""

from __future__ import annotations

import pytest

from p4sim.runtime.switch import Switch
from tests.p4sim.p4sim_helpers import data_of, frame, program


def run(tmp_path, ig, pkt=None, **kw):
    sw = Switch(program(tmp_path, ig=ig, **kw))
    sw.send(0, pkt if pkt is not None else frame(a=200, b=100, c=0x1234, d=0xF0000001))
    out = sw.receive()
    return sw, out


@pytest.mark.parametrize(
    "stmt, expect",
    [
        ("hdr.data.a = hdr.data.a + hdr.data.b;", (44, 100)),  # 300 wraps to 44
        ("hdr.data.a = hdr.data.b - hdr.data.a;", (156, 100)),  # -100 wraps
        ("hdr.data.a = hdr.data.a |+| hdr.data.b;", (255, 100)),  # saturating add
        ("hdr.data.b = hdr.data.b |-| hdr.data.a;", (200, 0)),  # saturating sub
        ("hdr.data.a = hdr.data.a << 1;", (144, 100)),
        ("hdr.data.a = hdr.data.a >> 3;", (25, 100)),
        ("hdr.data.a = ~hdr.data.a;", (55, 100)),
        ("hdr.data.a = -hdr.data.b;", (156, 100)),
        ("hdr.data.a = hdr.data.a * 2;", (144, 100)),
        ("hdr.data.a = hdr.data.c[15:8];", (0x12, 100)),
        ("hdr.data.a[3:0] = 4w0xf;", (0xCF, 100)),
        ("hdr.data.a = (bit<8>)hdr.data.d;", (1, 100)),
        ("hdr.data.a = (bit<8>)(hdr.data.a > hdr.data.b ? 8w7 : 8w9);", (7, 100)),
        ("hdr.data.a = hdr.data.a / 3; hdr.data.b = hdr.data.b % 7;", (66, 2)),
        ("hdr.data.a = (bit<8>)((int<8>)hdr.data.a >> 2);", (0xF2, 100)),  # arithmetic shift of -56
        ("if ((int<8>)hdr.data.a < 0) { hdr.data.a = 1; }", (1, 100)),  # 200 is -56 signed
        ("hdr.data.a = (bit<8>)(bit<4>)hdr.data.a;", (8, 100)),  # truncation
    ],
)
def test_arithmetic(tmp_path, stmt, expect):
    _, out = run(tmp_path, stmt)
    assert data_of(out[0].data)[:2] == expect


def test_concat_and_wide_cast(tmp_path):
    _, out = run(tmp_path, "hdr.data.d = hdr.data.a ++ hdr.data.b ++ hdr.data.c;")
    assert data_of(out[0].data)[3] == (200 << 24) | (100 << 16) | 0x1234


def test_signed_cast_sign_extends(tmp_path):
    _, out = run(tmp_path, "hdr.data.c = (bit<16>)(int<16>)(int<8>)hdr.data.a;")
    assert data_of(out[0].data)[2] == 0xFFC8  # -56


def test_set_invalid_removes_header_and_payload_follows(tmp_path):
    _, out = run(tmp_path, "hdr.data.setInvalid();", pkt=frame(1, 2, 3, 4, payload=b"PAY"))
    assert out[0].data == bytes.fromhex("0000000000aa0000000000bb1234") + b"PAY"


def test_exit_and_return(tmp_path):
    _, out = run(tmp_path, "hdr.data.a = 1; exit; hdr.data.a = 2;")
    assert data_of(out[0].data)[0] == 1
    _, out = run(tmp_path, "hdr.data.a = 1; if (hdr.data.b == 100) { return; } hdr.data.a = 2;")
    assert data_of(out[0].data)[0] == 1


def test_action_with_return_and_inout(tmp_path):
    locals_ = """
    action bump(inout bit<8> v, in bit<8> by) { if (by == 0) { return; } v = v + by; }
    """
    _, out = run(tmp_path, "bump(hdr.data.a, 5); bump(hdr.data.b, 0);", ig_locals=locals_)
    assert data_of(out[0].data)[:2] == (205, 100)


def test_function_inlined(tmp_path):
    decls = "bit<8> maxof(in bit<8> x, in bit<8> y) { if (x > y) { return x; } return y; }"
    _, out = run(tmp_path, "hdr.data.b = maxof(hdr.data.a, hdr.data.b);", decls=decls)
    assert data_of(out[0].data)[1] == 200


def test_switch_statement_and_default_port(tmp_path):
    ig = """
    switch (hdr.data.b) {
        1: { hdr.data.a = 1; }
        100: { hdr.data.a = 9; }
        default: { hdr.data.a = 3; }
    }
    """
    _, out = run(tmp_path, ig)
    assert data_of(out[0].data)[0] == 9
    assert out[0].port == 1


def test_egress_spec_default_zero_and_drop(tmp_path):
    _, out = run(tmp_path, "sm.egress_spec = 0;")
    assert out[0].port == 0
    sw, out = run(tmp_path, "mark_to_drop(sm);")
    assert out == [] and sw.stats["drops"] == 1
    # simple_switch --drop-port: mark_to_drop uses the switch's drop port, not a fixed 511
    sw = Switch(program(tmp_path, ig="mark_to_drop(sm);"), drop_port=300)
    sw.send(0, frame())
    assert sw.receive() == [] and sw.stats["drops"] == 1


def test_parser_too_short_goes_to_ingress(tmp_path):
    ig = "if (sm.parser_error == error.PacketTooShort) { hdr.eth.type = 0xdead; }"
    _, out = run(tmp_path, ig, pkt=frame()[:18])
    assert out[0].data[12:14] == b"\xde\xad"
    # the half header was not extracted: its bytes follow as payload
    assert out[0].data[14:] == frame()[14:18]


def test_standard_metadata_fields(tmp_path):
    ig = "hdr.data.d = sm.packet_length; hdr.data.c = (bit<16>)sm.ingress_port;"
    sw = Switch(program(tmp_path, ig=ig))
    sw.send(7, frame(payload=b"x" * 10))
    out = sw.receive()
    assert data_of(out[0].data)[2:] == (7, 32)


def test_undefined_behaviour_drops_and_logs(tmp_path):
    sw, out = run(tmp_path, "hdr.data.a = hdr.data.a / (hdr.data.b - 100);")
    assert out == [] and sw.stats["errors"] == 1
    assert "ZeroDivisionError" in sw.log[-1]


def test_subparser_with_scalar_out(tmp_path):
    from tests.p4sim.p4sim_helpers import HEADERS

    src = (
        HEADERS.replace("{{", "{").replace("}}", "}")
        + """
struct headers_t { eth_t eth; data_t data; }
struct meta_t { bit<8> seen; }
parser Sub(packet_in pkt, inout headers_t hdr, out bit<8> first) {
    state start { pkt.extract(hdr.data); first = hdr.data.a; transition accept; }
}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start { pkt.extract(hdr.eth); sub.apply(pkt, hdr, meta.seen); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control IG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.data.b = meta.seen + 1; }
}
control EG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control DP(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.data); } }
V1Switch(P(), VC(), IG(), EG(), CC(), DP()) main;
"""
    )
    path = tmp_path / "sub.p4"
    path.write_text(src)
    sw = Switch(str(path))
    sw.send(0, frame(a=41))
    assert data_of(sw.receive()[0].data)[:2] == (41, 42)


def test_short_circuit_runs_right_operand_only_when_needed(tmp_path):
    locals_ = """
    action mark() { hdr.data.c = hdr.data.c + 1; }
    table t { key = { hdr.data.a: exact; } actions = { mark; } default_action = mark(); }
    """
    ig = """
        if (hdr.data.b == 0 && t.apply().hit) { hdr.data.d = 1; }
        if (hdr.data.b == 100 || t.apply().hit) { hdr.data.d = hdr.data.d + 2; }
        hdr.data.a = (hdr.data.b == 100) ? 8w7 : (t.apply().hit ? 8w1 : 8w2);
    """
    _, out = run(tmp_path, ig, ig_locals=locals_)
    # b == 100: the first apply is skipped, the second is skipped, the ?: takes the constant
    assert data_of(out[0].data) == (7, 100, 0x1234, 0xF0000003)
    _, out = run(tmp_path, ig, ig_locals=locals_, pkt=frame(a=1, b=5, c=0, d=0))
    # b == 5: first && skipped (b != 0); || evaluates the apply (miss -> default mark: c+1);
    # ?: evaluates its else branch: the apply runs again (c+1) and misses -> 2
    assert data_of(out[0].data) == (2, 5, 2, 0)


def test_left_operand_evaluated_before_right_side_effects(tmp_path):
    decls = "bit<8> bump(inout bit<8> v) { v = v + 10; return 1; }"
    _, out = run(tmp_path, "hdr.data.b = hdr.data.a + bump(hdr.data.a);", decls=decls)
    assert data_of(out[0].data)[:2] == (210, 201)


def test_copy_out_happens_on_exit(tmp_path):
    locals_ = "action set_and_exit(inout bit<8> v) { v = 77; exit; }"
    _, out = run(tmp_path, "set_and_exit(hdr.data.a); hdr.data.a = 1;", ig_locals=locals_)
    assert data_of(out[0].data)[0] == 77


def test_header_and_struct_equality(tmp_path):
    ig = """
        data_t other = { 8w200, 8w100, 16w0x1234, 32w0xF0000001 };
        if (other == hdr.data) { hdr.data.a = 1; }
        data_t inv;
        if (inv != hdr.data) { hdr.data.b = 2; }
        meta_t m2 = meta;
        if (m2 == meta) { hdr.data.c = 3; }
    """
    _, out = run(tmp_path, ig)
    assert data_of(out[0].data)[:3] == (1, 2, 3)


def test_for_loop_cap_drops_the_packet_and_logs(tmp_path, monkeypatch):
    """A loop that never ends stops at Compiler.LOOP_LIMIT iterations: that packet is
    dropped with a logged reason naming the loop, the switch goes on (no hang)."""
    from p4sim.lower.codegen import Compiler

    monkeypatch.setattr(Compiler, "LOOP_LIMIT", 50)
    ig = """
        bit<8> n = 0;
        for (bit<8> i = hdr.data.a; i != 255; i = i + 2) { n = n + 1; }
        hdr.data.b = n;"""
    sw, out = run(tmp_path, ig, pkt=frame(a=200))  # even start: never 255
    assert out == [] and sw.stats["drops"] == 1
    assert any("for loop at" in m and "50 iterations" in m for m in sw.log), sw.log
    sw.send(0, frame(a=201))  # 27 steps to 255: under the cap
    assert data_of(sw.receive()[0].data)[:2] == (201, 27)


def test_csum_fold_matches_the_folding_loop():
    """rt.csum_fold folds twice below 2**32 and loops above: the same value as folding until
    nothing carries, on the edges of each fold (0xffff, 0x1fffe, 2**32 - 1) and random sums."""
    import random

    from p4sim.lower.rt import csum_fold

    def reference(s: int) -> int:
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return ~s & 0xFFFF

    rng = random.Random(7)
    cases = [
        0,
        1,
        0xFFFF,
        0x10000,
        0x1FFFE,
        0x1FFFF,
        0xFFFEFFFF,
        0xFFFF0000,
        2**32 - 1,
        2**32,
        2**48 - 1,
    ]
    cases += [rng.getrandbits(rng.choice((17, 20, 24, 32, 40, 64))) for _ in range(5000)]
    for s in cases:
        assert csum_fold(s) == reference(s), hex(s)
