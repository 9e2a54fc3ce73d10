"""P4Runtime against a real program (l2_cpu.p4) on the p4sim server: pipeline config,
table writes and reads with every match kind, errors per spec, counters, registers,
meters, multicast, clone sessions, PacketOut/PacketIn and digests."""

from __future__ import annotations

import grpc
import pytest
from p4rt_helpers import L2_PROGRAM, Names, RawClient

from p4rtproto import code_pb2, p4runtime_pb2, status_pb2
from p4sim.server import make_device_config

U = p4runtime_pb2.Update
SFP = p4runtime_pb2.SetForwardingPipelineConfigRequest
ING = "MyIngress."
MAC2 = bytes.fromhex("000000000002")
MAC3 = bytes.fromhex("000000000003")


def table_entry(
    n: Names,
    table: str,
    match: dict | None = None,
    action: str | None = None,
    params: dict | None = None,
    priority: int = 0,
) -> p4runtime_pb2.TableEntry:
    """match: field -> bytes (exact) | ("lpm", v, len) | ("ternary", v, m) | ("range", lo, hi) | ("optional", v)."""
    te = p4runtime_pb2.TableEntry(table_id=n[ING + table], priority=priority)
    for fname, spec in (match or {}).items():
        fm = te.match.add(field_id=n.fields[ING + table][fname])
        if isinstance(spec, bytes):
            fm.exact.value = spec
        elif spec[0] == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = spec[1], spec[2]
        elif spec[0] == "ternary":
            fm.ternary.value, fm.ternary.mask = spec[1], spec[2]
        elif spec[0] == "range":
            fm.range.low, fm.range.high = spec[1], spec[2]
        elif spec[0] == "optional":
            fm.optional.value = spec[1]
    if action is not None:
        full = action if "." in action or action == "NoAction" else ING + action
        te.action.action.action_id = n[full]
        for pname, value in (params or {}).items():
            te.action.action.params.add(param_id=n.params[full][pname], value=value)
    return te


def upd(kind: int, te: p4runtime_pb2.TableEntry | None = None, **entity) -> p4runtime_pb2.Update:
    u = U(type=kind)
    if te is not None:
        u.entity.table_entry.CopyFrom(te)
    for k, v in entity.items():
        getattr(u.entity, k).CopyFrom(v)
    return u


def write_error(exc: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """Per-update errors from a failed Write (google.rpc.Status details)."""
    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for d in status.details:
                err = p4runtime_pb2.Error()
                d.Unpack(err)
                out.append(err)
            return out
    raise AssertionError("no grpc-status-details-bin trailer")


def expect_codes(c: RawClient, *updates: p4runtime_pb2.Update) -> list[int]:
    with pytest.raises(grpc.RpcError) as exc:
        c.write(*updates)
    assert exc.value.code() == grpc.StatusCode.UNKNOWN
    return [e.canonical_code for e in write_error(exc.value)]


def read_table(c: RawClient, table_id: int = 0, **kw) -> list[p4runtime_pb2.TableEntry]:
    ent = p4runtime_pb2.Entity()
    ent.table_entry.table_id = table_id
    for k, v in kw.items():
        setattr(ent.table_entry, k, v)
    return [e.table_entry for e in c.read(ent)]


# ---------------------------------------------------------------- pipeline config


def test_get_pipeline_config_response_types(l2) -> None:
    c, n = l2
    G = p4runtime_pb2.GetForwardingPipelineConfigRequest
    full = c.stub.GetForwardingPipelineConfig(G(device_id=1, response_type=G.ALL)).config
    assert (
        full.cookie.cookie == 77
        and full.p4info.tables
        and full.p4_device_config == make_device_config(L2_PROGRAM)
    )
    cookie = c.stub.GetForwardingPipelineConfig(G(device_id=1, response_type=G.COOKIE_ONLY)).config
    assert cookie.cookie.cookie == 77 and not cookie.p4info.tables and not cookie.p4_device_config
    info = c.stub.GetForwardingPipelineConfig(
        G(device_id=1, response_type=G.P4INFO_AND_COOKIE)
    ).config
    assert info.p4info == full.p4info and not info.p4_device_config
    dev = c.stub.GetForwardingPipelineConfig(
        G(device_id=1, response_type=G.DEVICE_CONFIG_AND_COOKIE)
    ).config
    assert dev.p4_device_config and not dev.p4info.tables
    names = {t.preamble.name for t in full.p4info.tables}
    assert {ING + t for t in ("l2_fwd", "smac", "acl", "classify", "dst_prefix")} <= names


def test_p4info_must_match_the_program(l2) -> None:
    c, n = l2
    bad = type(n.p4info)()
    bad.CopyFrom(n.p4info)
    bad.tables[0].preamble.id ^= 0x1234
    with pytest.raises(grpc.RpcError) as exc:
        c.set_pipeline(make_device_config(L2_PROGRAM), p4info=bad)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not match" in exc.value.details()
    c.set_pipeline(make_device_config(L2_PROGRAM), p4info=n.p4info)  # the right one is fine


def test_compile_errors_are_located(l2) -> None:
    c, _ = l2
    source = L2_PROGRAM.read_text().replace(
        "pkt.extract(hdr.ethernet);", "pkt.extract(hdr.ethernet)\n", 1
    )
    with pytest.raises(grpc.RpcError) as exc:
        c.set_pipeline(source.encode())
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "program.p4:" in exc.value.details()  # file:line:column


def test_verify_save_commit_and_reconcile(l2, server) -> None:
    c, n = l2
    fwd = table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"})
    c.write(upd(U.INSERT, fwd))
    config = make_device_config(L2_PROGRAM)
    c.set_pipeline(config, action=SFP.VERIFY)  # checks only
    assert len(read_table(c, n[ING + "l2_fwd"])) == 1
    c.set_pipeline(config, action=SFP.RECONCILE_AND_COMMIT)  # keeps the entries
    assert len(read_table(c, n[ING + "l2_fwd"])) == 1
    c.set_pipeline(
        config, action=SFP.VERIFY_AND_SAVE
    )  # later requests see the saved (empty) config
    assert read_table(c, n[ING + "l2_fwd"]) == []
    c.write(upd(U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "to_cpu")))
    # ... while the data plane still runs the old one
    server.ports.ports[1].inject(MAC2 + MAC3 + b"\x08\x00" + bytes(50))
    assert server.ports.ports[2].wait_output(0.5) is not None
    c.set_pipeline(b"", action=SFP.COMMIT)
    got = read_table(c, n[ING + "l2_fwd"])
    assert len(got) == 1 and got[0].match[0].exact.value == b"\x03"  # canonical MAC3
    with pytest.raises(grpc.RpcError) as exc:
        c.set_pipeline(b"", action=SFP.COMMIT)  # nothing saved any more
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    c.set_pipeline(config, action=SFP.VERIFY_AND_COMMIT)  # a fresh pipeline: state cleared
    assert read_table(c, n[ING + "l2_fwd"]) == []


# ---------------------------------------------------------------- tables


def test_table_entries_every_match_kind_roundtrip(l2) -> None:
    c, n = l2
    entries = [
        table_entry(
            n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x00\x02"}
        ),  # padded: accepted
        table_entry(
            n,
            "dst_prefix",
            {"hdr.ethernet.dst": ("lpm", bytes.fromhex("0a0000000000"), 8)},
            "forward",
            {"port": b"\x03"},
        ),
        table_entry(
            n,
            "acl",
            {"hdr.ethernet.ether_type": ("ternary", b"\x88\x08", b"\xff\xff")},
            "to_cpu",
            priority=10,
        ),
        table_entry(
            n,
            "classify",
            {
                "hdr.ethernet.ether_type": ("range", b"\x08\x00", b"\x08\xff"),
                "sm.ingress_port": ("optional", b"\x01"),
            },
            "set_prio",
            {"prio": b"\x05"},
            priority=3,
        ),
    ]
    c.write(*(upd(U.INSERT, e) for e in entries))
    got = read_table(c)  # table_id 0: every table
    by_table = {e.table_id: e for e in got}
    assert len(got) == 4
    fwd = by_table[n[ING + "l2_fwd"]]
    assert fwd.action.action.params[0].value == b"\x02"  # canonical on the way back
    assert fwd.match[0].exact.value == b"\x02"  # MAC 00:..:02 canonical
    assert by_table[n[ING + "dst_prefix"]].match[0].lpm.prefix_len == 8
    assert by_table[n[ING + "acl"]].priority == 10
    cls = by_table[n[ING + "classify"]]
    assert cls.match[0].range.low == b"\x08\x00" and cls.match[1].optional.value == b"\x01"
    # one entry by its match
    one = read_table(c, n[ING + "acl"], priority=10)
    assert len(one) == 1
    # modify, then delete
    c.write(
        upd(
            U.MODIFY,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x04"}),
        )
    )
    assert read_table(c, n[ING + "l2_fwd"])[0].action.action.params[0].value == b"\x04"
    c.write(upd(U.DELETE, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2})))
    assert read_table(c, n[ING + "l2_fwd"]) == []


def test_table_write_errors_per_spec(l2) -> None:
    c, n = l2
    ok = table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"})
    c.write(upd(U.INSERT, ok))
    bad_table = p4runtime_pb2.TableEntry()
    bad_table.CopyFrom(ok)
    bad_table.table_id = 0x02FFFFFF
    no_param = table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "forward")
    wide = table_entry(
        n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "forward", {"port": b"\x02\x00"}
    )  # > 9 bits
    wrong_action = table_entry(
        n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "set_prio", {"prio": b"\x01"}
    )
    zero_mask = table_entry(
        n, "acl", {"hdr.ethernet.ether_type": ("ternary", b"\x00", b"\x00")}, "drop", priority=1
    )
    no_prio = table_entry(
        n, "acl", {"hdr.ethernet.ether_type": ("ternary", b"\x08\x00", b"\xff\xff")}, "drop"
    )
    prio_exact = table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "drop", priority=5)
    missing_exact = table_entry(n, "l2_fwd", {}, "drop")
    lpm_bits = table_entry(
        n, "dst_prefix", {"hdr.ethernet.dst": ("lpm", bytes.fromhex("0a0100000000"), 8)}, "NoAction"
    )
    idle = table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "drop")
    idle.idle_timeout_ns = 10**9
    codes = expect_codes(
        c,
        upd(U.INSERT, ok),  # duplicate
        upd(U.INSERT, bad_table),
        upd(U.INSERT, no_param),
        upd(U.INSERT, wide),
        upd(U.INSERT, wrong_action),
        upd(U.INSERT, zero_mask),
        upd(U.INSERT, no_prio),
        upd(U.INSERT, prio_exact),
        upd(U.INSERT, missing_exact),
        upd(U.INSERT, lpm_bits),
        upd(U.INSERT, idle),
        upd(U.MODIFY, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "drop")),  # not there
        upd(U.DELETE, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3})),
        upd(U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "drop")),  # fine
    )
    assert codes == [
        code_pb2.ALREADY_EXISTS,
        code_pb2.NOT_FOUND,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.OUT_OF_RANGE,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.INVALID_ARGUMENT,
        code_pb2.NOT_FOUND,
        code_pb2.NOT_FOUND,
        code_pb2.OK,
    ]
    assert len(read_table(c, n[ING + "l2_fwd"])) == 2  # the good ones went in
    with pytest.raises(grpc.RpcError) as exc:
        c.write(upd(U.INSERT, ok), atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    assert exc.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as exc:
        c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=0x02ABCDEF)))
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND


def test_default_entry_modify_and_reset(l2) -> None:
    c, n = l2
    tid = n[ING + "l2_fwd"]
    (d,) = read_table(c, tid, is_default_action=True)
    assert d.is_default_action and d.action.action.action_id == n[ING + "drop"]
    te = table_entry(n, "l2_fwd", None, "forward", {"port": b"\x03"})
    te.is_default_action = True
    c.write(upd(U.MODIFY, te))
    (d,) = read_table(c, tid, is_default_action=True)
    assert (
        d.action.action.action_id == n[ING + "forward"]
        and d.action.action.params[0].value == b"\x03"
    )
    assert expect_codes(c, upd(U.INSERT, te)) == [code_pb2.INVALID_ARGUMENT]
    reset = p4runtime_pb2.TableEntry(table_id=tid, is_default_action=True)
    c.write(upd(U.MODIFY, reset))
    (d,) = read_table(c, tid, is_default_action=True)
    assert d.action.action.action_id == n[ING + "drop"]


# ---------------------------------------------------------------- packets, counters, registers


def frame(dst: bytes, src: bytes, ethertype: int = 0x0800, size: int = 64) -> bytes:
    return dst + src + ethertype.to_bytes(2, "big") + bytes(size - 14)


def test_forwarding_counters_and_registers(l2, server) -> None:
    c, n = l2
    c.write(
        upd(
            U.INSERT,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"}),
        )
    )
    p1, p2 = server.ports.ports[1], server.ports.ports[2]
    for _ in range(3):
        p1.inject(frame(MAC2, MAC3, size=100))
    for _ in range(3):
        assert p2.wait_output(0.5) == frame(MAC2, MAC3, size=100)
    ce = p4runtime_pb2.CounterEntry(counter_id=n[ING + "port_rx"])
    ce.index.index = 1
    (got,) = c.read(p4runtime_pb2.Entity(counter_entry=ce))
    assert (got.counter_entry.data.packet_count, got.counter_entry.data.byte_count) == (3, 300)
    allcells = c.read(
        p4runtime_pb2.Entity(
            counter_entry=p4runtime_pb2.CounterEntry(counter_id=n[ING + "port_rx"])
        )
    )
    assert len(allcells) == 512
    # direct counter, two ways
    te = table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2})
    te.counter_data.SetInParent()
    (e,) = c.read(p4runtime_pb2.Entity(table_entry=te))
    assert e.table_entry.counter_data.packet_count == 3
    dce = p4runtime_pb2.DirectCounterEntry()
    dce.table_entry.table_id = n[ING + "l2_fwd"]
    (e,) = c.read(p4runtime_pb2.Entity(direct_counter_entry=dce))
    assert e.direct_counter_entry.data.byte_count == 300
    # counter write
    ce.data.packet_count, ce.data.byte_count = 100, 1000
    c.write(upd(U.MODIFY, counter_entry=ce))
    (got,) = c.read(
        p4runtime_pb2.Entity(
            counter_entry=p4runtime_pb2.CounterEntry(counter_id=ce.counter_id, index=ce.index)
        )
    )
    assert got.counter_entry.data.packet_count == 100
    assert expect_codes(c, upd(U.INSERT, counter_entry=ce)) == [code_pb2.INVALID_ARGUMENT]
    # register written by the program: last packet length seen on port 1
    re_ = p4runtime_pb2.RegisterEntry(register_id=n[ING + "last_len"])
    re_.index.index = 1
    (got,) = c.read(p4runtime_pb2.Entity(register_entry=re_))
    assert int.from_bytes(got.register_entry.data.bitstring, "big") == 100
    re_.data.bitstring = b"\x12\x34"
    c.write(upd(U.MODIFY, register_entry=re_))
    (got,) = c.read(
        p4runtime_pb2.Entity(
            register_entry=p4runtime_pb2.RegisterEntry(register_id=re_.register_id, index=re_.index)
        )
    )
    assert got.register_entry.data.bitstring == b"\x12\x34"
    re_.index.index = 99
    assert expect_codes(c, upd(U.MODIFY, register_entry=re_)) == [code_pb2.OUT_OF_RANGE]


def test_meter_config_roundtrip(l2) -> None:
    c, n = l2
    me = p4runtime_pb2.MeterEntry(meter_id=n[ING + "port_meter"])
    me.index.index = 2
    me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 1000, 10, 2000, 20
    c.write(upd(U.MODIFY, meter_entry=me))
    (got,) = c.read(
        p4runtime_pb2.Entity(
            meter_entry=p4runtime_pb2.MeterEntry(meter_id=me.meter_id, index=me.index)
        )
    )
    assert got.meter_entry.config == me.config
    me.config.cir = 5000  # cir > pir
    assert expect_codes(c, upd(U.MODIFY, meter_entry=me)) == [code_pb2.INVALID_ARGUMENT]


def test_multicast_and_clone_sessions(l2, server) -> None:
    c, n = l2
    mg = p4runtime_pb2.PacketReplicationEngineEntry()
    mg.multicast_group_entry.multicast_group_id = 7
    for port in (2, 3, 4):
        mg.multicast_group_entry.replicas.add(egress_port=port, instance=1)
    c.write(upd(U.INSERT, packet_replication_engine_entry=mg))
    assert expect_codes(c, upd(U.INSERT, packet_replication_engine_entry=mg)) == [
        code_pb2.ALREADY_EXISTS
    ]
    c.write(
        upd(
            U.INSERT,
            table_entry(
                n, "l2_fwd", {"hdr.ethernet.dst": b"\xff" * 6}, "flood", {"group": b"\x07"}
            ),
        )
    )
    f = frame(b"\xff" * 6, MAC3)
    server.ports.ports[1].inject(f)
    for port in (2, 3, 4):
        assert server.ports.ports[port].wait_output(0.5) == f, port
    query = p4runtime_pb2.PacketReplicationEngineEntry()
    query.multicast_group_entry.SetInParent()
    (got,) = c.read(p4runtime_pb2.Entity(packet_replication_engine_entry=query))
    assert got.packet_replication_engine_entry == mg
    cs = p4runtime_pb2.PacketReplicationEngineEntry()
    cs.clone_session_entry.session_id = 5
    cs.clone_session_entry.replicas.add(egress_port=4, instance=0)
    c.write(upd(U.INSERT, packet_replication_engine_entry=cs))
    q = p4runtime_pb2.PacketReplicationEngineEntry()
    q.clone_session_entry.session_id = 5
    (got,) = c.read(p4runtime_pb2.Entity(packet_replication_engine_entry=q))
    assert got.packet_replication_engine_entry.clone_session_entry.replicas[0].egress_port == 4
    c.write(upd(U.DELETE, packet_replication_engine_entry=mg))
    assert expect_codes(c, upd(U.DELETE, packet_replication_engine_entry=mg)) == [
        code_pb2.NOT_FOUND
    ]


def test_packet_out_and_packet_in(l2, server) -> None:
    c, n = l2
    out_md, in_md = n.metadata["packet_out"], n.metadata["packet_in"]
    payload = frame(MAC2, MAC3, ethertype=0x88B5)
    c.packet_out(payload, {out_md["egress_port"]: b"\x03", out_md["pad"]: b"\x00"})
    assert (
        server.ports.ports[3].wait_output(1.0) == payload
    )  # packet_out header stripped by the program
    # a frame to_cpu comes back as PacketIn with its ingress port
    c.write(upd(U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "to_cpu")))
    f = frame(MAC3, MAC2, size=80)
    server.ports.ports[2].inject(f)
    msg = c.get("packet").packet
    assert msg.payload == f
    assert {m.metadata_id: m.value for m in msg.metadata}[in_md["ingress_port"]] == b"\x02"
    # bad metadata id: a StreamError that names the packet
    c.packet_out(payload, {99: b"\x01"})
    err = c.get("error").error
    assert (
        err.canonical_code == code_pb2.INVALID_ARGUMENT
        and err.packet_out.packet_out.payload == payload
    )


def test_backup_cannot_packet_out_and_gets_no_packet_in(l2, server, connect) -> None:
    c, n = l2
    b = connect()
    b.arbitrate((0, 0))
    assert b.get("arbitration").arbitration.status.code == code_pb2.ALREADY_EXISTS
    b.packet_out(b"\x00" * 20, {})
    assert b.get("error").error.canonical_code == code_pb2.PERMISSION_DENIED
    c.write(upd(U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "to_cpu")))
    server.ports.ports[1].inject(frame(MAC3, MAC2))
    assert c.get("packet").packet.payload
    assert b.inbox["packet"].empty()


def test_digests_after_digest_entry_and_acks(l2, server) -> None:
    c, n = l2
    did = n["learn_t"] if "learn_t" in n.ids else next(d.preamble.id for d in n.p4info.digests)
    p1 = server.ports.ports[1]
    p1.inject(frame(MAC2, MAC3))  # not configured yet: no digest
    de = p4runtime_pb2.DigestEntry(digest_id=did)
    de.config.max_timeout_ns, de.config.max_list_size, de.config.ack_timeout_ns = 0, 1, 10**9
    c.write(upd(U.INSERT, digest_entry=de))
    assert expect_codes(c, upd(U.INSERT, digest_entry=de)) == [code_pb2.ALREADY_EXISTS]
    (got,) = c.read(p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry(digest_id=did)))
    assert got.digest_entry.config.ack_timeout_ns == 10**9
    p1.inject(frame(MAC2, MAC3))
    d = c.get("digest").digest
    assert d.digest_id == did and len(d.data) == 1
    members = d.data[0].struct.members
    assert members[0].bitstring == b"\x03" and members[1].bitstring == b"\x01"  # src MAC, port
    assert c.inbox["digest"].empty()
    p1.inject(frame(MAC2, MAC3))  # same data, not acked: not sent again
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = did, d.list_id
    c.stream_send(ack)
    import time

    time.sleep(0.2)
    assert c.inbox["digest"].empty()
    p1.inject(frame(MAC2, MAC3))  # acked: may be sent again
    assert c.get("digest").digest.list_id > d.list_id


def test_direct_meter_config_roundtrip(l2) -> None:
    c, n = l2
    te = table_entry(
        n,
        "acl",
        {"hdr.ethernet.ether_type": ("ternary", b"\x08\x00", b"\xff\xff")},
        "acl_police",
        priority=1,
    )
    c.write(upd(U.INSERT, te))
    dme = p4runtime_pb2.DirectMeterEntry()
    dme.table_entry.CopyFrom(
        table_entry(
            n, "acl", {"hdr.ethernet.ether_type": ("ternary", b"\x08\x00", b"\xff\xff")}, priority=1
        )
    )
    dme.config.cir, dme.config.cburst, dme.config.pir, dme.config.pburst = 100, 1, 200, 2
    c.write(upd(U.MODIFY, direct_meter_entry=dme))
    query = p4runtime_pb2.DirectMeterEntry()
    query.table_entry.table_id = n[ING + "acl"]
    (got,) = c.read(p4runtime_pb2.Entity(direct_meter_entry=query))
    assert got.direct_meter_entry.config == dme.config
    assert got.direct_meter_entry.table_entry.priority == 1
    no_meter = p4runtime_pb2.DirectMeterEntry()
    no_meter.table_entry.CopyFrom(table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}))
    no_meter.config.cir = no_meter.config.pir = 1
    assert expect_codes(c, upd(U.MODIFY, direct_meter_entry=no_meter)) == [
        code_pb2.INVALID_ARGUMENT
    ]


def test_the_running_program_pushed_again_is_not_compiled_again(l2, monkeypatch) -> None:
    """A commit of the device config already installed starts a fresh switch of the same
    compiled program (STF runs and fixtures push to reset state): entries gone, nothing
    compiled; any other config still compiles (here: refused by the planted compiler)."""
    import p4sim.server.pipeline_config as pipeline_config

    c, n = l2
    c.write(
        upd(
            U.INSERT,
            table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"}),
        )
    )

    def no_compile(*a, **k):
        raise AssertionError("compiled again")

    monkeypatch.setattr(pipeline_config, "compile_device_config", no_compile)
    config = make_device_config(L2_PROGRAM)
    c.set_pipeline(config, action=SFP.VERIFY_AND_COMMIT)
    assert read_table(c, n[ING + "l2_fwd"]) == []
    c.set_pipeline(config, action=SFP.VERIFY_AND_COMMIT)  # twice: the files stay usable
    c.write(upd(U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "to_cpu")))
    assert len(read_table(c, n[ING + "l2_fwd"])) == 1
    other = L2_PROGRAM.read_text().encode() + b"\n// another program\n"
    with pytest.raises(grpc.RpcError):
        c.set_pipeline(other, action=SFP.VERIFY_AND_COMMIT)
