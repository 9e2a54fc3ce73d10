"""P4Runtime ValueSetEntry (p4sim.externs.value_set): MODIFY replaces a parser value set's
members, which the parser then matches; Read returns them; the refusals carry the spec's codes."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from p4rtproto import p4runtime_pb2, status_pb2
from p4sim.server import make_device_config

PROGRAM = Path(__file__).resolve().parent / "programs" / "value_sets.p4"
U = p4runtime_pb2.Update


@pytest.fixture
def vs(server, connect):
    c = connect()
    c.arbitrate((0, 1))
    assert c.get("arbitration").arbitration.status.code == 0
    c.set_pipeline(make_device_config(str(PROGRAM)))
    p4info = c.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
    ).config.p4info
    ids = {v.preamble.name: v.preamble.id for v in p4info.value_sets}
    assert set(ids) == {"P.exact_vs", "P.tern_vs", "P.lpm_vs", "P.pair_vs", "P.rng_vs"}
    return c, ids, server


def _member(kind: str, **kw) -> p4runtime_pb2.ValueSetMember:
    m = p4runtime_pb2.ValueSetMember()
    fm = m.match.add(field_id=1)
    getattr(fm, kind).SetInParent()
    for k, v in kw.items():
        setattr(getattr(fm, kind), k, v)
    return m


def _pair(
    a: bytes | None = None, b: tuple[bytes, bytes] | None = None
) -> p4runtime_pb2.ValueSetMember:
    """A pair_vs member: field 1 (a) exact, field 2 (b) ternary (value, mask); None: omitted."""
    m = p4runtime_pb2.ValueSetMember()
    if a is not None:
        m.match.add(field_id=1).exact.value = a
    if b is not None:
        fm = m.match.add(field_id=2)
        fm.ternary.value, fm.ternary.mask = b
    return m


def _write(c, vsid: int, *members, utype: int = U.MODIFY) -> None:
    u = U(type=utype)
    u.entity.value_set_entry.value_set_id = vsid
    u.entity.value_set_entry.members.extend(members)
    c.write(u)


def _r(server, k: int, r: int = 0) -> int:
    server.ports.ports[1].inject(bytes([k, r]))
    out = server.ports.ports[2].wait_output(1.0)
    assert out is not None
    return out[1]


def test_value_set_writes_steer_the_parser(vs):
    c, ids, server = vs
    assert _r(server, 0x10) == 4  # empty sets match nothing
    _write(c, ids["P.exact_vs"], _member("exact", value=b"\x10"))
    _write(c, ids["P.tern_vs"], _member("ternary", value=b"\x20", mask=b"\xf0"))
    _write(c, ids["P.lpm_vs"], _member("lpm", value=b"\x80", prefix_len=1))
    assert [_r(server, k) for k in (0x10, 0x11, 0x2F, 0x3F, 0x80, 0xFF, 0x7F)] == [
        1,
        4,
        2,
        4,
        3,
        3,
        4,
    ]
    # MODIFY replaces the members
    _write(c, ids["P.exact_vs"], _member("exact", value=b"\x11"))
    assert [_r(server, k) for k in (0x10, 0x11)] == [4, 1]
    _write(c, ids["P.exact_vs"])
    assert _r(server, 0x11) == 4


def test_value_set_read_returns_what_was_written(vs):
    c, ids, _ = vs
    _write(
        c,
        ids["P.tern_vs"],
        _member("ternary", value=b"\x20", mask=b"\xf0"),
        _member("ternary", value=b"\x01", mask=b"\x01"),
    )
    _write(c, ids["P.lpm_vs"], _member("lpm", value=b"\xc0", prefix_len=2))
    (e,) = c.read(
        p4runtime_pb2.Entity(
            value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=ids["P.tern_vs"])
        )
    )
    got = [(m.match[0].ternary.value, m.match[0].ternary.mask) for m in e.value_set_entry.members]
    assert got == [(b"\x20", b"\xf0"), (b"\x01", b"\x01")]
    (e,) = c.read(
        p4runtime_pb2.Entity(
            value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=ids["P.lpm_vs"])
        )
    )
    (m,) = e.value_set_entry.members
    assert (m.match[0].lpm.value, m.match[0].lpm.prefix_len) == (b"\xc0", 2)
    every = c.read(p4runtime_pb2.Entity(value_set_entry=p4runtime_pb2.ValueSetEntry()))
    assert {e.value_set_entry.value_set_id: len(e.value_set_entry.members) for e in every} == {
        ids["P.exact_vs"]: 0,
        ids["P.tern_vs"]: 2,
        ids["P.lpm_vs"]: 1,
        ids["P.pair_vs"]: 0,
        ids["P.rng_vs"]: 0,
    }


@pytest.mark.parametrize(
    "case, code",
    [
        ("insert", grpc.StatusCode.INVALID_ARGUMENT),
        ("too_many", grpc.StatusCode.RESOURCE_EXHAUSTED),
        ("wrong_kind", grpc.StatusCode.INVALID_ARGUMENT),
        ("too_wide", grpc.StatusCode.OUT_OF_RANGE),
        ("unknown_id", grpc.StatusCode.NOT_FOUND),
        ("range_member", grpc.StatusCode.UNIMPLEMENTED),
        ("pair_missing_exact", grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
def test_value_set_refusals(vs, case, code):
    c, ids, _ = vs
    ex = ids["P.exact_vs"]
    args = {
        "insert": (ex, [_member("exact", value=b"\x01")], U.INSERT),
        "too_many": (ex, [_member("exact", value=bytes([i])) for i in range(3)], U.MODIFY),
        "wrong_kind": (ex, [_member("ternary", value=b"\x01", mask=b"\xff")], U.MODIFY),
        "too_wide": (ex, [_member("exact", value=b"\x01\x00")], U.MODIFY),
        "unknown_id": (0x03ABCDEF, [], U.MODIFY),
        "range_member": (ids["P.rng_vs"], [_member("range", low=b"\x01", high=b"\x05")], U.MODIFY),
        "pair_missing_exact": (ids["P.pair_vs"], [_pair(b=(b"\x01", b"\xff"))], U.MODIFY),
    }[case]
    with pytest.raises(grpc.RpcError) as exc:
        _write(c, args[0], *args[1], utype=args[2])
    assert exc.value.code() in (code, grpc.StatusCode.UNKNOWN), exc.value.details()
    if exc.value.code() == grpc.StatusCode.UNKNOWN:  # one update: its code is in the details
        st = status_pb2.Status()
        md = dict(exc.value.trailing_metadata())
        st.ParseFromString(md["grpc-status-details-bin"])
        err = p4runtime_pb2.Error()
        st.details[0].Unpack(err)
        assert err.canonical_code == code.value[0], err.message
        assert "table" not in err.message, err.message
    # the set is untouched by a refused write
    e = c.read(p4runtime_pb2.Entity(value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=ex)))
    assert not e[0].value_set_entry.members


def test_two_field_value_set_matches_the_select_tuple(vs):
    c, ids, server = vs
    _write(c, ids["P.exact_vs"], _member("exact", value=b"\x10"))
    # (k == 0x10, r & 0xf0 == 0x30), and (k == 0x11, r anything: b omitted)
    _write(c, ids["P.pair_vs"], _pair(b"\x10", (b"\x30", b"\xf0")), _pair(b"\x11"))
    assert [_r(server, 0x10, r) for r in (0x30, 0x3F, 0x40, 0x00)] == [5, 5, 1, 1]
    assert [_r(server, 0x11, r) for r in (0x00, 0xFF)] == [5, 5]
    assert _r(server, 0x12, 0x30) == 4
    (e,) = c.read(
        p4runtime_pb2.Entity(
            value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=ids["P.pair_vs"])
        )
    )
    got = [
        [(f.field_id, f.WhichOneof("field_match_type")) for f in m.match]
        for m in e.value_set_entry.members
    ]
    assert got == [[(1, "exact"), (2, "ternary")], [(1, "exact")]]
    assert (
        e.value_set_entry.members[0].match[1].ternary.value,
        e.value_set_entry.members[0].match[1].ternary.mask,
    ) == (b"\x30", b"\xf0")
