"""P4Runtime TableEntries that leave match fields out. The spec (P4Runtime 1.3, "Match
Format"): a don't-care LPM (prefix length 0), ternary (mask 0), range (full range) or
optional field is encoded by omitting it. Through p4sim's server an omitted LPM field is a
/0 entry, as in BMv2's LPMMatchUnit: it matches every key and loses to any longer prefix."""

from __future__ import annotations

from test_p4rt_pipeline import ING, MAC3, U, expect_codes, read_table, table_entry, upd

from p4rtproto import code_pb2


def _frame(dst: bytes, ether_type: bytes) -> bytes:
    return dst + MAC3 + ether_type + bytes(50)


def test_omitted_lpm_field_is_a_slash_0_route(l2, server) -> None:
    c, n = l2
    default_route = table_entry(n, "dst_prefix", None, "forward", {"port": b"\x02"})
    longer = table_entry(
        n,
        "dst_prefix",
        {"hdr.ethernet.dst": ("lpm", bytes.fromhex("0a0000000000"), 8)},
        "forward",
        {"port": b"\x03"},
    )
    c.write(upd(U.INSERT, default_route), upd(U.INSERT, longer))
    got = {len(e.match): e for e in read_table(c, n[ING + "dst_prefix"])}
    assert sorted(got) == [0, 1]  # the /0 entry reads back with its field still omitted
    assert got[0].action.action.params[0].value == b"\x02"
    # the same /0 again is the same entry
    assert expect_codes(c, upd(U.INSERT, default_route)) == [code_pb2.ALREADY_EXISTS]
    p1, p2, p3 = (server.ports.ports[i] for i in (1, 2, 3))
    inside = _frame(bytes.fromhex("0a0000000009"), b"\x08\x00")
    outside = _frame(bytes.fromhex("0b0000000009"), b"\x08\x00")
    p1.inject(inside)  # the /8 wins over the /0
    assert p3.wait_output(0.5) == inside and p2.wait_output(0.05) is None
    p1.inject(outside)  # nothing longer: the /0
    assert p2.wait_output(0.5) == outside and p3.wait_output(0.05) is None
    # deleting the /0 by the same omitted field: the packet outside the /8 now misses (NoAction: port 0)
    c.write(upd(U.DELETE, table_entry(n, "dst_prefix", None)))
    assert len(read_table(c, n[ING + "dst_prefix"])) == 1
    p1.inject(outside)
    assert p2.wait_output(0.1) is None and p3.wait_output(0.05) is None


def test_omitted_ternary_range_optional_fields_are_wildcards(l2, server) -> None:
    c, n = l2
    c.write(upd(U.INSERT, table_entry(n, "dst_prefix", None, "forward", {"port": b"\x02"})))
    drop_all = table_entry(n, "acl", None, "drop", priority=1)  # both ternary fields omitted
    keep_ip = table_entry(
        n,
        "acl",
        {"hdr.ethernet.ether_type": ("ternary", b"\x08\x00", b"\xff\xff")},
        "NoAction",
        priority=5,
    )
    every = table_entry(
        n, "classify", None, "set_prio", {"prio": b"\x05"}, priority=1
    )  # range + optional omitted
    c.write(upd(U.INSERT, drop_all), upd(U.INSERT, keep_ip), upd(U.INSERT, every))
    assert (
        expect_codes(c, upd(U.INSERT, drop_all), upd(U.INSERT, every))
        == [code_pb2.ALREADY_EXISTS] * 2
    )
    (cls,) = read_table(c, n[ING + "classify"])
    assert len(cls.match) == 0 and cls.priority == 1
    p1, p2 = server.ports.ports[1], server.ports.ports[2]
    ip = _frame(bytes.fromhex("0b0000000009"), b"\x08\x00")
    arp = _frame(bytes.fromhex("0b0000000009"), b"\x08\x06")
    p1.inject(ip)  # priority 5 beats the wildcard
    assert p2.wait_output(0.5) == ip
    p1.inject(arp)  # only the wildcard matches: dropped
    assert p2.wait_output(0.1) is None
