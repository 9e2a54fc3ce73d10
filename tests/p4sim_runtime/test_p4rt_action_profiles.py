"""P4Runtime ActionProfileMember / ActionProfileGroup and indirect table entries, through
p4rtproto's client against the in-process server (programs/action_profiles.p4).

The member a selector group gives a packet is checked against a CRC-16/ARC written here
from its definition (not p4sim's table-driven one) and BMv2's rule: members in handle
order (lowest free handle first), member `hash % size`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from p4rtproto import p4runtime_pb2
from p4rtproto.client import Connection
from p4rtproto.errors import P4RuntimeError
from p4sim.lower import load_program
from p4sim.p4info import p4info_from_model
from p4sim.server import make_device_config

PROGRAM = Path(__file__).resolve().parent / "programs" / "action_profiles.p4"
U = p4runtime_pb2.Update


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC by its definition: reflected poly 0x8005 (0xA001), init 0, no xorout."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def test_crc16_arc_reference_value():
    assert crc16_arc(b"123456789") == 0xBB3D  # the catalogue's check value


class Rig:
    def __init__(self, server):
        self.server = server
        self.conn = Connection(f"127.0.0.1:{server.port}", device_id=1)
        p4info = p4info_from_model(load_program(str(PROGRAM)).model)
        self.conn.set_pipeline(p4info.SerializeToString(), make_device_config(str(PROGRAM)))
        self.p4info = p4info
        self.prof = {a.preamble.name: a.preamble.id for a in p4info.action_profiles}
        self.table = {t.preamble.name: t.preamble.id for t in p4info.tables}
        self.action = {a.preamble.name: a.preamble.id for a in p4info.actions}

    def member(
        self, prof: str, mid: int, action: str = "I.fwd", *, utype: int = U.INSERT, **params: int
    ):
        u = U(type=utype)
        m = u.entity.action_profile_member
        m.action_profile_id, m.member_id = self.prof[prof], mid
        if action:
            ainfo = next(a for a in self.p4info.actions if a.preamble.name == action)
            m.action.action_id = ainfo.preamble.id
            for p in ainfo.params:
                m.action.params.add(
                    param_id=p.id, value=params[p.name].to_bytes((p.bitwidth + 7) // 8, "big")
                )
        return u

    def group(
        self,
        gid: int,
        mids: list[int],
        *,
        prof: str = "I.sel",
        utype: int = U.INSERT,
        weight: int = 1,
        max_size: int = 0,
    ):
        u = U(type=utype)
        g = u.entity.action_profile_group
        g.action_profile_id, g.group_id, g.max_size = self.prof[prof], gid, max_size
        for mid in mids:
            g.members.add(member_id=mid, weight=weight)
        return u

    def entry(
        self,
        table: str,
        key: int,
        *,
        member: int | None = None,
        group: int | None = None,
        utype: int = U.INSERT,
        width: int = 1,
    ):
        u = U(type=utype)
        te = u.entity.table_entry
        te.table_id = self.table[table]
        te.match.add(field_id=1).exact.value = key.to_bytes(width, "big")
        if member is not None:
            te.action.action_profile_member_id = member
        if group is not None:
            te.action.action_profile_group_id = group
        return u

    def write(self, *updates) -> None:
        self.conn.write(updates)

    def code(self, *updates) -> str:
        with pytest.raises(P4RuntimeError) as ei:
            self.conn.write(updates)
        return ei.value.code

    def send(self, k: int, c: int = 0, d: int = 0) -> tuple[int, int]:
        """(egress port, r byte) of the packet k, r=0, c, d."""
        ports = self.server.ports.ports
        ports[1].inject(bytes([k, 0]) + c.to_bytes(2, "big") + bytes([d]))
        deadline = time.monotonic() + 2.0
        while not any(ports[n].output for n in (1, 2, 3, 4)) and time.monotonic() < deadline:
            time.sleep(0.001)
        got = [(n, ports[n].wait_output(0)) for n in (1, 2, 3, 4) if ports[n].output]
        assert len(got) == 1, got
        return got[0][0], got[0][1][1]


@pytest.fixture
def rig(server):
    r = Rig(server)
    yield r
    r.conn.close()


KEYS = [(c, d) for c in (0, 1, 0x1234, 0xBEEF, 0xFFFF) for d in (0, 7, 0x80)]


def expected(order: list[int], c: int, d: int) -> int:
    return order[crc16_arc(c.to_bytes(2, "big") + bytes([d])) % len(order)]


def test_selector_group_picks_member_by_crc16_in_handle_order(rig):
    # member ids out of order: handles follow insertion (30 -> 0, 10 -> 1, 20 -> 2)
    for mid in (30, 10, 20):
        rig.write(rig.member("I.sel", mid, port=mid // 10, r=mid))
    rig.write(rig.group(7, [10, 20, 30]))
    rig.write(rig.entry("I.t_sel", 5, group=7))
    got = {key: rig.send(5, *key) for key in KEYS}
    want = {key: expected([30, 10, 20], *key) for key in KEYS}
    assert {k: r for k, (_, r) in got.items()} == want
    assert all(port == r // 10 for port, r in got.values())
    assert len(set(want.values())) == 3  # the keys reach every member: the order matters
    # a freed handle is reused by the next member: 50 takes 30's handle 0, so it comes first
    rig.write(rig.group(7, [10, 20], utype=U.MODIFY))
    rig.write(rig.member("I.sel", 30, "", utype=U.DELETE))
    rig.write(rig.member("I.sel", 50, port=1, r=50))
    rig.write(rig.group(7, [10, 20, 50], utype=U.MODIFY))
    assert {key: rig.send(5, *key)[1] for key in KEYS} == {
        key: expected([50, 10, 20], *key) for key in KEYS
    }
    # an entry can point at one member of a selector too; a miss runs the default action
    rig.write(rig.entry("I.t_sel", 6, member=20))
    assert {rig.send(6, *key) for key in KEYS} == {(2, 20)}
    assert rig.send(9) == (4, 0xEE)


def test_emptied_group_runs_no_action(rig):
    rig.write(rig.member("I.sel", 1, port=3, r=1))
    rig.write(rig.group(2, [1]))
    rig.write(rig.entry("I.t_sel", 5, group=2))
    assert rig.send(5) == (3, 1)
    rig.write(rig.group(2, [], utype=U.MODIFY))
    # BMv2 MatchTableIndirect::lookup: "yielded empty group" -> an empty action: neither
    # fwd nor the default action (mark, port 4) runs; the port set before the table stays
    assert rig.send(5) == (2, 0)


def test_shared_profile_one_member_two_tables(rig):
    # t_a lists (fwd, mark), t_b (mark, fwd): the member runs its own action in both
    rig.write(rig.member("I.ap", 1, port=2, r=0x11))
    rig.write(rig.entry("I.t_a", 0x90, member=1))
    rig.write(rig.entry("I.t_b", 0xC100, member=1, width=2))
    assert rig.send(0x90) == (2, 0x11)
    assert rig.send(0xC1, c=0xC100) == (2, 0x11)
    rig.write(rig.member("I.ap", 1, "I.mark", utype=U.MODIFY, r=0x22))  # both tables see it
    assert rig.send(0x90) == (4, 0x22)
    assert rig.send(0xC1, c=0xC100) == (4, 0x22)
    # the in-place profile of t_c is its own; p4c names it as its @name says (no prefix)
    rig.write(rig.member("inplace", 1, "I.mark", r=0x33))
    rig.write(rig.entry("I.t_c", 0x44, member=1))
    assert rig.send(0, d=0x44) == (4, 0x33)


def test_read_back_members_groups_and_entries(rig):
    rig.write(rig.member("I.sel", 4, port=1, r=4), rig.member("I.sel", 3, port=2, r=3))
    rig.write(rig.group(9, [4, 3]))
    rig.write(rig.entry("I.t_sel", 5, group=9), rig.entry("I.t_sel", 6, member=3))
    ms = rig.conn.read(
        [
            p4runtime_pb2.Entity(
                action_profile_member=p4runtime_pb2.ActionProfileMember(
                    action_profile_id=rig.prof["I.sel"]
                )
            )
        ]
    )
    assert sorted(
        (e.action_profile_member.member_id, e.action_profile_member.action.params[1].value)
        for e in ms
    ) == [(3, b"\x03"), (4, b"\x04")]
    (g,) = rig.conn.read(
        [
            p4runtime_pb2.Entity(
                action_profile_group=p4runtime_pb2.ActionProfileGroup(
                    action_profile_id=rig.prof["I.sel"], group_id=9
                )
            )
        ]
    )
    assert sorted(m.member_id for m in g.action_profile_group.members) == [3, 4]
    es = rig.conn.read(
        [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=rig.table["I.t_sel"]))]
    )
    got = {e.table_entry.match[0].exact.value: e.table_entry.action.WhichOneof("type") for e in es}
    assert got == {b"\x05": "action_profile_group_id", b"\x06": "action_profile_member_id"}
    # every member of every profile
    every = rig.conn.read(
        [p4runtime_pb2.Entity(action_profile_member=p4runtime_pb2.ActionProfileMember())]
    )
    assert len(every) == 2


def test_misuse_codes(rig):
    rig.write(rig.member("I.sel", 1, port=1, r=1), rig.member("I.sel", 2, port=2, r=2))
    rig.write(rig.member("I.ap", 5, port=1, r=5))
    rig.write(rig.group(1, [1]))
    rig.write(rig.entry("I.t_sel", 5, group=1), rig.entry("I.t_sel", 6, member=2))
    rig.write(rig.entry("I.t_a", 0x90, member=5))
    cases = {
        "unknown member in a group": (rig.group(2, [1, 99]), "NOT_FOUND"),
        "member of another profile": (rig.group(3, [5]), "NOT_FOUND"),
        "member in a group": (rig.member("I.sel", 1, "", utype=U.DELETE), "FAILED_PRECONDITION"),
        "member used by an entry": (
            rig.member("I.sel", 2, "", utype=U.DELETE),
            "FAILED_PRECONDITION",
        ),
        "member of a shared profile in use": (
            rig.member("I.ap", 5, "", utype=U.DELETE),
            "FAILED_PRECONDITION",
        ),
        "group used by an entry": (rig.group(1, [], utype=U.DELETE), "FAILED_PRECONDITION"),
        "oversize group": (rig.group(4, [1, 2, 3, 4, 5]), "RESOURCE_EXHAUSTED"),
        "group over its max_size": (rig.group(4, [1, 2], max_size=1), "RESOURCE_EXHAUSTED"),
        "member twice": (rig.member("I.sel", 1, port=1, r=1), "ALREADY_EXISTS"),
        "group twice": (rig.group(1, [2]), "ALREADY_EXISTS"),
        "unknown member": (rig.member("I.sel", 77, "", utype=U.DELETE), "NOT_FOUND"),
        "unknown group": (rig.group(77, [], utype=U.DELETE), "NOT_FOUND"),
        "entry, unknown member": (rig.entry("I.t_sel", 7, member=77), "NOT_FOUND"),
        "entry, unknown group": (rig.entry("I.t_sel", 7, group=77), "NOT_FOUND"),
        "entry, group of a profile": (rig.entry("I.t_a", 0x91, group=1), "INVALID_ARGUMENT"),
        "group in a profile": (rig.group(5, [5], prof="I.ap"), "INVALID_ARGUMENT"),
        "weight 2": (rig.group(6, [1], weight=2), "UNIMPLEMENTED"),
    }
    direct = rig.entry("I.t_sel", 8)
    direct.entity.table_entry.action.action.action_id = rig.action["I.mark"]
    direct.entity.table_entry.action.action.params.add(param_id=1, value=b"\x01")
    cases["direct action on an indirect table"] = (direct, "INVALID_ARGUMENT")
    rig.write(rig.group(8, []))
    cases["entry, empty group"] = (rig.entry("I.t_sel", 9, group=8), "FAILED_PRECONDITION")
    oneshot = rig.entry("I.t_sel", 10)
    oneshot.entity.table_entry.action.action_profile_action_set.SetInParent()
    cases["one-shot action set"] = (oneshot, "UNIMPLEMENTED")
    got = {name: rig.code(u) for name, (u, _) in cases.items()}
    assert got == {name: code for name, (_, code) in cases.items()}
    # the state is untouched: the entries still run what they ran
    assert rig.send(5) == (1, 1)
    assert rig.send(6) == (2, 2)
    assert rig.send(0x90) == (1, 5)


def test_full_profile_is_resource_exhausted(rig):
    rig.write(*(rig.member("I.ap", m, port=1, r=m) for m in range(4)))
    assert rig.code(rig.member("I.ap", 9, port=1, r=9)) == "RESOURCE_EXHAUSTED"
    rig.write(rig.member("I.ap", 0, "", utype=U.DELETE))
    rig.write(rig.member("I.ap", 9, port=1, r=9))  # room again


def test_deleting_the_entries_releases_members_and_groups(rig):
    rig.write(rig.member("I.sel", 1, port=1, r=1))
    rig.write(rig.group(1, [1]))
    rig.write(rig.entry("I.t_sel", 5, group=1), rig.entry("I.t_sel", 6, member=1))
    rig.write(rig.entry("I.t_sel", 5, utype=U.DELETE), rig.entry("I.t_sel", 6, utype=U.DELETE))
    rig.write(rig.group(1, [], utype=U.DELETE))
    rig.write(rig.member("I.sel", 1, "", utype=U.DELETE))
    assert not rig.conn.read(
        [p4runtime_pb2.Entity(action_profile_member=p4runtime_pb2.ActionProfileMember())]
    )


def test_group_count_is_bounded_by_the_selector_size(rig):
    rig.write(*(rig.group(g, []) for g in range(8)))  # sel: size 8
    assert rig.code(rig.group(8, [])) == "RESOURCE_EXHAUSTED"


def test_p4sim_switch_process_serves_profiles(live_switch):
    """The same writes against the `p4sim-switch` command: members, a group, an entry on it,
    Read back, and the refusal of deleting what is in use."""

    class Proc:  # what Rig needs of a server: its port (no packets: no data ports here)
        port = live_switch.port

    r = Rig(Proc())
    try:
        r.write(r.member("I.sel", 1, port=1, r=1), r.member("I.sel", 2, port=2, r=2))
        r.write(r.group(5, [2, 1]))
        r.write(r.entry("I.t_sel", 5, group=5))
        (g,) = r.conn.read(
            [
                p4runtime_pb2.Entity(
                    action_profile_group=p4runtime_pb2.ActionProfileGroup(
                        action_profile_id=r.prof["I.sel"], group_id=5
                    )
                )
            ]
        )
        assert sorted(m.member_id for m in g.action_profile_group.members) == [1, 2]
        (e,) = r.conn.read(
            [
                p4runtime_pb2.Entity(
                    table_entry=p4runtime_pb2.TableEntry(table_id=r.table["I.t_sel"])
                )
            ]
        )
        assert e.table_entry.action.action_profile_group_id == 5
        assert r.code(r.member("I.sel", 1, "", utype=U.DELETE)) == "FAILED_PRECONDITION"
        assert r.code(r.group(5, [], utype=U.DELETE)) == "FAILED_PRECONDITION"
    finally:
        r.conn.close()
