"""Externs and the replication engine: hashes bit-exact with BMv2, checksums, counters,
registers, meters, clone I2E/E2E, multicast, resubmit, recirculate, digest, PFC, time."""

from __future__ import annotations

import random
import zlib

import pytest

from p4sim.externs import hash as X
from p4sim.externs import meter as M
from p4sim.model import P4SimError
from p4sim.runtime.switch import Switch
from p4sim.runtime.tm import TrafficManager
from tests.p4sim.p4sim_helpers import data_of, frame, program


def test_hash_algorithms_match_reference_check_values():
    data = b"123456789"
    assert X.crc32(data) == 0xCBF43926 == zlib.crc32(data)
    assert X.CRC16(data) == 0xBB3D  # CRC-16/ARC, BMv2's crc16
    assert X.make_hash_algorithms()["crc32_custom"](data) == 0xCBF43926
    assert X.CRC_CCITT(data) == 0x29B1
    # IPv4 header checksum example (RFC 1071 style): checksum over a header with 0 checksum
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert X.csum16(hdr) == 0xB861
    assert X.xor16(b"\x12\x34\x56") == 0x1234 ^ 0x5600
    assert X.identity(b"\x01\x02") == 0x0102


def test_pack_bits_pads_at_the_end_like_bmv2():
    assert X.pack_bits([0x5, 0x3], [4, 2]) == bytes([0b01011100])
    assert X.pack_bits([0xABC], [12]) == b"\xab\xc0"


def test_meter_trtcm_colors():
    m = M.MeterState()
    assert m.execute(100, 0) == M.GREEN  # unconfigured: green
    m.set_rates([(0.001, 2), (0.002, 3)], 0)  # packets/us, bursts
    colors = [m.execute(1, 0) for _ in range(4)]
    assert colors == [M.GREEN, M.GREEN, M.YELLOW, M.RED]
    assert m.execute(1, 2_000_000) == M.GREEN  # 2 ms later the buckets refilled


EXT_LOCALS = """
    counter(8, CounterType.packets_and_bytes) cnt;
    register<bit<16>>(4) reg;
    meter(2, MeterType.packets) mtr;
"""


def test_counter_register_meter_hash_in_program(tmp_path):
    ig = """
        cnt.count((bit<32>)hdr.data.a);
        bit<16> r;
        reg.read(r, 1);
        reg.write(1, r + 1);
        hdr.data.c = r;
        bit<2> color;
        mtr.execute_meter(32w0, color);
        hdr.data.b = (bit<8>)color;
        hash(hdr.data.d, HashAlgorithm.crc32, 32w0, {hdr.eth.dst, hdr.data.a}, 32w0);
    """
    sw = Switch(program(tmp_path, ig=ig, ig_locals=EXT_LOCALS))
    sw.meter_set_rates("mtr", 0, [(0.000001, 1), (0.000001, 2)])
    for _ in range(3):
        sw.send(0, frame(a=3))
    outs = [data_of(p.data) for p in sw.receive()]
    assert [o[2] for o in outs] == [0, 1, 2]  # register increments
    assert [o[1] for o in outs] == [0, 1, 2]  # green, yellow, red
    want = zlib.crc32(bytes.fromhex("0000000000aa") + b"\x03")
    assert outs[0][3] == want
    assert sw.counter_read("cnt", 3) == (3, 66)
    assert sw.register_read("IG.reg", 1) == 3
    sw.register_reset("reg")
    assert sw.register_read("reg", 1) == 0


def test_checksum_verify_and_update(tmp_path):
    # verify over eth.dst sets checksum_error when data.c does not match
    path = program(tmp_path, ig="hdr.data.b = (bit<8>)sm.checksum_error;")
    txt = (
        open(path)
        .read()
        .replace(
            "control VC(inout headers_t hdr, inout meta_t meta) { apply { } }",
            "control VC(inout headers_t hdr, inout meta_t meta) { apply { verify_checksum(hdr.data.isValid(),"
            " { hdr.data.a, hdr.data.d }, hdr.data.c, HashAlgorithm.csum16); } }",
        )
        .replace(
            "control CC(inout headers_t hdr, inout meta_t meta) { apply { } }",
            "control CC(inout headers_t hdr, inout meta_t meta) { apply { update_checksum(true,"
            " { hdr.data.a, hdr.data.d }, hdr.data.c, HashAlgorithm.csum16); } }",
        )
    )
    open(path, "w").write(txt)
    sw = Switch(path)
    good = X.csum16(bytes([7]) + (0x01020304).to_bytes(4, "big"))
    sw.send(0, frame(a=7, c=good, d=0x01020304))
    sw.send(0, frame(a=7, c=good ^ 1, d=0x01020304))
    o1, o2 = (data_of(p.data) for p in sw.receive())
    assert o1[1] == 0 and o2[1] == 1
    assert o1[2] == o2[2] == good  # recomputed on the way out


META_FL = """
struct fl_meta_t { @field_list(1) bit<32> keep; bit<32> lose; }
"""


def test_clone_i2e_and_e2e_with_sessions(tmp_path):
    ig = """
        if (sm.instance_type == 0) { clone(CloneType.I2E, 5); hdr.data.a = 0x11; }
    """
    eg = """
        hdr.data.b = (bit<8>)sm.instance_type;
        if (sm.instance_type == 0) { clone(CloneType.E2E, 6); }
    """
    sw = Switch(program(tmp_path, ig=ig, eg=eg))
    sw.clone_session_set(5, [(4, 0)])
    sw.clone_session_set(6, [(6, 0)])
    sw.send(0, frame(a=1))
    outs = {p.port: data_of(p.data) for p in sw.receive()}
    assert outs[1] == (0x11, 0, 0, 0)  # original, modified in ingress
    assert outs[4] == (1, 1, 0, 0)  # I2E clone: the original packet, instance_type 1
    assert outs[6] == (0x11, 2, 0, 0)  # E2E clone: egress-modified headers, instance_type 2


def test_multicast_replication_rid(tmp_path):
    ig = "sm.mcast_grp = 3;"
    eg = "hdr.data.a = (bit<8>)sm.egress_rid; hdr.data.b = (bit<8>)sm.instance_type;"
    sw = Switch(program(tmp_path, ig=ig, eg=eg))
    sw.mc_group_set(3, [(2, 7), (5, 9)])
    sw.send(0, frame())
    outs = sorted((p.port, data_of(p.data)[:2]) for p in sw.receive())
    assert outs == [(2, (7, 5)), (5, (9, 5))]


def test_resubmit_and_recirculate_preserve_field_list(tmp_path):
    decls = ""
    ig = """
        if (sm.instance_type == 0) { meta.x = 42; resubmit_preserving_field_list(1); }
        else { hdr.data.d = meta.x; hdr.data.a = (bit<8>)sm.instance_type; }
    """
    path = program(tmp_path, ig=ig, decls=decls)
    txt = (
        open(path)
        .read()
        .replace(
            "struct meta_t { bit<32> x; bit<8> y; }",
            "struct meta_t { @field_list(1) bit<32> x; bit<8> y; }",
        )
    )
    open(path, "w").write(txt)
    sw = Switch(path)
    sw.send(0, frame())
    (o,) = sw.receive()
    assert data_of(o.data)[0] == 6 and data_of(o.data)[3] == 42

    # a unicast packet always enters egress as NORMAL (BMv2): the program marks the second pass
    eg = "if (hdr.data.a != 4) { recirculate_preserving_field_list(1); }"
    ig2 = "if (sm.instance_type == 4) { hdr.data.a = 4; hdr.data.d = meta.x; } else { meta.x = 9; }"
    path2 = program(tmp_path, ig=ig2, eg=eg, name="p2.p4")
    txt2 = (
        open(path2)
        .read()
        .replace(
            "struct meta_t { bit<32> x; bit<8> y; }",
            "struct meta_t { @field_list(1) bit<32> x; bit<8> y; }",
        )
    )
    open(path2, "w").write(txt2)
    sw2 = Switch(path2)
    sw2.send(0, frame())
    (o,) = sw2.receive()
    assert data_of(o.data)[0] == 4 and data_of(o.data)[3] == 9


def test_digest_reaches_callback(tmp_path):
    decls = "struct learn_t { bit<48> src; bit<9> port; }"
    ig = "digest<learn_t>(1, { hdr.eth.src, sm.ingress_port });"
    sw = Switch(program(tmp_path, ig=ig, decls=decls))
    got = []
    sw.on_digest(lambda name, vals: got.append((name, vals)))
    sw.send(3, frame())
    assert got == [("learn_t", {"src": 0xBB, "port": 3})]
    assert sw.model.digests["learn_t"].fields == (("src", 48), ("port", 9))


def test_pfc_frame_pauses_tm_and_still_runs_pipeline(tmp_path):
    tm = TrafficManager()
    sw = Switch(program(tmp_path, ig="sm.egress_spec = 2;"), tm=tm)
    tm.set_port_rate(1, bits_per_s=1e9)
    pfc = (
        bytes.fromhex("0180c20000010000000000bb880801010001") + (100).to_bytes(2, "big") + bytes(14)
    ).ljust(60, b"\0")
    sw.send(1, pfc)
    assert sw.stats["pfc_rx"] == 1
    assert tm.is_paused(1, 0, sw.now())
    assert [p.port for p in sw.receive()] == [2]  # the program saw (and forwarded) it


def test_virtual_time_stamps_and_queueing(tmp_path):
    tm = TrafficManager()
    eg = "hdr.data.d = sm.deq_timedelta; hdr.data.c = (bit<16>)sm.enq_qdepth;"
    sw = Switch(program(tmp_path, eg=eg), tm=tm)
    # 1 Mb/s: a 22-byte frame holds the wire for 22 + 24 B (FCS, preamble, SFD, IFG): 368 us
    tm.set_port_rate(1, bits_per_s=1e6)
    for _ in range(3):
        sw.send(0, frame())
    first = sw.receive()  # the first frame starts at once; the others wait in the queue
    sw.run_until_idle()
    outs = first + sw.receive()
    assert len(outs) == 3
    times = [p.time_ns for p in outs]
    assert times == [368_000, 736_000, 1_104_000]
    # the third packet found one packet queued ahead of it and waited for two frames
    assert data_of(outs[2].data)[2] == 1
    assert data_of(outs[2].data)[3] == 736


def test_csum16_from_field_words_matches_packed_bytes(tmp_path):
    # odd widths crossing 16-bit word boundaries, total not a multiple of 16
    path = program(tmp_path)
    txt = (
        open(path)
        .read()
        .replace(
            "control CC(inout headers_t hdr, inout meta_t meta) { apply { } }",
            "control CC(inout headers_t hdr, inout meta_t meta) { apply { update_checksum(true,"
            " { hdr.data.a[2:0], hdr.data.d, hdr.data.b[6:0], hdr.eth.src[10:0] }, hdr.data.c,"
            " HashAlgorithm.csum16); } }",
        )
    )
    open(path, "w").write(txt)
    sw = Switch(path)
    import random as _r

    rng = _r.Random(7)
    for _ in range(20):
        a, b, d = rng.randrange(256), rng.randrange(256), rng.randrange(1 << 32)
        sw.send(0, frame(a=a, b=b, d=d))
        (o,) = sw.receive()
        want = X.csum16(X.pack_bits([a & 7, d, b & 0x7F, 0xBB & 0x7FF], [3, 32, 7, 11]))
        assert data_of(o.data)[2] == want


def test_deprecated_field_list_forms(tmp_path):
    ig = """
        if (sm.instance_type == 0) { meta.x = 7; meta.y = 9; resubmit({meta.x}); }
        else { hdr.data.d = meta.x; hdr.data.b = meta.y; clone3(CloneType.I2E, 3, {}); }
    """
    sw = Switch(program(tmp_path, ig=ig))
    sw.clone_session_set(3, [(5, 0)])
    sw.send(0, frame())
    outs = {p.port: data_of(p.data) for p in sw.receive()}
    assert outs[1][3] == 7 and outs[1][1] == 0  # x preserved, y not
    assert outs[5] == (0, 0, 0, 0)  # the I2E clone is the received packet


def test_resubmitted_packet_enters_egress_as_normal(tmp_path):
    # and, as simple_switch resets metadata for the new pass, reads ingress_port 0 there
    ig = (
        "if (sm.instance_type == 0) { resubmit_preserving_field_list(1); }"
        " else { hdr.data.a = 6; hdr.data.c = (bit<16>)sm.ingress_port; }"
    )
    eg = "hdr.data.b = (bit<8>)sm.instance_type;"
    sw = Switch(program(tmp_path, ig=ig, eg=eg))
    sw.send(3, frame())
    (o,) = sw.receive()
    assert data_of(o.data)[:3] == (6, 0, 0)


def test_identity_hash_is_the_first_eight_bytes_and_hash_adds_base():
    """Mutants X3 (identity over the last bytes) and X4 (base dropped). BMv2
    calculations.cpp `identity`: the first min(8, len) bytes, big-endian; v1model hash()
    (BMv2 modify_field_with_hash_based_offset): base + (h % max), max 0 = no modulo."""
    data = bytes(range(1, 13))  # 12 bytes: the last 8 differ from the first 8
    assert X.identity(data) == 0x0102030405060708
    assert X.identity(b"\xab") == 0xAB
    rng = random.Random(0)
    assert X.hash_value(X.identity, b"\x00\x17", 100, 10, rng) == 100 + 0x17 % 10
    assert X.hash_value(X.identity, b"\x00\x17", 100, 0, rng) == 100 + 0x17


def test_crc16_custom_defaults_to_crc16_arc():
    """Mutant X12 (wrong default polynomial). BMv2's crc16_custom starts with the crc16
    parameters (poly 0x8005, init 0, no final xor, reflected): check value 0xBB3D."""
    algos = X.make_hash_algorithms()
    assert algos["crc16_custom"](b"123456789") == 0xBB3D == algos["crc16"](b"123456789")


def test_meter_bucket_never_holds_more_than_its_burst():
    """Mutant X6 (tokens not capped). BMv2 Meter::execute: a bucket fills at its rate but
    holds at most its burst size, so an idle hour buys no bigger burst than the configured one."""
    m = M.MeterState()
    m.set_rates([(0.001, 2), (0.002, 3)], 0)  # committed 2, peak 3 packets
    hour_ns = 3600 * 10**9
    colors = [m.execute(1, hour_ns) for _ in range(4)]
    assert colors == [M.GREEN, M.GREEN, M.YELLOW, M.RED]


def test_register_write_rejects_a_value_wider_than_the_cell(tmp_path):
    """Mutant X9 (register mask one bit too wide): a bit<16> cell never holds 2^16."""
    sw = Switch(program(tmp_path, ig="", ig_locals=EXT_LOCALS))
    sw.register_write("reg", 1, 0xFFFF)
    assert sw.register_read("reg", 1) == 0xFFFF
    with pytest.raises(P4SimError, match="does not fit in 16 bits"):
        sw.register_write("reg", 2, 0x10000)
    assert sw.register_read("reg", 2) == 0


def test_e2e_clone_resets_metadata_and_is_truncated_by_its_session(tmp_path):
    """Mutants S2 (user metadata copied into an E2E clone), S9 (standard_metadata copied),
    S5 (session truncation ignored). BMv2 simple_switch egress_thread: the clone's metadata
    is reset, only the preserved field list comes back (none here), so ingress_port reads 0
    in its egress; a clone session's packet length (P4Runtime CloneSessionEntry
    packet_length_bytes) cuts the clone, not the original."""
    eg = """
        if (sm.instance_type == 0) { meta.y = 0x5A; clone(CloneType.E2E, 6); }
        hdr.data.b = meta.y;
        hdr.data.c = (bit<16>)sm.ingress_port;
        hdr.data.a = (bit<8>)sm.instance_type;
    """
    sw = Switch(program(tmp_path, eg=eg))
    sw.clone_session_set(6, [(6, 0)])
    sw.send(3, frame(a=1))
    outs = {p.port: data_of(p.data) for p in sw.receive()}
    assert outs[1][:3] == (0, 0x5A, 3)  # the original
    assert outs[6][:3] == (2, 0, 0)  # E2E clone: metadata and standard_metadata reset
    sw.clone_session_set(6, [(6, 0)], truncate=16)
    sw.send(3, frame(a=1))
    outs = {p.port: p.data for p in sw.receive()}
    assert len(outs[6]) == 16 and len(outs[1]) == len(frame(a=1))


def test_egress_spec_reads_zero_in_egress(tmp_path):
    """Mutant S6 (egress_spec left as ingress set it). BMv2 simple_switch egress_thread sets
    standard_metadata.egress_spec to 0 before egress runs (it is an output of egress)."""
    sw = Switch(
        program(tmp_path, ig="sm.egress_spec = 5;", eg="hdr.data.a = (bit<8>)sm.egress_spec;")
    )
    sw.send(0, frame(a=9))
    outs = [(p.port, data_of(p.data)[0]) for p in sw.receive()]
    assert outs == [(5, 0)]


def test_8023x_pause_frame_pauses_every_priority_of_the_port(tmp_path):
    """Mutant Q13 (a PAUSE frame taken as a class-0 PFC). 802.3x PAUSE (opcode 0x0001)
    stops the whole link: every priority of the port it came in on."""
    tm = TrafficManager()
    sw = Switch(program(tmp_path, ig="sm.egress_spec = 2;"), tm=tm)
    tm.set_port_rate(1, bits_per_s=1e9)
    pause = (bytes.fromhex("0180c20000010000000000bb88080001") + (100).to_bytes(2, "big")).ljust(
        60, b"\0"
    )
    sw.send(1, pause)
    assert all(tm.is_paused(1, prio, sw.now()) for prio in range(8))
    # 100 quanta of 512 bit times at 1 Gb/s: 51.2 us
    assert tm.stats()["ports"][1]["paused_ns"] == [51_200] * 8


def test_each_e2e_clone_replica_has_its_own_headers(tmp_path):
    """Mutant S10 (the E2E clones share the original's header object). Each replica of a
    clone session is its own packet (BMv2 copies the packet per replica): one replica's
    egress never sees what another replica's egress wrote."""
    eg = """
        if (sm.instance_type == 0) { hdr.data.b = 10; clone(CloneType.E2E, 6); }
        else { hdr.data.b = hdr.data.b + 1; }
    """
    sw = Switch(program(tmp_path, eg=eg))
    sw.clone_session_set(6, [(6, 0), (7, 0)])
    sw.send(0, frame())
    outs = sorted((p.port, data_of(p.data)[1]) for p in sw.receive())
    assert outs == [(1, 10), (6, 11), (7, 11)]


def test_pack_bits_keeps_only_the_fields_width_and_csum16_folds_every_carry():
    """Mutants X13 (a value wider than its field spills into the previous one) and X14
    (the end-around carry folded once). BMv2's BufBuilder copies exactly `width` bits per
    field; RFC 1071 folds carries until none is left: FFFF + FFFF + 0001 = 0x1FFFF ->
    0xFFFF + 1 = 0x10000 -> 0x0001, checksum 0xFFFE. (csum16 sums native words: the second
    input is the one that carries twice on a little-endian host; FFFF + FFFF + 0100 =
    0x200FE -> 0x0100, checksum 0xFEFF.)"""
    assert X.pack_bits([0x0, 0x1FF], [8, 8]) == b"\x00\xff"
    assert X.csum16(bytes.fromhex("ffffffff0001")) == 0xFFFE
    assert X.csum16(bytes.fromhex("ffffffff0100")) == 0xFEFF


def test_i2e_clone_keeps_the_packet_length(tmp_path):
    """Mutant S14 (the I2E clone's packet_length left 0). simple_switch: a clone's
    standard_metadata is reset but packet_length is the length of the packet it copies."""
    ig = "clone(CloneType.I2E, 5);"
    eg = "hdr.data.c = (bit<16>)sm.packet_length;"
    sw = Switch(program(tmp_path, ig=ig, eg=eg))
    sw.clone_session_set(5, [(4, 0)])
    f = frame()
    sw.send(0, f)
    outs = {p.port: data_of(p.data)[2] for p in sw.receive()}
    assert outs == {1: len(f), 4: len(f)}


def test_timestamps_are_microseconds_and_egress_starts_at_the_departure(tmp_path):
    """Mutants S16/S18 (ingress_global_timestamp, enq_timestamp in ns) and S17 (egress
    timestamp at the end of transmission). BMv2 simple_switch stamps in microseconds;
    egress_global_timestamp is when egress processing starts: the packet left its queue."""
    ig = "hdr.data.c = (bit<16>)sm.ingress_global_timestamp;"
    eg = "hdr.data.d = (bit<32>)sm.egress_global_timestamp; hdr.data.b = (bit<8>)(sm.enq_timestamp - 4900);"
    tm = TrafficManager()
    sw = Switch(program(tmp_path, ig=ig, eg=eg), tm=tm)
    tm.set_port_rate(1, bits_per_s=1e6)  # a 22-byte frame holds the port 368 us
    sw.advance(5_000_000)  # 5 ms
    sw.send(0, frame())
    sw.send(0, frame())
    sw.run_until_idle()
    outs = [data_of(p.data) for p in sw.receive()]
    assert [(o[1], o[2], o[3]) for o in outs] == [(100, 5000, 5000), (100, 5000, 5368)]


def test_endless_resubmit_is_cut_not_a_crash(tmp_path):
    """Mutant S20 (no bound on resubmit passes). BMv2 would loop; p4sim drops the packet
    after MAX_REINJECT passes and goes on (defence: no hang, no RecursionError)."""
    sw = Switch(program(tmp_path, ig="resubmit_preserving_field_list(0);"))
    sw.send(0, frame())
    assert sw.receive() == []
    assert sw.stats["drops"] == 1
    sw2 = Switch(program(tmp_path, ig="", eg="recirculate_preserving_field_list(0);", name="p2.p4"))
    sw2.send(0, frame())
    assert sw2.receive() == [] and sw2.stats["drops"] == 1


def test_multicast_group_zero_is_refused(tmp_path):
    """Mutant S21 (group 0 accepted). mcast_grp 0 means "no multicast" in v1model, so a
    group 0 could never be used; P4Runtime refuses multicast_group_id 0 as well."""
    sw = Switch(program(tmp_path, ig=""))
    with pytest.raises(P4SimError, match="out of range"):
        sw.mc_group_set(0, [(1, 0)])
    sw.mc_group_set(1, [(1, 0)])
