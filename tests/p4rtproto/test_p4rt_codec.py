"""p4rtproto's schema and codec on a real program's P4Info (l2_cpu.p4, compiled by p4sim):
names <-> ids, the canonical bytestring rules of P4Runtime 1.4 section 8.4, every entity both
ways, PacketIn/PacketOut metadata. The server and the controller both run these functions, so
a wrong rule here shows up on both ends at once; the expected bytes are written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4rtproto import codec, p4runtime_pb2
from p4rtproto.entities import (
    CloneSession,
    CounterCell,
    DefaultAction,
    Exact,
    Lpm,
    MeterRates,
    MulticastGroup,
    Optional_,
    Range,
    RegisterCell,
    TableEntry,
    Ternary,
)
from p4rtproto.errors import P4RuntimeError
from p4rtproto.schema import Schema
from p4sim.server.pipeline import compile_program, schema_of

L2 = Path(__file__).resolve().parents[1] / "p4sim_runtime" / "programs" / "l2_cpu.p4"


@pytest.fixture(scope="module")
def schema() -> Schema:
    _, p4info = compile_program(L2)
    return Schema(p4info)


def code_of(fn, *args, **kw) -> tuple[str, str]:
    with pytest.raises(P4RuntimeError) as info:
        fn(*args, **kw)
    return info.value.code, info.value.message


# ---------------------------------------------------------------- schema


def test_names_and_ids_both_ways(schema: Schema) -> None:
    t = schema.table("MyIngress.l2_fwd")
    assert schema.table("l2_fwd") is t  # a unique suffix
    assert schema.table(t.id) is t and schema.name(t.id) == "MyIngress.l2_fwd"
    assert t.id >> 24 == 0x02  # p4c's table prefix
    assert t.fields_by_name["hdr.ethernet.dst"].bitwidth == 48
    assert t.fields_by_name["hdr.ethernet.dst"].match_kind == "exact"
    assert t.direct_counter_id and schema.direct_counters[t.direct_counter_id].table_id == t.id
    assert not t.requires_priority
    assert schema.table("MyIngress.acl").requires_priority
    fwd = schema.action("MyIngress.forward")
    assert [(p.name, p.bitwidth) for p in fwd.param_order] == [("port", 9)]
    assert schema.register("last_len").bitwidth == 32 and schema.register("last_len").size == 16
    assert (
        schema.counter("port_rx").size == 512
        and schema.counter("port_rx").unit == "packets_and_bytes"
    )
    assert [(f.name, f.bitwidth) for f in schema.packet_out.fields] == [
        ("egress_port", 9),
        ("pad", 7),
    ]
    assert [f.name for f in schema.packet_in.fields] == ["ingress_port", "pad"]
    assert [f.name for f in schema.digest_fields[schema.digest_ids["learn_t"]]] == ["src", "port"]


def test_unknown_names_and_ids_answer_the_spec_codes(schema: Schema) -> None:
    assert code_of(schema.table, "nosuch")[0] == "NOT_FOUND"
    assert code_of(schema.table, 0x02000001)[0] == "NOT_FOUND"
    assert code_of(schema.action, 0x01000001)[0] == "INVALID_ARGUMENT"  # an entry naming no action
    assert code_of(schema.counter, 7)[0] == "NOT_FOUND"
    assert code_of(schema.register, "nosuch") == (
        "NOT_FOUND",
        "no register named 'nosuch' in P4Info",
    )


def test_an_ambiguous_suffix_is_refused(schema: Schema) -> None:
    # "drop" is MyIngress.drop; NoAction has no dot: a suffix only matches after a dot
    assert schema.action("drop").name == "MyIngress.drop"
    p4info = type(schema.p4info)()
    p4info.CopyFrom(schema.p4info)
    twin = p4info.actions.add()
    twin.CopyFrom(next(a for a in p4info.actions if a.preamble.name == "MyIngress.drop"))
    twin.preamble.name, twin.preamble.id = "MyEgress.drop", 0x01FFFFFF
    code, msg = code_of(Schema(p4info).action, "drop")
    assert code == "INVALID_ARGUMENT" and "ambiguous" in msg


def test_schema_hints_name_the_controller_headers() -> None:
    """P4Info that names the headers after their types (not "packet_in") needs the hint."""
    compiled, p4info = compile_program(L2)
    for cpm in p4info.controller_packet_metadata:
        cpm.preamble.name = {"packet_in": "packet_in_t", "packet_out": "packet_out_t"}[
            cpm.preamble.name
        ]
    assert Schema(p4info).packet_in is None
    hinted = Schema(p4info, header_kinds={"packet_in_t": "packet_in", "packet_out_t": "packet_out"})
    assert hinted.packet_in.name == "packet_in_t" and hinted.packet_out.name == "packet_out_t"
    # the server's schema takes the hint from the compiled program (its headers' type names)
    assert {h.name for h in compiled.model.controller_headers.values()} == {
        "packet_in_t",
        "packet_out_t",
    }
    assert schema_of(p4info, compiled.model).packet_out.name == "packet_out_t"
    const = Schema(p4info, const_tables=["MyIngress.l2_fwd"])
    assert const.table("l2_fwd").const_entries and not Schema(p4info).table("l2_fwd").const_entries


# ---------------------------------------------------------------- bytestrings


def test_canonical_bytestrings() -> None:
    assert codec.encode(0, 9) == b"\x00"  # zero is one zero byte
    assert codec.encode(5, 9) == b"\x05"  # no leading zero bytes, whatever the width
    assert codec.encode(0x1FF, 9) == b"\x01\xff"
    assert codec.encode(0x020000000002, 48) == bytes.fromhex("020000000002")
    assert code_of(codec.encode, 0x200, 9)[0] == "OUT_OF_RANGE"
    assert code_of(codec.encode, -1, 9)[0] == "OUT_OF_RANGE"


def test_received_bytestrings_padded_accepted_too_wide_refused() -> None:
    assert codec.to_int(b"\x00\x00\x05", 9, "f") == 5  # padded: accepted
    assert codec.to_int(b"\x01\xff", 9, "f") == 0x1FF
    assert code_of(codec.to_int, b"\x02\x00", 9, "f") == (
        "OUT_OF_RANGE",
        "f: value 0x0200 does not fit in 9 bits",
    )
    assert code_of(codec.to_int, b"", 9, "f")[0] == "INVALID_ARGUMENT"


# ---------------------------------------------------------------- table entries


ENTRIES = [
    TableEntry(
        "MyIngress.l2_fwd",
        {"hdr.ethernet.dst": Exact(0x020000000002)},
        "MyIngress.forward",
        {"port": 2},
    ),
    TableEntry("MyIngress.l2_fwd", {"hdr.ethernet.dst": Exact(0)}, "MyIngress.drop"),
]


def test_table_entry_round_trip_exact(schema: Schema) -> None:
    for entry in ENTRIES:
        msg = codec.encode_table_entry(schema, None, entry)
        meta, back = codec.decode_table_entry(schema, msg, need_action=True)
        assert meta.name == entry.table and back == entry
    msg = codec.encode_table_entry(schema, None, ENTRIES[0])
    assert [(m.field_id, m.exact.value) for m in msg.match] == [(1, bytes.fromhex("020000000002"))]
    assert [(p.param_id, p.value) for p in msg.action.action.params] == [(1, b"\x02")]
    assert msg.action.action.action_id == schema.action("forward").id and msg.priority == 0


def test_table_entry_round_trip_every_match_kind(schema: Schema) -> None:
    """A table of each kind the program has; ternary values go out masked."""
    kinds = {}
    for t in schema.tables.values():
        for f in t.field_order:
            kinds.setdefault(f.match_kind, (t, f))
    assert set(kinds) == {"exact", "lpm", "ternary", "range", "optional"}
    values = {
        "lpm": lambda w: Lpm(((1 << w) - 1) ^ 0xF, w - 4),
        "ternary": lambda w: Ternary(0x0A, 0x0F),
        "range": lambda w: Range(3, 9),
        "optional": lambda w: Optional_(1),
        "exact": lambda w: Exact(7),
    }
    for kind, (t, f) in kinds.items():
        match = {
            g.name: values[g.match_kind](g.bitwidth)
            for g in t.field_order
            if g.match_kind == "exact"
        }
        match[f.name] = values[kind](f.bitwidth)
        action = schema.actions[
            next(iter(a for a, s in t.action_ids.items() if s != "DEFAULT_ONLY"))
        ]
        entry = TableEntry(
            t.name,
            match,
            action.name,
            {p.name: 1 for p in action.param_order},
            priority=10 if t.requires_priority else 0,
        )
        msg = codec.encode_table_entry(schema, None, entry)
        assert codec.decode_table_entry(schema, msg, need_action=True)[1] == entry, kind
    t, f = kinds["ternary"]
    entry = TableEntry(t.name, {f.name: Ternary(0xFF, 0x0F)}, "", priority=1)
    fm = codec.encode_table_entry(schema, t, entry).match[0]
    assert (fm.ternary.value, fm.ternary.mask) == (b"\x0f", b"\x0f")  # value & mask


def test_table_entry_encode_errors(schema: Schema) -> None:
    bad_field = TableEntry("l2_fwd", {"nosuch": Exact(1)}, "MyIngress.forward", {"port": 1})
    code, msg = code_of(codec.encode_table_entry, schema, None, bad_field)
    assert code == "NOT_FOUND" and "no key field 'nosuch'" in msg
    wide = TableEntry(
        "l2_fwd", {"hdr.ethernet.dst": Exact(1 << 48)}, "MyIngress.forward", {"port": 1}
    )
    assert code_of(codec.encode_table_entry, schema, None, wide)[0] == "OUT_OF_RANGE"
    missing = TableEntry("l2_fwd", {"hdr.ethernet.dst": Exact(1)}, "MyIngress.forward", {})
    assert code_of(codec.encode_table_entry, schema, None, missing) == (
        "INVALID_ARGUMENT",
        "action 'MyIngress.forward': missing parameter(s) port",
    )
    extra = TableEntry(
        "l2_fwd", {"hdr.ethernet.dst": Exact(1)}, "MyIngress.forward", {"port": 1, "q": 2}
    )
    assert code_of(codec.encode_table_entry, schema, None, extra)[0] == "NOT_FOUND"
    assert (
        code_of(codec.encode_table_entry, schema, None, TableEntry("l2_fwd", {}, "nosuch", {}))[0]
        == "NOT_FOUND"
    )


def test_table_entry_decode_checks_the_spec(schema: Schema) -> None:
    t = schema.table("l2_fwd")
    ok = codec.encode_table_entry(schema, t, ENTRIES[0])
    cases = {
        "priority must be 0": lambda m: setattr(m, "priority", 3),
        "exact field 'hdr.ethernet.dst' is missing": lambda m: m.ClearField("match"),
        "given twice": lambda m: m.match.append(m.match[0]),
        "missing parameter(s) port": lambda m: m.action.action.ClearField("params"),
        "no match field with id 9": lambda m: setattr(m.match[0], "field_id", 9),
    }
    for expect, spoil in cases.items():
        msg = p4runtime_pb2.TableEntry()
        msg.CopyFrom(ok)
        spoil(msg)
        code, text = code_of(codec.decode_table_entry, schema, msg, need_action=True)
        assert code == "INVALID_ARGUMENT" and expect in text, (expect, text)
    msg = p4runtime_pb2.TableEntry()
    msg.CopyFrom(ok)
    msg.match[0].exact.value = b"\x01" + bytes(6)  # 49 bits
    assert code_of(codec.decode_table_entry, schema, msg, need_action=True)[0] == "OUT_OF_RANGE"
    msg.ClearField("action")
    msg.match[0].exact.value = b"\x01"
    assert codec.decode_table_entry(schema, msg, need_action=False)[1].action == ""
    assert code_of(codec.decode_table_entry, schema, msg, need_action=True)[1].endswith(
        "has no action"
    )


def test_table_entry_carries_direct_counter_data(schema: Schema) -> None:
    t = schema.table("l2_fwd")
    msg = codec.encode_table_entry(schema, t, ENTRIES[0], counter=(3, 300), metadata=b"cookie")
    assert (msg.counter_data.packet_count, msg.counter_data.byte_count, msg.metadata) == (
        3,
        300,
        b"cookie",
    )
    back = codec.decode_table_entry(schema, msg, need_action=True)[1]
    assert (back.counter_packets, back.counter_bytes) == (3, 300)


# ---------------------------------------------------------------- other entities


def test_every_entity_both_ways(schema: Schema) -> None:
    U = p4runtime_pb2.Update
    cases = [
        (ENTRIES[0], "table_entry", U.INSERT),
        (
            DefaultAction("MyIngress.l2_fwd", "MyIngress.forward", {"port": 9}),
            "table_entry",
            U.MODIFY,
        ),
        (CounterCell("MyIngress.port_rx", 17, 5, 500), "counter_entry", U.MODIFY),
        (RegisterCell("MyIngress.last_len", 3, 0xDEADBEEF), "register_entry", U.MODIFY),
        (CloneSession(5, (1, 3), 128), "packet_replication_engine_entry", U.INSERT),
        (MulticastGroup(7, (1, 2, 4)), "packet_replication_engine_entry", U.INSERT),
        (MeterRates("MyIngress.port_meter", 2, ((0.5, 10), (1.0, 20))), "meter_entry", U.MODIFY),
    ]
    for entity, which, utype in cases:
        ent, got_type = codec.encode_entity(schema, entity)
        assert (ent.WhichOneof("entity"), got_type) == (which, utype), entity
        wire = p4runtime_pb2.Entity.FromString(ent.SerializeToString())
        assert codec.decode_entity(schema, wire) == entity
    ent, _ = codec.encode_entity(schema, RegisterCell("last_len", 3, 0xDEADBEEF))
    assert ent.register_entry.data.bitstring == bytes.fromhex("deadbeef")
    ent, _ = codec.encode_entity(schema, MeterRates("port_meter", 2, ((0.5, 10), (1.0, 20))))
    assert (ent.meter_entry.config.cir, ent.meter_entry.config.pir) == (
        500_000,
        1_000_000,
    )  # per second
    assert (
        code_of(codec.encode_entity, schema, RegisterCell("last_len", 0, 1 << 32))[0]
        == "OUT_OF_RANGE"
    )


def test_replica_ports_old_and_new_form() -> None:
    mg = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=1)
    mg.replicas.add(egress_port=3, instance=1)
    mg.replicas.add(port=b"\x01\x00", instance=2)  # P4Runtime 1.4's bytes form
    assert codec.replicas(mg) == [(3, 1), (256, 2)]


# ---------------------------------------------------------------- packet metadata


def test_packet_out_metadata_both_ways(schema: Schema) -> None:
    hdr = schema.packet_out
    md = codec.encode_packet_metadata(hdr, {"egress_port": 4})
    assert md == [
        (hdr.fields[0].id, b"\x04"),
        (hdr.fields[1].id, b"\x00"),
    ]  # every field, padding 0
    values = codec.decode_packet_metadata(hdr, md)
    assert values == {"egress_port": 4, "pad": 0}
    assert codec.pack_header(hdr.fields, values) == bytes(
        [4 >> 1, (4 & 1) << 7]
    )  # 9 + 7 bits, MSB first
    assert code_of(codec.encode_packet_metadata, hdr, {"nosuch": 1})[0] == "NOT_FOUND"
    assert code_of(codec.encode_packet_metadata, hdr, {"egress_port": 512})[0] == "OUT_OF_RANGE"
    assert (
        code_of(codec.encode_packet_metadata, None, {"egress_port": 1})[0] == "FAILED_PRECONDITION"
    )


def test_packet_out_metadata_refused_as_the_spec_asks(schema: Schema) -> None:
    hdr = schema.packet_out
    port, pad = (f.id for f in hdr.fields)

    def M(metadata_id: int, value: bytes) -> tuple[int, bytes]:
        return metadata_id, value

    cases = {
        "missing: pad": [M(metadata_id=port, value=b"\x01")],
        "'egress_port' given twice": [
            M(metadata_id=port, value=b"\x01"),
            M(metadata_id=port, value=b"\x02"),
            M(metadata_id=pad, value=b"\x00"),
        ],
        "no metadata id 9": [M(metadata_id=9, value=b"\x01")],
    }
    for expect, msgs in cases.items():
        code, text = code_of(codec.decode_packet_metadata, hdr, msgs)
        assert code == "INVALID_ARGUMENT" and expect in text, (expect, text)
    too_wide = [M(metadata_id=port, value=b"\x02\x00"), M(metadata_id=pad, value=b"\x00")]
    assert code_of(codec.decode_packet_metadata, hdr, too_wide)[0] == "OUT_OF_RANGE"
    assert (
        code_of(codec.decode_packet_metadata, None, [M(metadata_id=1, value=b"\x01")])[0]
        == "INVALID_ARGUMENT"
    )
    # a client reading a PacketIn is lenient: an id it does not know keeps its number
    lenient = codec.decode_packet_metadata(
        schema.packet_in, [M(metadata_id=9, value=b"\x07")], strict=False
    )
    assert lenient == {"9": 7}
