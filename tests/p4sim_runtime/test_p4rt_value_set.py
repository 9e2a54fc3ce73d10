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
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)).config.p4info
    ids = {v.preamble.name: v.preamble.id for v in p4info.value_sets}
    assert set(ids) == {"P.exact_vs", "P.tern_vs", "P.lpm_vs", "P.pair_vs"}
    return c, ids, server


def _member(kind: str, **kw) -> p4runtime_pb2.ValueSetMember:
    m = p4runtime_pb2.ValueSetMember()
    fm = m.match.add(field_id=1)
    getattr(fm, kind).SetInParent()
    for k, v in kw.items():
        setattr(getattr(fm, kind), k, v)
    return m


def _write(c, vsid: int, *members, utype: int = U.MODIFY) -> None:
    u = U(type=utype)
    u.entity.value_set_entry.value_set_id = vsid
    u.entity.value_set_entry.members.extend(members)
    c.write(u)


def _r(server, k: int) -> int:
    server.ports.ports[1].inject(bytes([k, 0]))
    out = server.ports.ports[2].wait_output(1.0)
    assert out is not None
    return out[1]


def test_value_set_writes_steer_the_parser(vs):
    c, ids, server = vs
    assert _r(server, 0x10) == 4  # empty sets match nothing
    _write(c, ids["P.exact_vs"], _member("exact", value=b"\x10"))
    _write(c, ids["P.tern_vs"], _member("ternary", value=b"\x20", mask=b"\xf0"))
    _write(c, ids["P.lpm_vs"], _member("lpm", value=b"\x80", prefix_len=1))
    assert [_r(server, k) for k in (0x10, 0x11, 0x2f, 0x3f, 0x80, 0xff, 0x7f)] == [1, 4, 2, 4, 3, 3, 4]
    # MODIFY replaces the members
    _write(c, ids["P.exact_vs"], _member("exact", value=b"\x11"))
    assert [_r(server, k) for k in (0x10, 0x11)] == [4, 1]
    _write(c, ids["P.exact_vs"])
    assert _r(server, 0x11) == 4


def test_value_set_read_returns_what_was_written(vs):
    c, ids, _ = vs
    _write(c, ids["P.tern_vs"], _member("ternary", value=b"\x20", mask=b"\xf0"),
           _member("ternary", value=b"\x01", mask=b"\x01"))
    _write(c, ids["P.lpm_vs"], _member("lpm", value=b"\xc0", prefix_len=2))
    (e,) = c.read(p4runtime_pb2.Entity(value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=ids["P.tern_vs"])))
    got = [(m.match[0].ternary.value, m.match[0].ternary.mask) for m in e.value_set_entry.members]
    assert got == [(b"\x20", b"\xf0"), (b"\x01", b"\x01")]
    (e,) = c.read(p4runtime_pb2.Entity(value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=ids["P.lpm_vs"])))
    (m,) = e.value_set_entry.members
    assert (m.match[0].lpm.value, m.match[0].lpm.prefix_len) == (b"\xc0", 2)
    every = c.read(p4runtime_pb2.Entity(value_set_entry=p4runtime_pb2.ValueSetEntry()))
    assert {e.value_set_entry.value_set_id: len(e.value_set_entry.members) for e in every} == {
        ids["P.exact_vs"]: 0, ids["P.tern_vs"]: 2, ids["P.lpm_vs"]: 1, ids["P.pair_vs"]: 0}


@pytest.mark.parametrize("case, code", [
    ("insert", grpc.StatusCode.INVALID_ARGUMENT),
    ("too_many", grpc.StatusCode.RESOURCE_EXHAUSTED),
    ("wrong_kind", grpc.StatusCode.INVALID_ARGUMENT),
    ("too_wide", grpc.StatusCode.OUT_OF_RANGE),
    ("unknown_id", grpc.StatusCode.NOT_FOUND),
    ("two_fields", grpc.StatusCode.UNIMPLEMENTED),
])
def test_value_set_refusals(vs, case, code):
    c, ids, _ = vs
    ex = ids["P.exact_vs"]
    args = {
        "insert": (ex, [_member("exact", value=b"\x01")], U.INSERT),
        "too_many": (ex, [_member("exact", value=bytes([i])) for i in range(3)], U.MODIFY),
        "wrong_kind": (ex, [_member("ternary", value=b"\x01", mask=b"\xff")], U.MODIFY),
        "too_wide": (ex, [_member("exact", value=b"\x01\x00")], U.MODIFY),
        "unknown_id": (0x03ABCDEF, [], U.MODIFY),
        "two_fields": (ids["P.pair_vs"], [], U.MODIFY),
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
