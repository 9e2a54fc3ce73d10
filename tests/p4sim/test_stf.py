"""The STF runner: p4c's command syntax, name resolution, packet matching and reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.runtime.switch import Switch
from p4sim.stf import StfError, StfRunner, parse_int, parse_stf
from tests.p4sim.p4sim_helpers import program

IG_LOCALS = """
    counter(4, CounterType.packets) hits;
    register<bit<8>>(2) seen;
    action to(bit<9> port) { sm.egress_spec = port; }
    action mc(bit<16> grp) { sm.mcast_grp = grp; }
    action mark(bit<8> v) { hdr.data.b = v; }
    table tern {
        key = { hdr.data.a: ternary; hdr.data.c: range; }
        actions = { to; mc; NoAction; }
        default_action = NoAction();
    }
    table pre {
        key = { hdr.eth.src: lpm; }
        actions = { mark; NoAction; }
    }
"""
IG = """
        pre.apply();
        tern.apply();
        hits.count((bit<32>)hdr.data.a[1:0]);
        seen.write(0, hdr.data.a);
"""
ETH = "0000000000aa0000000000bb1234"


def runner(tmp_path, strict: bool = True) -> StfRunner:
    return StfRunner(Switch(program(tmp_path, ig=IG, ig_locals=IG_LOCALS)), "t.stf", strict=strict)


def pkt(a: int, b: int = 0, c: int = 0) -> str:
    return f"{ETH} {a:02x}{b:02x}{c:04x} 00000000"


def test_ternary_wildcards_priorities_ranges_lpm_and_counters(tmp_path):
    text = f"""
# higher priority wins; '*' nibbles are don't care
add tern 10 hdr.data.a:0x1* hdr.data.c:0->100 to(port:2)
add tern 20 a:0x12&&&0xff c:0->0xffff to(port:3)
add pre eth.src:0xbb/48 mark(v:7)
setdefault pre mark(9)
packet 0 {pkt(0x12, c=5)}
expect 3 {ETH} 1207 0005 ********$
packet 0 {pkt(0x13, c=5)}
expect 2 {ETH} 1307 0005 00000000$
packet 0 {pkt(0x13, c=200)}
expect 1 {ETH} 1307 00c8 00000000
check_counter hits(3) packets == 2
check_counter hits(2) == 1
check_register seen 0 == 0x13
register_write seen 1 5
check_register seen 1 5
"""
    r = runner(tmp_path)
    res = r.run_text(text)
    assert res.ok, res.report()
    assert res.packets_sent == 3 and res.packets_checked == 3


def test_multicast_commands(tmp_path):
    text = f"""
add tern 1 a:0x01&&&0xff c:0->0xffff mc(grp:5)
mc_mgrp_create 5
mc_node_create 0 2 3
mc_node_associate 5 0
packet 0 {pkt(1)}
expect 2 {pkt(1)}
expect 3 {pkt(1)}
"""
    res = runner(tmp_path).run_text(text)
    assert res.ok, res.report()


def test_mismatch_missing_and_extra_packets_are_reported(tmp_path):
    text = f"""
packet 0 {pkt(1)}
expect 1 {ETH} 02
expect 4 00
"""
    res = runner(tmp_path).run_text(text)
    assert not res.ok
    msgs = "\n".join(res.messages)
    assert "packet #1 on port 1 differs" in msgs and "^" in msgs
    assert "never came" in msgs and "port 4" in msgs
    res = runner(tmp_path).run_text(f"packet 0 {pkt(1)}\n")
    assert not res.ok and "unexpected packet #1 on port 1" in res.messages[0]


def test_errors_name_the_line(tmp_path):
    with pytest.raises(StfError, match=r"t.stf:2: add: .*no table named 'nosuch'"):
        runner(tmp_path).run_text("\nadd nosuch a:1 to(port:1)\n")
    with pytest.raises(StfError, match=r"t.stf:1: add: no key field named 'x'"):
        runner(tmp_path).run_text("add tern 1 x:1 to(port:1)\n")
    with pytest.raises(StfError, match=r"t.stf:3: mirroring_add: missing argument\(s\)"):
        runner(tmp_path).run_text("\n\nmirroring_add 5\n")


def test_parse_helpers():
    cmds = parse_stf("add t k:1 a(x:1, y:2)  # c\n\n# only comment\nexpect 1 00 11 $")
    assert [c.op for c in cmds] == ["add", "expect"]
    assert cmds[0].args == ["t", "k:1", "a(x:1, y:2)"]
    assert parse_int("0x10") == 16 and parse_int("8w3") == 3 and parse_int("0b101") == 5


def test_const_entry_priorities_follow_bmv2(tmp_path):
    # @priority(N): smaller wins; unannotated entries take their 1-based position (p4c/BMv2)
    locals_ = """
    action to(bit<9> x) { sm.egress_spec = x; }
    table t {
        key = { hdr.data.c: ternary; }
        actions = { to; }
        const entries = {
            0x1111 &&& 0xF    : to(1) @priority(3);
            0x1181            : to(2);
            0x1181 &&& 0xF00F : to(3) @priority(1);
        }
    }
    """
    sw = Switch(program(tmp_path, ig="t.apply();", ig_locals=locals_))
    text = f"""
packet 0 {ETH} 0000 0001 00000000
expect 1 {ETH} 0000 0001 00000000$
packet 0 {ETH} 0000 1001 00000000
expect 3 {ETH} 0000 1001 00000000$
packet 0 {ETH} 0000 1181 00000000
expect 3 {ETH} 0000 1181 00000000$
"""
    res = StfRunner(sw, "p.stf").run_text(text)
    assert res.ok, res.report()


def test_a_bug_in_generated_code_is_one_line_not_a_traceback(tmp_path):
    """A NameError from the generated code (as commit 64aa1ae's `_S_H_xh3`) is reported as an
    STF error naming the line and the exception, not as a Python traceback."""
    r = runner(tmp_path)

    def broken(hdr, meta, sm):
        raise NameError("name '_S_H_xh3' is not defined")

    r.sw._ingress = broken
    with pytest.raises(
        StfError, match=r"t.stf:2: packet: p4sim internal error \(NameError: name '_S_H_xh3'"
    ):
        r.run_text(f"\npacket 0 {pkt(1)}\n")


DIALECT = Path(__file__).parent / "programs" / "stf_port_dialect.p4"


def test_unnamed_port_ignored_by_default_fails_in_strict_mode():
    # p4c's runner (bmv2stf.py generate_model_inputs/checkOutputs) reads only the ports the
    # test names: a packet sent to port 2 by a test that names only port 0 is lost unseen
    text = "packet 0 02 00\n"
    res = StfRunner(Switch(str(DIALECT)), "d.stf").run_text(text)
    assert res.ok, res.report()
    assert res.packets_checked == 0
    strict = StfRunner(Switch(str(DIALECT)), "d.stf", strict=True).run_text(text)
    assert not strict.ok
    assert strict.messages == ["unexpected packet #1 on port 2:\n    got      0200"]


def test_named_ports_stay_strict_by_default():
    # a port the test names is counted exactly, even when it expects nothing else there
    sw = Switch(str(DIALECT))
    res = StfRunner(sw, "d.stf").run_text("packet 0 02 00\nexpect 2 02 00$\npacket 0 02 02\n")
    assert not res.ok and res.messages == ["unexpected packet #2 on port 2:\n    got      0202"]
    # the port named by a `packet` line is checked too (nothing may come back on it)
    res = StfRunner(Switch(str(DIALECT)), "d.stf").run_text("packet 0 00 00\n")
    assert not res.ok and "unexpected packet #1 on port 0" in res.messages[0]
    # a missing packet on a named port fails in both modes
    for strict in (False, True):
        res = StfRunner(Switch(str(DIALECT)), "d.stf", strict=strict).run_text(
            "packet 0 05 00\nexpect 5 05 00$\nexpect 5 05 00$\n"
        )
        assert not res.ok and "expected packet #2 on port 5 never came" in res.messages[0]


def test_expect_without_data_accepts_any_number_of_packets():
    for n in (0, 1, 3):
        text = "packet 1 06 00\n" * n + "expect 6\n"
        res = StfRunner(Switch(str(DIALECT)), "d.stf", strict=True).run_text(text)
        assert res.ok, res.report()
        assert res.packets_sent == n and res.packets_checked == 0
    # only that port: another named port is still checked
    res = StfRunner(Switch(str(DIALECT)), "d.stf").run_text(
        "packet 1 06 00\nexpect 6\nexpect 1 00\n"
    )
    assert not res.ok and "port 1 never came" in res.messages[0]


def test_unknown_command_warns_by_default_and_is_an_error_in_strict_mode():
    text = "frobnicate 1 2\npacket 0 02 00\nexpect 2 02 00$\n"
    res = StfRunner(Switch(str(DIALECT)), "d.stf").run_text(text)
    assert res.ok, res.report()
    assert res.warnings == ["d.stf:1: warning: unknown STF command 'frobnicate' ignored"]
    assert res.packets_checked == 1
    with pytest.raises(StfError, match=r"d.stf:1: frobnicate: unknown STF command 'frobnicate'"):
        StfRunner(Switch(str(DIALECT)), "d.stf", strict=True).run_text(text)


def test_cli_strict_flag(tmp_path, capsys):
    from p4sim.cli import main

    stf = tmp_path / "d.stf"
    stf.write_text("bogus\npacket 0 02 00\n")
    assert main(["stf", str(DIALECT), str(stf)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("PASS") and "warning: unknown STF command 'bogus' ignored" in out.err
    assert main(["stf", "--strict", str(DIALECT), str(stf)]) == 2
    assert "unknown STF command 'bogus'" in capsys.readouterr().err
    stf.write_text("packet 0 02 00\n")
    assert main(["stf", "--strict", str(DIALECT), str(stf)]) == 1
    assert "unexpected packet #1 on port 2" in capsys.readouterr().out
