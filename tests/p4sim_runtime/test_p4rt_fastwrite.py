"""Write's fast path (p4sim/server/fastwrite/) against the reference path.

Two servers run l2_cpu.p4, one with the fast path, one without (`fast_write=False`).
The same generated WriteRequests (valid and hostile: wrong ids, bad bitwidths, empty
values, duplicate keys and fields, wrong kinds and priorities, MODIFY/DELETE of missing
entries, batches with errors in the middle, unknown fields, reordered fields) go to both
as raw bytes; every answer (status code, message, the per-update p4.v1.Error trailer) and
the table contents after every request must be identical. The fast path must actually
have been taken (its hit count), and a planted fast path that lets a refused value in
must be caught by the same comparison.

p4sim implements CONTINUE_ON_ERROR only (P4Runtime 1.4 section 12.2: every update is
tried, each failure reported at its index; ROLLBACK/DATAPLANE atomicity answer
UNIMPLEMENTED), so a batch with an error in the middle keeps the updates around it.
"""

from __future__ import annotations

import random

import grpc
import pytest
from p4rt_helpers import L2_PROGRAM, PROGRAMS, Names, RawClient, find

from p4rtproto import p4runtime_pb2
from p4sim.runtime.tables import Table
from p4sim.server import P4RuntimeServer, fastwrite, make_device_config
from p4sim.server.fastwrite import builders, scan
from p4sim.server.fastwrite import shapes as shapes_mod

U = p4runtime_pb2.Update
TABLES = ("l2_fwd", "smac", "acl", "classify", "dst_prefix")


KINDS_PROGRAM = PROGRAMS / "fastwrite_kinds.p4"


def _start(fast: bool, program=L2_PROGRAM) -> tuple[P4RuntimeServer, RawClient, Names]:
    srv = P4RuntimeServer(device_id=1, cpu_port=255, fast_write=fast)
    srv.program = program  # what _differences pushes afresh
    srv.start("127.0.0.1:0")
    c = RawClient(f"127.0.0.1:{srv.port}", 1)
    c.arbitrate((0, 1))
    assert c.get("arbitration").arbitration.status.code == 0
    c.set_pipeline(make_device_config(program))
    cfg = c.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
    )
    return srv, c, Names(cfg.config.p4info)


@pytest.fixture(scope="module")
def pair():
    made = [_start(True), _start(False)]
    yield made
    for srv, c, _ in made:
        c.close()
        srv.stop(grace=0)


class Gen:
    """Random WriteRequests over l2_cpu.p4: mostly well-formed, ~1/3 of updates broken."""

    def __init__(self, n: Names, seed: int) -> None:
        self.n, self.r = n, random.Random(seed)
        self.t = {s: find(n, s) for s in TABLES}
        self.a = {
            s: find(n, s)
            for s in (
                "forward",
                "to_cpu",
                "flood",
                "drop",
                "learn",
                "NoAction",
                "set_prio",
                "acl_police",
            )
        }

    def mac(self) -> bytes:  # a small key space: duplicates and hits on DELETE/MODIFY happen
        v = (0x02 << 40) | self.r.randrange(24)
        b = v.to_bytes(6, "big")
        return self.r.choice([b, b, b, b"\x00" + b, b.lstrip(b"\x00")])

    def val(self, width: int, v: int | None = None) -> bytes:
        r = self.r
        if v is None:
            v = r.randrange(1 << width)
        nb = (width + 7) // 8
        kind = r.random()
        if kind < 0.06:
            return b""  # empty: INVALID_ARGUMENT
        if kind < 0.14:
            return (v | (1 << width)).to_bytes(nb + 1, "big")  # too wide: OUT_OF_RANGE
        if kind < 0.2:
            return b"\x00" + v.to_bytes(nb, "big")  # zero-padded: accepted
        return v.to_bytes(nb, "big")

    def entry(self, utype: int) -> p4runtime_pb2.TableEntry:
        r, n = self.r, self.n
        table = r.choice(TABLES)
        tname = self.t[table]
        te = p4runtime_pb2.TableEntry(table_id=n[tname])
        fid = n.fields[tname]
        if table in ("l2_fwd", "smac"):
            field = "hdr.ethernet.dst" if table == "l2_fwd" else "hdr.ethernet.src"
            fm = te.match.add(field_id=fid[field])
            if r.random() < 0.05:
                fm.lpm.value, fm.lpm.prefix_len = self.mac(), 8  # wrong kind
            else:
                fm.exact.value = self.mac() if r.random() < 0.9 else self.val(48)
            acts = (
                ("forward", "to_cpu", "flood", "drop")
                if table == "l2_fwd"
                else ("learn", "NoAction")
            )
        elif table == "acl":
            et = r.choice([0x0800, 0x86DD, 0x8808, 0x88F7])
            mask = r.choice([0xFFFF, 0xFF00, 0, 0xFFFF])
            fm = te.match.add(field_id=fid["hdr.ethernet.ether_type"])
            fm.ternary.value = self.val(16, et & mask if r.random() < 0.9 else et)
            fm.ternary.mask = self.val(16, mask)
            if r.random() < 0.5:
                fm = te.match.add(field_id=fid["hdr.ethernet.src"])
                fm.ternary.value, fm.ternary.mask = self.mac(), b"\xff" * 6
            te.priority = r.choice([1, 5, 10, 0])
            acts = ("drop", "to_cpu", "acl_police", "NoAction")
        elif table == "classify":
            fm = te.match.add(field_id=fid["hdr.ethernet.ether_type"])
            lo = r.randrange(0x0800, 0x0900)
            fm.range.low, fm.range.high = self.val(16, lo), self.val(16, lo + r.randrange(-2, 16))
            if r.random() < 0.6:
                te.match.add(field_id=fid["sm.ingress_port"]).optional.value = self.val(
                    9, r.randrange(1, 5)
                )
            te.priority = r.choice([1, 3, 0])
            acts = ("set_prio", "NoAction")
        else:
            plen = r.choice([8, 16, 24, 48, 0, 49])
            fm = te.match.add(field_id=fid["hdr.ethernet.dst"])
            v = r.choice([0x02AB00000000, 0x0A0000000001, 0xFFFFFFFFFFFF]) ^ r.randrange(
                4
            )  # duplicates happen
            if r.random() < 0.85 and 0 < plen <= 48:
                v &= ~((1 << (48 - plen)) - 1)  # else: bits beyond the prefix
            fm.lpm.value, fm.lpm.prefix_len = self.val(48, v), plen
            acts = ("forward", "NoAction")
        # hostile touches on ids and shape
        x = r.random()
        if x < 0.03:
            te.table_id = 0x02FFFFFF
        elif x < 0.06:
            te.match[0].field_id = 99
        elif x < 0.08 and len(te.match):
            te.match.add().CopyFrom(te.match[0])  # a field given twice
        elif x < 0.10 and table == "l2_fwd":
            te.priority = 3  # priority on an exact table
        elif x < 0.11:
            te.is_default_action = True
        elif x < 0.12:
            te.metadata = b"cookie"
        elif x < 0.13:
            te.idle_timeout_ns = 1000
        if utype == U.DELETE and r.random() < 0.8:
            return te
        act = r.choice(acts) if r.random() < 0.95 else "set_prio" if table != "classify" else "drop"
        a = te.action.action
        a.action_id = n[self.a[act]]
        aname = self.a[act]
        for pname, pid in n.params[aname].items():
            if r.random() < 0.03:
                continue  # a missing parameter
            width = {"port": 9, "group": 16, "prio": 3}[pname]
            a.params.add(param_id=pid if r.random() > 0.02 else 77, value=self.val(width))
            if r.random() < 0.02:
                a.params.add(param_id=pid, value=b"\x01")  # given twice
        return te

    def update(self) -> bytes:
        r = self.r
        utype = r.choice(
            [U.INSERT] * 5
            + [U.MODIFY] * 2
            + [U.DELETE] * 2
            + ([U.UNSPECIFIED] if r.random() < 0.1 else [])
        )
        u = U(type=utype)
        u.entity.table_entry.CopyFrom(self.entry(utype))
        raw = u.SerializeToString()
        x = r.random()
        if x < 0.03:
            raw += b"\x78\x05"  # an unknown field (15, varint) after the entity
        elif x < 0.05:
            raw = b"\x08" + bytes([utype]) + raw  # the type given twice (the last wins)
        return raw

    def request(self, eid: tuple[int, int]) -> bytes:
        r = self.r
        w = p4runtime_pb2.WriteRequest(device_id=1)
        w.election_id.high, w.election_id.low = eid
        x = r.random()
        if x < 0.02:
            w.device_id = 9
        elif x < 0.04:
            w.atomicity = w.ROLLBACK_ON_ERROR
        head = w.SerializeToString()
        body = b"".join(
            b"\x22" + _varint(len(u)) + u
            for u in (self.update() for _ in range(r.randrange(1, 25)))
        )
        return head + body


RUNGEN_ONLY = (
    "MyIngress.small",
)  # fastwrite_kinds.p4's table that RunGen fills (KindsGen leaves it alone)


class KindsGen:
    """Random WriteRequests over fastwrite_kinds.p4, from its P4Info: every key kind with
    valid and broken values (one bit too wide, empty, zero-padded, bits beyond the
    prefix, zero masks, values outside the mask), fields omitted, reordered or of the
    wrong kind, parameters reordered, missing or unknown, priorities right and wrong,
    @defaultonly actions in entries, small value spaces (duplicates, full tables)."""

    KINDS = ("exact", "lpm", "ternary", "optional")

    def __init__(self, n: Names, seed: int) -> None:
        self.n, self.r = n, random.Random(seed)
        self.tables = [t for t in n.p4info.tables if t.preamble.name not in RUNGEN_ONLY]
        self.actions = {a.preamble.id: a for a in n.p4info.actions}

    def val(self, width: int) -> bytes:
        r = self.r
        v = (
            r.choice([0, 1, 2, (1 << width) - 1, r.randrange(1 << width)])
            if width > 8
            else r.randrange(1 << width)
        )
        v &= (1 << width) - 1
        nb = (width + 7) // 8
        x = r.random()
        if x < 0.04:
            return b""
        if x < 0.1:
            return (v | (1 << width)).to_bytes(nb + 1, "big")
        if x < 0.15:
            return b"\x00" + v.to_bytes(nb, "big")
        return v.to_bytes(nb, "big")

    def entry(self, utype: int) -> p4runtime_pb2.TableEntry:
        r = self.r
        t = r.choice(self.tables)
        te = p4runtime_pb2.TableEntry(table_id=t.preamble.id)
        kinds = {
            2: "exact",
            3: "lpm",
            4: "ternary",
            5: "range",
            6: "optional",
        }  # p4info MatchField.MatchType
        fields = list(t.match_fields)
        if r.random() < 0.08:
            fields.reverse()  # not the table's key order: the reference's own (slower) way
        for f in fields:
            kind = kinds[f.match_type]
            if r.random() < 0.06:
                continue  # omitted: a wildcard, or a missing exact field
            if r.random() < 0.04:
                kind = r.choice(self.KINDS)  # maybe the wrong kind
            w = f.bitwidth
            fm = te.match.add(field_id=f.id if r.random() > 0.02 else 99)
            if kind == "exact":
                fm.exact.value = self.val(w)
            elif kind == "optional":
                fm.optional.value = self.val(w)
            elif kind == "lpm":
                plen = r.choice([w, w, 8, 16, 1, 0, w + 1])
                v = r.choice([0x02AB00000000, 0x0A0000000001, 0xFFFFFFFFFFFF, 0]) & ((1 << w) - 1)
                if r.random() < 0.9 and 0 < plen <= w:
                    v &= ~((1 << (w - plen)) - 1)
                nb = (w + 7) // 8
                fm.lpm.value = v.to_bytes(nb, "big") if r.random() < 0.9 else self.val(w)
                fm.lpm.prefix_len = plen
            else:
                mask = r.choice([(1 << w) - 1, 0xFF00 & ((1 << w) - 1), 0, 0x00F0])
                v = r.randrange(1 << w) & (mask if r.random() < 0.9 else (1 << w) - 1)
                nb = (w + 7) // 8
                fm.ternary.value = v.to_bytes(nb, "big")
                fm.ternary.mask = mask.to_bytes(nb, "big") if r.random() < 0.95 else self.val(w)
        needs = any(f.match_type in (4, 5, 6) for f in t.match_fields)
        te.priority = r.choice([1, 2, 7, 0] if needs else [0, 0, 0, 0, 0, 3])
        if utype == U.DELETE and r.random() < 0.7:
            return te
        refs = [a.id for a in t.action_refs]
        aid = r.choice(refs) if r.random() < 0.95 else r.choice(list(self.actions))
        a = te.action.action
        a.action_id = aid
        params = list(self.actions[aid].params)
        if r.random() < 0.1:
            params.reverse()
        for prm in params:
            if r.random() < 0.03:
                continue
            a.params.add(param_id=prm.id if r.random() > 0.02 else 77, value=self.val(prm.bitwidth))
        return te

    def update(self) -> bytes:
        utype = self.r.choice([U.INSERT] * 4 + [U.MODIFY] * 2 + [U.DELETE] * 2)
        u = U(type=utype)
        u.entity.table_entry.CopyFrom(self.entry(utype))
        return u.SerializeToString()

    def request(self, eid: tuple[int, int]) -> bytes:
        w = p4runtime_pb2.WriteRequest(device_id=1)
        w.election_id.high, w.election_id.low = eid
        body = b"".join(
            b"\x22" + _varint(len(u)) + u
            for u in (self.update() for _ in range(self.r.randrange(1, 25)))
        )
        return w.SerializeToString() + body


class RunGen:
    """Random WriteRequests made of runs: 2-40 consecutive updates of one layout (table,
    update type, value lengths, action, prefix lengths, priority), as a controller's
    batch is, which the fast path cuts with one regex call and commits in bulk where it
    can. Values come from small spaces (duplicates inside a run and across runs, MODIFY
    and DELETE of missing entries, tables filled); some values of the run's length are
    refused (one bit too wide, bits beyond the prefix, a zero mask, a value outside its
    mask, an empty range) and some updates break the run (another update type of the
    same length, metadata, a zero-padded value, another action)."""

    def __init__(self, n: Names, seed: int) -> None:
        self.n, self.r = n, random.Random(seed)
        self.tables = list(n.p4info.tables)
        self.actions = {a.preamble.id: a for a in n.p4info.actions}
        self.history: dict[int, list[dict]] = {}  # table id -> its INSERT runs

    def value(self, w: int, space: int = 24) -> int:
        r = self.r
        v = r.randrange(min(1 << w, space))
        if w % 8 and r.random() < 0.03:
            v |= 1 << w  # one bit too wide, the same length: the run's shape, refused
        return v

    def layout(self) -> dict:
        r = self.r
        t = r.choice(self.tables)
        utype = r.choice([U.INSERT] * 3 + [U.MODIFY, U.DELETE] * 2)
        kinds = {2: "exact", 3: "lpm", 4: "ternary", 5: "range", 6: "optional"}
        fields = []
        for f in t.match_fields:
            kind = kinds[f.match_type]
            extra = None
            if kind == "lpm":
                extra = r.choice([f.bitwidth, f.bitwidth, 8, 16 if f.bitwidth > 16 else 1])
            elif kind == "ternary":
                extra = r.choice([(1 << f.bitwidth) - 1, 0xFF00 & ((1 << f.bitwidth) - 1) or 1])
            fields.append((f, kind, extra))
        needs = any(f.match_type in (4, 5, 6) for f in t.match_fields)
        prio = r.choice([1, 2, 3, 3]) if needs else 0
        if r.random() < 0.05:
            prio = 0 if needs else 2  # the whole run refused (or a priority ignored)
        lay = {
            "t": t,
            "utype": utype,
            "aid": r.choice([a.id for a in t.action_refs]),
            "fields": fields,
            "prio": prio,
            "action": utype != U.DELETE or r.random() < 0.5,
            "keys": [],
            "space": r.choice([24, 1 << 20, 1 << 20]),
        }
        past = self.history.get(t.preamble.id)
        if (
            utype != U.INSERT and past and r.random() < 0.8
        ):  # the keys of an earlier run, mostly there
            old = r.choice(past)
            lay["fields"], lay["prio"], lay["replay"] = (
                old["fields"],
                old["prio"],
                list(old["keys"]),
            )
            r.shuffle(lay["replay"])
        elif utype == U.INSERT:
            self.history.setdefault(t.preamble.id, []).append(lay)
        return lay

    def key(self, lay: dict) -> list[tuple[bytes, bytes]]:
        """Each key field's (value, mask / prefix length / high) bytes."""
        r = self.r
        out = []
        for f, kind, extra in lay["fields"]:
            w = f.bitwidth
            nb = (w + 7) // 8
            if kind in ("exact", "optional"):
                out.append((self.value(w, lay["space"]).to_bytes(nb, "big"), b""))
            elif kind == "lpm":
                v = r.choice([0x02AB00000000, 0x0A0000000001, 0xFFFFFFFFFFFF, 0, 0x1234]) & (
                    (1 << w) - 1
                )
                v ^= r.randrange(4) << max(0, w - extra)  # a few prefixes per length
                v &= (1 << w) - 1
                if r.random() > 0.04:
                    v &= ~((1 << (w - extra)) - 1)  # else bits beyond the prefix: refused
                out.append((v.to_bytes(nb, "big"), b""))
            elif kind == "ternary":
                mask = extra if r.random() > 0.03 else 0  # a zero mask: refused
                v = self.value(w, 1 << 16) & (mask if r.random() > 0.04 else (1 << w) - 1)
                out.append((v.to_bytes(nb, "big"), mask.to_bytes(nb, "big")))
            else:
                lo = self.value(w, 16)
                hi = max(min(lo + r.randrange(-1, 8), (1 << w) - 1), 0)
                out.append((lo.to_bytes(nb, "big"), hi.to_bytes(nb, "big")))
        return out

    def update(self, lay: dict) -> bytes:
        r = self.r
        utype = lay["utype"]
        if r.random() < 0.04:  # the same length, another update type: breaks the run
            utype = r.choice([U.INSERT, U.MODIFY, U.DELETE])
        u = U(type=utype)
        te = u.entity.table_entry
        te.table_id = lay["t"].preamble.id
        key = lay["replay"].pop() if lay.get("replay") else self.key(lay)
        lay["keys"].append(key)
        pad = r.random() < 0.03  # a zero-padded value: accepted, another length
        for (f, kind, extra), (a, b) in zip(lay["fields"], key, strict=True):
            fm = te.match.add(field_id=f.id)
            if kind in ("exact", "optional"):
                getattr(fm, kind).value = (b"\x00" if pad else b"") + a
                pad = False
            elif kind == "lpm":
                fm.lpm.value, fm.lpm.prefix_len = a, extra
            elif kind == "ternary":
                fm.ternary.value, fm.ternary.mask = a, b
            else:
                fm.range.low, fm.range.high = a, b
        te.priority = lay["prio"]
        if r.random() < 0.02:
            te.metadata = b"cookie"  # another shape: its entry's metadata then goes with it
        if lay["action"]:
            act = te.action.action
            act.action_id = lay["aid"]
            for prm in self.actions[lay["aid"]].params:
                w = prm.bitwidth
                act.params.add(
                    param_id=prm.id, value=self.value(w, 1 << w).to_bytes((w + 7) // 8, "big")
                )
        return u.SerializeToString()

    def request(self, eid: tuple[int, int]) -> bytes:
        r = self.r
        w = p4runtime_pb2.WriteRequest(device_id=1)
        w.election_id.high, w.election_id.low = eid
        ups = []
        for _ in range(r.randrange(1, 4)):
            lay = self.layout()
            ups.extend(self.update(lay) for _ in range(r.randrange(2, 41)))
        return w.SerializeToString() + b"".join(b"\x22" + _varint(len(u)) + u for u in ups)


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _answer(client: RawClient, data: bytes) -> tuple:
    write = client.channel.unary_unary(
        "/p4.v1.P4Runtime/Write", request_serializer=None, response_deserializer=None
    )
    try:
        return ("OK", write(data, timeout=10))
    except grpc.RpcError as exc:
        trailer = dict(exc.trailing_metadata() or ())
        return (exc.code(), exc.details(), trailer.get("grpc-status-details-bin"))


def _tables(client: RawClient, names: Names) -> list[bytes]:
    ents = []
    for t in names.p4info.tables:
        e = p4runtime_pb2.Entity()
        e.table_entry.table_id = t.preamble.id
        ents.extend(x.SerializeToString() for x in client.read(e))
    return ents


def _state(srv: P4RuntimeServer) -> list:
    """Every runtime table of the server as plain values, entries named by their insertion
    number: what the entries hold (key, tests, action, arguments, priority, handle, the
    TableEntry a read gives) and every index (exact, lpm, tuple space groups, scan order,
    free handles). The fast path's pre-checked commits must leave exactly the state the
    reference path's add/modify/delete leave, not only the same Read answer."""
    out = []
    for name, t in sorted(srv.pipeline.switch.tables.items()):
        seq = lambda d: {k: r.seq for k, r in d.items()}  # noqa: E731
        recs = sorted(t.recs.values(), key=lambda r: r.seq)
        out.append(
            (
                name,
                t.seq,
                t.next_handle,
                sorted(t.free_handles),
                [
                    (
                        r.mkey,
                        r.tests,
                        r.aid,
                        r.args,
                        r.prio,
                        r.hnd,
                        r.seq,
                        r.pkts,
                        r.bytes,
                        r.meter,
                        t.entry_of(r),
                    )
                    for r in recs
                ],
                seq(t.exact),
                seq(t.exact1),
                {p: seq(d) for p, d in t.lpm.items()},
                t.lpm_lens,
                {p: seq(d) for p, d in t.lpm1d.items()},
                [m for m, _ in t.lpm1],
                {top: [m for m, _ in c] for top, c in t.lpm1_long.items()},
                [r.seq for r in t.scan],
                [(top, m, {k: [r.seq for r in v] for k, v in g.items()}) for top, m, g in t.groups],
            )
        )
    return out


def _differences(pair, seed: int, requests: int, gen_class=None) -> list:
    (fast_srv, fast, names), (_, slow, _) = pair
    for c in (fast, slow):  # both start from a fresh pipeline (even after a planted bug)
        c.set_pipeline(make_device_config(fast_srv.program))
    gen = (gen_class or Gen)(names, seed)
    diffs = []
    for k in range(requests):
        data = gen.request((0, 1))
        a, b = _answer(fast, data), _answer(slow, data)
        if a != b:
            diffs.append((k, a, b))
        if k % 5 == 4 and _tables(fast, names) != _tables(slow, names):
            diffs.append((k, "tables differ"))
        if _state(fast_srv) != _state(pair[1][0]):
            diffs.append((k, "table state differs"))
    return diffs


CHECKED = ("insert_exact1_checked", "insert_checked", "modify_checked", "delete_checked")


def _count_checked(monkeypatch) -> dict:
    """Count the calls of the tables' pre-checked entry points (what the fast path's
    committing builders call), per server."""
    calls: dict = {}
    for meth in CHECKED:
        real = getattr(Table, meth)

        def counted(self, *a, _real=real, _meth=meth):
            calls[(id(self), _meth)] = calls.get((id(self), _meth), 0) + 1
            return _real(self, *a)

        monkeypatch.setattr(Table, meth, counted)
    return calls


def _calls(calls: dict, srv: P4RuntimeServer) -> dict:
    ids = {id(t) for t in srv.pipeline.switch.tables.values()}
    out = dict.fromkeys(CHECKED, 0)
    for (tid, meth), n in calls.items():
        if tid in ids:
            out[meth] += n
    return out


def test_fast_path_answers_and_state_equal_the_reference(pair, monkeypatch) -> None:
    fast_srv = pair[0][0]
    before = fast_srv._scanner.hits
    calls = _count_checked(monkeypatch)
    assert _differences(pair, seed=1, requests=160) == []
    assert pair[1][0]._scanner.hits == 0  # the reference server never takes the path
    hits = fast_srv._scanner.hits - before
    assert hits > 400, (
        hits
    )  # most well-formed updates went the fast way (about 2,000 updates in all)
    # ... and were stored through every pre-checked entry point (the reference, never)
    assert set(_calls(calls, pair[1][0]).values()) == {0}
    got = _calls(calls, fast_srv)
    assert got["insert_exact1_checked"] > 100 and got["insert_checked"] > 20, got
    assert got["modify_checked"] > 20 and got["delete_checked"] > 50, got
    names = pair[0][2]
    assert len(_tables(pair[0][1], names)) > 20  # the batches did leave entries to compare


MANY = ("insert_exact1_many", "modify_exact1_many", "delete_exact1_many")


def _count_bulk(monkeypatch) -> dict:
    """Count the updates the tables' bulk entry points stored (calls that returned True),
    per (table, method), and the most entries each table held after one."""
    stored: dict = {}
    for meth in MANY:
        real = getattr(Table, meth)

        def counted(self, vs, *a, _real=real, _meth=meth):
            done = _real(self, vs, *a)
            if done:
                stored[(id(self), _meth)] = stored.get((id(self), _meth), 0) + len(vs)
            stored[(id(self), "most")] = max(stored.get((id(self), "most"), 0), len(self.recs))
            return done

        monkeypatch.setattr(Table, meth, counted)
    return stored


def _bulk(stored: dict, srv: P4RuntimeServer) -> dict:
    ids = {id(t) for t in srv.pipeline.switch.tables.values()}
    out = dict.fromkeys(MANY, 0)
    for (tid, meth), n in stored.items():
        if tid in ids and meth in out:
            out[meth] += n
    return out


def _own_scanner(monkeypatch, made) -> fastwrite.WriteScanner:
    """The fast server learns a test's shapes in a scanner of its own, put back after the
    test: RunGen's many layouts never push the other tests' shapes out."""
    scanner = fastwrite.WriteScanner()
    monkeypatch.setattr(made[0][0], "_scanner", scanner)
    return scanner


def test_runs_of_one_layout_equal_the_reference(pair, monkeypatch) -> None:
    """Batches of runs (RunGen): the same answers and table state as the reference, the
    runs cut by the run regex (hits) and most single-key exact updates stored in bulk."""
    fast_srv = pair[0][0]
    scanner = _own_scanner(monkeypatch, pair)
    stored = _count_bulk(monkeypatch)
    calls = _count_checked(monkeypatch)
    assert _differences(pair, seed=21, requests=70, gen_class=RunGen) == []
    assert pair[1][0]._scanner.hits == 0
    assert scanner.hits > 1000  # about 2,800 updates in all
    assert set(_bulk(stored, pair[1][0]).values()) == {0}
    got = _bulk(stored, fast_srv)
    assert (
        got["insert_exact1_many"] > 150
        and got["modify_exact1_many"] > 50
        and got["delete_exact1_many"] > 50
    ), got
    one = _calls(calls, fast_srv)  # runs with a refused update, and the other layouts: one by one
    assert (
        one["insert_exact1_checked"] > 20
        and one["insert_checked"] > 20
        and one["delete_checked"] > 20
    ), one


def test_runs_equal_the_reference_on_every_key_layout(kinds_pair, monkeypatch) -> None:
    """The same on fastwrite_kinds.p4; its `small` exact table (16 entries) gets full."""
    _own_scanner(monkeypatch, kinds_pair)
    stored = _count_bulk(monkeypatch)
    assert _differences(kinds_pair, seed=22, requests=70, gen_class=RunGen) == []
    got = _bulk(stored, kinds_pair[0][0])
    assert got["insert_exact1_many"] > 0 and got["modify_exact1_many"] > 20, got
    small = kinds_pair[0][0].pipeline.switch.tables
    small_id = id(next(t for name, t in small.items() if name.endswith("small")))
    assert stored.get((small_id, "most")) == 16  # full: a run past it was refused, one by one


class TopGen:
    """Random WriteRequests whose updates all have learned shapes (l2_fwd INSERT, MODIFY and
    DELETE of small key spaces: duplicates and missing entries), which the fast server
    cuts without parsing them whole (`WriteScanner.plan`), with the top-level fields
    around them varied and placed anywhere between the updates: device id wrong or
    given twice, election id missing, lower, given twice (merged), or malformed, a role
    (unknown, or not UTF-8), role_id, atomicity, an unknown field, a truncated or empty
    last update, trailing bytes. Every answer must be the reference's."""

    def __init__(self, n: Names, seed: int) -> None:
        self.n, self.r = n, random.Random(seed)
        self.table = find(n, "l2_fwd")
        self.fid = n.fields[self.table]["hdr.ethernet.dst"]
        fwd = find(n, "forward")
        self.aid, self.pid = n[fwd], n.params[fwd]["port"]

    def update(self, utype: int, k: int) -> bytes:
        u = U(type=utype)
        te = u.entity.table_entry
        te.table_id = self.n[self.table]
        te.match.add(field_id=self.fid).exact.value = ((0x02 << 40) | k).to_bytes(6, "big")
        if utype != U.DELETE:
            te.action.action.action_id = self.aid
            te.action.action.params.add(param_id=self.pid, value=(k % 5).to_bytes(2, "big"))
        return u.SerializeToString()

    def top(self) -> list[bytes]:
        """The top-level fields (each its bytes), mostly a valid device id and election id."""
        r = self.r
        fields = [b"\x08\x01", b"\x1a\x02\x10\x01"]  # device_id 1, election_id {low: 1}
        x = r.random()
        if x < 0.05:
            fields[0] = b"\x08\x09"  # another device
        elif x < 0.1:
            fields[0:1] = [b"\x08\x09", b"\x08\x01"]  # twice: the last wins
        elif x < 0.15:
            fields[0:1] = [b"\x08\x01", b"\x08\x09"]
        elif x < 0.2:
            del fields[1]  # no election id
        elif x < 0.25:
            fields[1] = b"\x1a\x00"  # election id 0
        elif x < 0.3:
            fields[1:2] = [b"\x1a\x02\x08\x00", b"\x1a\x02\x10\x01"]  # twice: merged
        elif x < 0.35:
            fields[1] = b"\x1a\x02\x10\xff"  # a varint cut short inside: malformed
        elif x < 0.4:
            fields.append(b"\x32\x01r")  # a role p4sim has never heard of
        elif x < 0.45:
            fields.append(b"\x32\x02\xff\xfe")  # a role that is not UTF-8: malformed
        elif x < 0.5:
            fields.append(b"\x10\x05")  # role_id (deprecated)
        elif x < 0.55:
            fields.append(
                b"\x28" + bytes([r.choice([1, 2, 0x63])])
            )  # atomicity (0x63: no such value)
        elif x < 0.58:
            fields.append(b"\x38\x01")  # an unknown field
        r.shuffle(fields)
        return fields

    def request(self, eid: tuple[int, int]) -> bytes:
        r = self.r
        ups = []
        for _ in range(r.randrange(1, 4)):
            utype = r.choice([U.INSERT, U.INSERT, U.MODIFY, U.DELETE])
            ups.extend(self.update(utype, r.randrange(48)) for _ in range(r.randrange(1, 30)))
        pieces = [b"\x22" + _varint(len(u)) + u for u in ups]
        for f in self.top():
            pieces.insert(r.randrange(len(pieces) + 1), f)
        data = b"".join(pieces)
        x = r.random()
        if x < 0.04:
            data = data[:-1]  # the last field cut short
        elif x < 0.06:
            data += b"\x22\x00"  # an empty last update
        elif x < 0.08:
            data += b"\x22\x05ab"  # a last update cut short
        return data


def _count_plans(monkeypatch) -> list:
    """The requests the fast server cut by shape ([planned, parsed whole])."""
    seen = [0, 0]
    real = fastwrite.WriteScanner.plan

    def counted(self, data):
        got = real(self, data)
        seen[got is None] += 1
        return got

    monkeypatch.setattr(fastwrite.WriteScanner, "plan", counted)
    return seen


def _learn_top_shapes(made) -> None:
    gen = TopGen(made[0][2], 0)
    for utype in (U.INSERT, U.MODIFY, U.DELETE):
        data = (
            b"\x08\x01\x1a\x02\x10\x01"
            + b"\x22"
            + _varint(len(gen.update(utype, 1)))
            + gen.update(utype, 1)
        )
        for _, c, _ in made:
            _answer(c, data)


def test_requests_cut_by_shape_equal_the_reference(pair, monkeypatch) -> None:
    """Requests whose updates all have shapes are not parsed whole by the fast server: its
    answers (malformed ones included) and table state must be the reference's, and most
    of them must have taken that path."""
    _own_scanner(monkeypatch, pair)
    _learn_top_shapes(pair)
    seen = _count_plans(monkeypatch)
    assert _differences(pair, seed=41, requests=120, gen_class=TopGen) == []
    assert seen[0] > 50 and seen[1] > 10, (
        seen
    )  # cut by shape, and parsed whole (unknown field, bad framing)
    assert _tables(pair[0][1], pair[0][2])  # entries were left to compare


def _plan_without_fields(self, data):
    got = _plan_without_fields.__wrapped__(self, data)
    return (
        None if got is None else (got[0], got[1], b"")
    )  # the planted bug: the other fields dropped


def _plan_without_len_fields(self, data):
    got = _plan_without_fields.__wrapped__(self, data)
    if got is None:
        return None
    top = p4runtime_pb2.WriteRequest.FromString(got[2])
    top.ClearField("election_id")  # the planted bug: the election id lost
    return got[0], got[1], top.SerializeToString()


def _lax_end_spans(data, others=None):
    for k in range(len(data), 0, -1):  # the planted bug: trailing bytes that cut no field ignored
        got = _lax_end_spans.__wrapped__(data[:k], others)
        if got is not None:
            return got
    return None


@pytest.mark.parametrize(
    "where, bug",
    [
        ("plan", _plan_without_fields),
        ("plan", _plan_without_len_fields),
        ("update_runs", _lax_end_spans),
    ],
)
def test_planted_cut_by_shape_bug_is_caught(pair, monkeypatch, where, bug) -> None:
    _own_scanner(monkeypatch, pair)
    _learn_top_shapes(pair)
    owner = fastwrite.WriteScanner if where == "plan" else shapes_mod
    monkeypatch.setattr(
        _plan_without_fields, "__wrapped__", fastwrite.WriteScanner.plan, raising=False
    )
    monkeypatch.setattr(bug, "__wrapped__", getattr(owner, where), raising=False)
    monkeypatch.setattr(owner, where, bug)
    assert _differences(pair, seed=41, requests=120, gen_class=TopGen) != []


def test_bulk_insert_makes_the_same_recs_as_one_by_one() -> None:
    """insert_exact1_many builds its Recs without Rec.__init__: every field of Rec (all of
    __slots__, counters and meter included) must equal insert_exact1_checked's, with the
    table's free handles reused lowest first as one by one reuses them."""
    from p4sim.model import ActionRef, KeyField, TableInfo
    from p4sim.runtime.tables import REC_FIELDS, ActionSpec

    def table() -> Table:
        t = Table(
            TableInfo(
                name="t",
                keys=(KeyField("k", "exact", 48, 1),),
                actions=(ActionRef("fwd"),),
                size=64,
            ),
            [ActionSpec("fwd", (("port", 9),))],
        )
        for v in range(6):
            t.insert_exact1_checked(100 + v, 0, (v,))
        for v in (101, 104, 102):
            t.delete_checked((v,))
        return t

    one, bulk = table(), table()
    vs, args = [7, 104, 9, 8, 6], [(1,), (2,), (3,), (4,), (5,)]
    for v, a in zip(vs, args, strict=True):
        one.insert_exact1_checked(v, 0, a)
    assert bulk.insert_exact1_many(vs, 0, args)
    fields = lambda t: [(k, [getattr(r, f) for f in REC_FIELDS]) for k, r in t.recs.items()]  # noqa: E731
    assert fields(bulk) == fields(one)
    assert [(k, r.seq) for k, r in bulk.exact1.items()] == [
        (k, r.seq) for k, r in one.exact1.items()
    ]
    assert (bulk.seq, bulk.next_handle, bulk.free_handles) == (
        one.seq,
        one.next_handle,
        one.free_handles,
    )
    assert sorted(r.hnd for r in bulk.recs.values()) == list(
        range(8)
    )  # the freed 1, 2, 4 reused first
    assert not bulk.insert_exact1_many([50, 50], 0, [(1,), (1,)]) and not bulk.insert_exact1_many(
        [7], 0, [(1,)]
    )
    assert fields(bulk) == fields(one)  # a refused run changed nothing


def _bulk_no_run_duplicates(self, vs, aid, args):
    vs2 = list(
        dict.fromkeys(vs)
    )  # the planted bug: a key twice in one run is stored once, no error
    args2 = [args[vs.index(v)] for v in vs2]
    return (
        Table.insert_exact1_many.__wrapped__(self, vs2, aid, args2)
        if len(vs2) < len(vs)
        else Table.insert_exact1_many.__wrapped__(self, vs, aid, args)
    )


def _bulk_past_capacity(self, vs, aid, args):
    size = self.info.size
    self.info.size = 1 << 30  # the planted bug: no capacity check
    try:
        return Table.insert_exact1_many.__wrapped__(self, vs, aid, args)
    finally:
        self.info.size = size


def _bulk_new_handles(self, vs, aid, args):
    free = self.free_handles
    self.free_handles = []  # the planted bug: freed handles are not reused
    try:
        return Table.insert_exact1_many.__wrapped__(self, vs, aid, args)
    finally:
        self.free_handles = free


def _bulk_handles_not_freed(self, vs):
    free = list(self.free_handles)
    done = Table.delete_exact1_many.__wrapped__(self, vs)
    if done:
        self.free_handles[:] = free  # the planted bug: the handles are never reused
    return done


def _bulk_stale_entry(self, vs, aid, args):
    if self.const_entries or not self.exact1.keys() >= set(vs):
        return False
    for v, a in zip(vs, args, strict=True):
        rec = self.exact1[v]
        rec.aid, rec.args = aid, a  # the planted bug: a stored TableEntry keeps the old action
    return True


@pytest.mark.parametrize(
    "servers, meth, bug",
    [
        ("pair", "insert_exact1_many", _bulk_no_run_duplicates),
        ("kinds_pair", "insert_exact1_many", _bulk_past_capacity),
        ("pair", "insert_exact1_many", _bulk_new_handles),
        ("pair", "delete_exact1_many", _bulk_handles_not_freed),
        ("pair", "modify_exact1_many", _bulk_stale_entry),
    ],
)
def test_planted_bulk_commit_bug_is_caught(request, monkeypatch, servers, meth, bug) -> None:
    """Negative controls for the bulk entry points: each planted bug must show up as a
    difference from the reference."""
    monkeypatch.setattr(bug, "__wrapped__", getattr(Table, meth), raising=False)
    monkeypatch.setattr(Table, meth, bug)
    made = request.getfixturevalue(servers)
    _own_scanner(monkeypatch, made)
    assert _differences(made, seed=23, requests=70, gen_class=RunGen) != []


def _lax_exact1_values(rows, kslot, kwidth, pslot, pwidth):
    """The compiled exact1_values with the planted bug: no value is too wide."""
    vs = [int.from_bytes(r[kslot], "big") for r in rows]
    return vs, [()] * len(vs) if pslot < 0 else [(int.from_bytes(r[pslot], "big"),) for r in rows]


def _lax_exact1_run_values(data, r0, stride, k, koff, klen, kwidth, poff, plen, pwidth):
    """The compiled exact1_run_values with the planted bug: no value is too wide."""
    rows = [
        (data[b + koff : b + koff + klen], data[b + poff : b + poff + plen])
        for b in range(r0, r0 + k * stride, stride)
    ]
    return _lax_exact1_values(rows, 0, kwidth, 1 if poff >= 0 else -1, pwidth)


@pytest.mark.parametrize("plant", ["lax run", "lax width"])
def test_planted_lax_run_is_caught(kinds_pair, monkeypatch, plant) -> None:
    """Negative controls for the run cutter and the bulk value check: a run cutter that
    takes any Update of the same length (another update type, table or action) as the
    shape's, and a bulk that lets a value one bit too wide in, must both be caught."""
    if plant == "lax run":  # only the tag and length bytes checked
        monkeypatch.setattr(
            shapes_mod,
            "_run_checks",
            lambda head, fixed: tuple((j, head[j : j + 1]) for j in range(len(head))),
        )
    else:
        monkeypatch.setattr(builders, "_fits", lambda vs, width: True)
        if (
            builders._compiled is not None
        ):  # the compiled write path decodes the values itself, in place
            # (only the in-place decoder planted: caught, so runs really take it)
            monkeypatch.setattr(builders._compiled, "exact1_run_values", _lax_exact1_run_values)
    _own_scanner(monkeypatch, kinds_pair)  # shapes made with the plant
    assert _differences(kinds_pair, seed=24, requests=70, gen_class=RunGen) != []


@pytest.fixture(scope="module")
def kinds_pair():
    made = [_start(True, KINDS_PROGRAM), _start(False, KINDS_PROGRAM)]
    yield made
    for srv, c, _ in made:
        c.close()
        srv.stop(grace=0)


def test_fast_path_equals_the_reference_on_every_key_layout(kinds_pair, monkeypatch) -> None:
    """The same comparison on two exact keys with a two-parameter action, a 1-bit key,
    exact + lpm and optional + lpm + ternary: the layouts of the generic pre-checked
    commit (Table.insert_checked), each of which must have been used."""
    calls = _count_checked(monkeypatch)
    assert _differences(kinds_pair, seed=11, requests=120, gen_class=KindsGen) == []
    assert set(_calls(calls, kinds_pair[1][0]).values()) == {0}
    got = _calls(calls, kinds_pair[0][0])
    assert (
        got["insert_checked"] > 50 and got["modify_checked"] > 20 and got["delete_checked"] > 20
    ), got
    per = {
        name.split(".")[-1]: sum(
            n for (tid, meth), n in calls.items() if tid == id(t) and meth.startswith("insert")
        )
        for name, t in kinds_pair[0][0].pipeline.switch.tables.items()
        if name not in RUNGEN_ONLY
    }
    assert min(per.values()) > 5, per  # every layout was stored the pre-checked way


@pytest.mark.parametrize(
    "meth, bug",
    [
        ("insert_checked", "_no_duplicate_check"),
        ("delete_checked", "_handle_not_freed"),
        ("modify_checked", "_stale_entry"),
        ("entry_of", "_entry_without_priority"),
    ],
)
def test_planted_pre_checked_commit_bug_is_caught_on_every_key_layout(
    kinds_pair, monkeypatch, meth, bug
) -> None:
    bug_fn = globals()[bug]
    monkeypatch.setattr(bug_fn, "__wrapped__", getattr(Table, meth), raising=False)
    monkeypatch.setattr(Table, meth, bug_fn)
    assert _differences(kinds_pair, seed=12, requests=60, gen_class=KindsGen) != []


def test_a_new_pipeline_rebinds_the_learned_shapes(pair) -> None:
    """Shapes outlive a pipeline (they are protobuf layouts); their decoders do not: after
    a new SetForwardingPipelineConfig the same shapes are bound to the new schema."""
    fast_srv = pair[0][0]
    assert (
        _differences(pair, seed=30, requests=20) == []
    )  # shapes learned (whatever ran before here)
    assert fast_srv._scanner.count > 0
    old = fast_srv.pipeline.maps
    for _, c, _ in pair:
        c.set_pipeline(make_device_config(L2_PROGRAM))
    assert fast_srv.pipeline.maps is not old
    before = fast_srv._scanner.hits
    assert _differences(pair, seed=3, requests=40) == []
    assert fast_srv._scanner.hits > before
    import gc

    del old
    gc.collect()
    now = fast_srv.pipeline.maps
    bound = [
        s.bound[0]() for v in fast_srv._scanner.shapes.values() for s in v if s.bound is not None
    ]
    assert any(b is now for b in bound)
    assert all(b is None or b is now for b in bound)  # a shape keeps no old pipeline's schema alive


def test_planted_lax_fast_path_is_caught(pair, monkeypatch) -> None:
    """Negative control: a fast path that lets a refused value in (masks it to its width
    instead of handing it to the reference checks) must show up as a difference."""
    real = fastwrite.bind

    def lax(shape, schema, pipeline=None):
        build = real(shape, schema, pipeline)
        if build is None:
            return None

        def lax_build(vals):
            got = build(vals)
            if got is None:  # the planted bug: refuse nothing, store zeros instead
                got = build([bytes(len(v) - 1) + b"\x01" for v in vals])
            return got

        return lax_build

    monkeypatch.setattr(fastwrite, "bind", lax)
    for sh in (s for shapes in pair[0][0]._scanner.shapes.values() for s in shapes):
        sh.bound = None  # rebind with the planted builder
    assert _differences(pair, seed=2, requests=60) != []


def _no_duplicate_check_exact1(self, v, aid, args):
    self.recs.pop((v,), None)  # the planted bug: an existing entry is replaced, not refused
    return Table.insert_exact1_checked.__wrapped__(self, v, aid, args)


def _no_duplicate_check(self, key, tests, aid, args, prio=0):
    if key in self.recs:  # the planted bug: replaced, not refused
        self._unindex(self.recs.pop(key))
    return Table.insert_checked.__wrapped__(self, key, tests, aid, args, prio)


def _handle_not_freed(self, key):
    rec = self.recs.get(key)
    Table.delete_checked.__wrapped__(self, key)
    if rec is not None:
        self.free_handles.remove(rec.hnd)  # the planted bug: the handle is never reused


def _stale_entry(self, key, aid, args):
    rec = self.recs.get(key)
    if rec is not None and rec.entry is not None:
        rec.aid, rec.args = aid, args  # the planted bug: the stored entry keeps the old action
        return None
    return Table.modify_checked.__wrapped__(self, key, aid, args)


def _entry_without_priority(self, rec):
    if rec.entry is not None:
        return rec.entry
    e = Table.entry_of.__wrapped__(self, rec)
    e.priority = 0  # the planted bug: an entry rebuilt from its key loses its priority
    return e


@pytest.mark.parametrize(
    "meth, bug",
    [
        ("insert_exact1_checked", _no_duplicate_check_exact1),
        ("insert_checked", _no_duplicate_check),
        ("delete_checked", _handle_not_freed),
        ("modify_checked", _stale_entry),
        ("entry_of", _entry_without_priority),
    ],
)
def test_planted_pre_checked_commit_bug_is_caught(pair, monkeypatch, meth, bug) -> None:
    """Negative controls for the tables' pre-checked entry points: each planted bug in
    the commit (no duplicate check, a handle not freed, a stored entry not updated, a
    rebuilt entry without its priority) must show up as a difference from the reference.
    The shapes are learned first, in a scanner of this test's own: whatever ran before (or
    on another xdist worker), the planted run takes the fast path."""
    _own_scanner(monkeypatch, pair)
    assert _differences(pair, seed=4, requests=40) == []
    monkeypatch.setattr(bug, "__wrapped__", getattr(Table, meth), raising=False)
    monkeypatch.setattr(Table, meth, bug)
    assert _differences(pair, seed=4, requests=80) != []


def _parsed(raw: bytes) -> p4runtime_pb2.Update:
    return U.FromString(raw)


def test_scanner_learns_only_upb_layouts_and_values_of_the_same_length() -> None:
    from p4rtproto.codec import plain_from_proto

    u = U(type=U.INSERT)
    te = u.entity.table_entry
    te.table_id = 7
    te.match.add(field_id=1).exact.value = b"\x02\x00\x00\x00\x00\x01"
    te.match.add(field_id=2).ternary.value = b"\x08\x00"
    te.match[1].ternary.mask = b"\xff\xff"
    te.action.action.action_id = 9
    te.action.action.params.add(param_id=1, value=b"\x03")
    raw = u.SerializeToString()
    sc = fastwrite.WriteScanner()
    assert sc.lookup(raw, 0, len(raw)) is None
    sc.learn(u, raw)
    other = U()
    other.CopyFrom(u)
    other.entity.table_entry.match[0].exact.value = b"\x02\x00\x00\x00\x00\xfe"
    other.entity.table_entry.action.action.params[0].value = b"\x07"
    for m in (u, other):
        data = b"pad" + m.SerializeToString()
        shape, vals = sc.lookup(data, 3, len(data))
        assert shape.utype == U.INSERT
        assert shape.plain(vals) == plain_from_proto(m.entity.table_entry)
    # a value of another length, another table id, or extra bytes: not this shape
    for change in ("len", "table", "unknown"):
        m = U()
        m.CopyFrom(u)
        if change == "len":
            m.entity.table_entry.action.action.params[0].value = b"\x00\x03"
        elif change == "table":
            m.entity.table_entry.table_id = 8
        data = m.SerializeToString() + (b"\x78\x01" if change == "unknown" else b"")
        assert sc.lookup(data, 0, len(data)) is None, change
    # bytes that are not upb's own layout (the type after the entity) teach nothing
    swapped = raw[2:] + raw[:2]
    assert _parsed(swapped) == u
    sc2 = fastwrite.WriteScanner()
    sc2.learn(u, swapped)
    assert sc2.count == 0
    # not plain table writes: no shape
    for m in (U(type=U.UNSPECIFIED, entity=u.entity), U(type=U.INSERT)):
        sc2.learn(m, m.SerializeToString())
    d = U()
    d.CopyFrom(u)
    d.entity.table_entry.metadata = b"x"
    sc2.learn(d, d.SerializeToString())
    assert sc2.count == 0


def test_scanner_is_bounded() -> None:
    sc = fastwrite.WriteScanner()
    for i in range(fastwrite.SHAPE_LIMIT + 10):
        u = U(type=U.DELETE)
        u.entity.table_entry.table_id = (
            (i % 100) + 1 + (i // 100) * 1000
        )  # 1-2 byte varints: few lengths
        u.entity.table_entry.match.add(field_id=1).exact.value = b"\x01"
        sc.learn(u, u.SerializeToString())
    assert 0 < sc.count <= fastwrite.SHAPE_LIMIT
    assert sum(len(v) for v in sc.shapes.values()) == sc.count
    assert max(len(v) for v in sc.shapes.values()) == fastwrite.SHAPES_PER_LENGTH
    # the newest shape of a length is kept (the oldest made room), so it is found
    raw = u.SerializeToString()
    assert sc.lookup(raw, 0, len(raw)) is not None
    # a big update (a huge value) is never learned: learning it would cost time per byte
    big = U(type=U.INSERT)
    big.entity.table_entry.table_id = 1
    big.entity.table_entry.match.add(field_id=1).exact.value = b"\x01" * (
        fastwrite.LEARN_MAX_BYTES + 1
    )
    n = sc.count
    sc.learn(big, big.SerializeToString())
    assert sc.count == n


def test_shape_pattern_checks_every_fixed_byte_and_cuts_values_in_slot_order() -> None:
    """The regex of a layout: fixed pieces as literals (any byte, newlines and regex
    metacharacters included), each value exactly its length, values given in the slot
    order even when the slots are not in offset order."""
    fixed = ((0, b"\n."), (4, b"*\x00"), (8, b"$"))
    rx, groups = shapes_mod._pattern(fixed, ((6, 2), (2, 2)))
    assert groups == (2, 1)
    m = rx.fullmatch(b"\n.\nx*\x00()$")
    assert m is not None and [m.group(k) for k in groups] == [b"()", b"\nx"]
    for bad in (
        b"\n-\nx*\x00()$",
        b"\n.\nx*\x01()$",
        b"\n.\nx*\x00()",
        b"\n.\nx*\x00()$$",
        b"\n.\nxx*\x00()$",
    ):
        assert rx.fullmatch(bad) is None, bad
    rx, groups = shapes_mod._pattern(fixed, ((2, 2), (6, 2)))
    assert groups is None and rx.fullmatch(b"\n.ab*\x00cd$").groups() == (b"ab", b"cd")


def test_update_spans() -> None:
    w = p4runtime_pb2.WriteRequest(device_id=1, role="r")
    w.election_id.low = 5
    for i in range(3):
        w.updates.add(type=U.DELETE).entity.table_entry.table_id = i + 1
    data = w.SerializeToString()
    spans = fastwrite.update_spans(data)
    assert [U.FromString(data[a:b]) for a, b in spans] == list(w.updates)
    assert fastwrite.update_spans(data + b"\x78\x01") is None  # an unknown top-level field
    assert fastwrite.update_spans(data[:-1]) is None
    assert (
        fastwrite.update_spans(data + b"\x22\x00")[-1] == (len(data) + 2,) * 2
    )  # an empty last Update


class _Counting(bytes):
    """Bytes that count the bytes their slices return (the run checkers' work)."""

    sliced = 0

    def __getitem__(self, k):
        got = bytes.__getitem__(self, k)
        if isinstance(k, slice):
            _Counting.sliced += len(got)
        return got


def test_run_checks_cost_the_runs_found_not_the_rest_of_the_request(monkeypatch) -> None:
    """A hostile request of many short runs (Updates alternating between two lengths, or two
    shapes of one length) must cost work linear in its size: each run's column checks look
    at a window growing with the run, never at every record to the end (quadratic: 10^12
    byte steps for a 64 MiB request). Control: the check is made, the work counted. (The
    Python checker; the compiled write path's C loop stops at the first record that fails.)"""
    monkeypatch.setattr(scan, "_compiled", None)
    monkeypatch.setattr(shapes_mod, "_compiled", None)
    a = U(type=U.DELETE)
    a.entity.table_entry.table_id = 1
    b = U(type=U.DELETE)
    b.entity.table_entry.table_id = 2
    b.entity.table_entry.priority = 1
    c = U(type=U.INSERT)
    c.entity.table_entry.table_id = 1
    ra, rb, rc = a.SerializeToString(), b.SerializeToString(), c.SerializeToString()
    assert len(ra) != len(rb) and len(ra) == len(rc)
    n = 4000
    for one, two in ((ra, rb), (ra, rc)):
        data = b"".join(b"\x22" + _varint(len(u)) + u for u in [one, two] * (n // 2))
        _Counting.sliced = 0
        spans = fastwrite.update_spans(_Counting(data))
        assert spans is not None and len(spans) == n
        assert _Counting.sliced < 200 * n, (
            _Counting.sliced
        )  # linear; quadratic would be about n * n / 2
    # the same for a shape's run checker: two shapes of one length, alternating
    sc = fastwrite.WriteScanner()
    sc.learn(U.FromString(ra), ra)
    assert sc.count == 1
    spans = fastwrite.update_spans(data)
    sh = sc.lookup(data, *spans[0])[0]
    _Counting.sliced = 0
    for i in range(0, n, 2):
        assert sc.run(sh, _Counting(data), spans, i) is None  # a run of one: no run
    assert 0 < _Counting.sliced < 200 * n, _Counting.sliced


def _spans_mismatches(seed: int, requests: int = 300) -> int:
    """Random requests of runs of same-length Updates (read with one regex call per run),
    Updates of 128 bytes and more, and the other top-level fields between them in any
    order: how many requests' spans do not cut exactly the Updates upb parses, in order
    (or a request cut short is not refused)."""
    r = random.Random(seed)
    bad = 0
    for _ in range(requests):
        parts = []
        for _ in range(r.randrange(1, 8)):
            x = r.random()
            if x < 0.15:
                parts.append(b"\x08" + _varint(r.randrange(1 << 20)))  # device_id
            elif x < 0.25:
                e = p4runtime_pb2.Uint128(
                    high=r.randrange(3), low=r.randrange(1 << 40)
                ).SerializeToString()
                parts.append(b"\x1a" + _varint(len(e)) + e)
            elif x < 0.3:
                parts.append(b"\x32\x01r")  # role
            elif x < 0.36:
                parts.extend([b"\x22\x00"] * r.randrange(1, 3))  # empty Updates (a run of length 0)
            else:
                size = r.choice([0, 1, 2, 40, 41, 125, 126, 200])  # Update bytes: about size + 6
                for _ in range(r.randrange(1, 6)):
                    u = U(type=r.choice([U.INSERT, U.DELETE]))
                    u.entity.table_entry.table_id = 7
                    if size:
                        u.entity.table_entry.metadata = bytes(r.randrange(256) for _ in range(size))
                    raw = u.SerializeToString()
                    parts.append(b"\x22" + _varint(len(raw)) + raw)
        data = b"".join(parts)
        whole = p4runtime_pb2.WriteRequest.FromString(data)
        want = list(whole.updates)
        others: list = []
        spans = fastwrite.update_spans(data, others)
        whole.ClearField("updates")
        if spans is None or [U.FromString(data[a:b]) for a, b in spans] != want:
            bad += 1
        elif p4runtime_pb2.WriteRequest.FromString(b"".join(data[a:b] for a, b in others)) != whole:
            bad += 1  # the other fields, in their order: the request without its updates
        elif parts[-1][:1] == b"\x22" and fastwrite.update_spans(data[:-1]) is not None:
            bad += 1
    return bad


def test_update_spans_of_runs_equal_upbs_updates(monkeypatch) -> None:
    assert _spans_mismatches(5) == 0
    # negative control: a run cutter that does not check each Update's length byte

    def lax(data: bytes, i: int, ln: int) -> int:
        stride = ln + 2
        return scan._lead(data[i : i + (len(data) - i) // stride * stride : stride], b"\x22")

    monkeypatch.setattr(scan, "_same_length_run", lax)
    assert _spans_mismatches(5) > 10


@pytest.mark.parametrize("size", [0, 1, 127, 128, 300, 16384, 70000])
@pytest.mark.parametrize("fields", [0, 1, 3])
def test_packet_in_frame_is_protobufs_encoding(size, fields) -> None:
    from p4sim.server.packet_io import packet_in_frame

    payload = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    want = p4runtime_pb2.StreamMessageResponse()
    want.packet.SetInParent()
    for k in range(fields):
        want.packet.metadata.add(metadata_id=k + 1, value=bytes([k] * (k + 1)))
    meta = p4runtime_pb2.PacketIn(metadata=want.packet.metadata).SerializeToString()
    want.packet.payload = payload
    got = packet_in_frame(meta, bytearray(payload))
    assert p4runtime_pb2.StreamMessageResponse.FromString(got) == want
    assert got == want.SerializeToString()


def _synthetic_schema():
    """Tables l2_fwd.p4 does not have: exact+ternary (so an entry may give only the exact
    field, with a priority), two exact fields, exact+optional, a 1-bit and a 12-bit key."""
    from google.protobuf import text_format

    from p4rtproto import p4info_pb2
    from p4rtproto.schema import Schema

    text = """
    actions { preamble { id: 21 name: "set" } params { id: 1 name: "v" bitwidth: 12 } params { id: 2 name: "w" bitwidth: 1 } }
    actions { preamble { id: 22 name: "one" } params { id: 1 name: "port" bitwidth: 9 } }
    actions { preamble { id: 23 name: "none" } }
    tables { preamble { id: 11 name: "mixed" } match_fields { id: 1 name: "a" bitwidth: 12 match_type: EXACT }
             match_fields { id: 2 name: "b" bitwidth: 16 match_type: TERNARY }
             action_refs { id: 21 } action_refs { id: 22 } action_refs { id: 23 } size: 64 }
    tables { preamble { id: 12 name: "two" } match_fields { id: 1 name: "a" bitwidth: 1 match_type: EXACT }
             match_fields { id: 2 name: "b" bitwidth: 33 match_type: EXACT }
             action_refs { id: 22 } action_refs { id: 23 } size: 64 }
    tables { preamble { id: 13 name: "opt" } match_fields { id: 1 name: "a" bitwidth: 7 match_type: OPTIONAL }
             match_fields { id: 2 name: "p" bitwidth: 20 match_type: LPM }
             action_refs { id: 21 } action_refs { id: 23 } size: 64 }
    """
    return Schema(text_format.Parse(text, p4info_pb2.P4Info()))


def test_bound_builders_equal_the_reference_decoder() -> None:
    """For every learned shape and many value fillings: a bound builder either hands
    the update back (None) or gives exactly the reference decoder's (table, entry); and
    it never hands back a filling the reference accepts (the fast path is used)."""
    from p4rtproto.codec import decode_table_entry

    schema = _synthetic_schema()
    r = random.Random(5)
    widths = {(11, 1): 12, (11, 2): 16, (12, 1): 1, (12, 2): 33, (13, 1): 7, (13, 2): 20}
    sc = fastwrite.WriteScanner()
    accepted = fast = 0
    for _ in range(600):
        utype = r.choice([U.INSERT, U.MODIFY, U.DELETE])
        tid = r.choice([11, 12, 13])
        u = U(type=utype)
        te = u.entity.table_entry
        te.table_id = tid

        def value(w: int, nb: int) -> int:  # fits mostly; sometimes one bit too wide
            return r.randrange(1 << w) | ((1 << w) if r.random() < 0.1 and nb * 8 > w else 0)

        for fid in (1, 2):
            w = widths[(tid, fid)]
            nb = (w + 7) // 8 + r.choice([0, 0, 0, 1])
            v = value(w, nb)
            if tid == 11 and fid == 2:
                if r.random() < 0.5:
                    continue
                mask = r.choice([0xFFFF, 0x0F00, 0, 0x1FFFF if nb > 2 else 0xFFFF, 0x00F0])
                fm = te.match.add(field_id=fid)
                fm.ternary.value = (v & mask if r.random() < 0.9 else v).to_bytes(nb, "big")
                fm.ternary.mask = mask.to_bytes(nb, "big")
            elif tid == 13:
                if r.random() < 0.3:
                    continue
                fm = te.match.add(field_id=fid)
                if fid == 1:
                    fm.optional.value = v.to_bytes(nb, "big")
                else:
                    fm.lpm.prefix_len = plen = r.choice([4, 20, 21, 12])
                    if r.random() < 0.9 and plen <= w:
                        v &= ~((1 << (w - plen)) - 1)
                    fm.lpm.value = v.to_bytes(nb, "big")
            else:
                te.match.add(field_id=fid).exact.value = v.to_bytes(nb, "big")
        te.priority = r.choice([3, 3, 3, 0]) if tid != 12 else r.choice([0, 0, 0, 1])
        aid = r.choice([21, 22, 23])
        if utype != U.DELETE or r.random() < 0.3:
            te.action.action.action_id = aid
            for pid, w in {21: ((1, 12), (2, 1)), 22: ((1, 9),), 23: ()}[aid]:
                te.action.action.params.add(param_id=pid, value=value(w, 2).to_bytes(2, "big"))
        raw = u.SerializeToString()
        hit = sc.lookup(raw, 0, len(raw))
        if hit is None:
            sc.learn(u, raw)
            hit = sc.lookup(raw, 0, len(raw))
        assert hit is not None
        shape, vals = hit
        plain = shape.plain(vals)
        try:
            ref = decode_table_entry(schema, plain, need_action=utype != U.DELETE)
        except Exception:
            ref = None
        if shape.bound is None:
            shape.bound = (schema, fastwrite.bind(shape, schema))
        build = shape.bound[1]
        got = build(vals) if build is not None else None
        if ref is not None:
            accepted += 1
            assert got is not None, plain  # a value the reference accepts takes the fast way
            fast += 1
        if got is not None:
            assert ref is not None, plain
            assert got[0] is ref[0] and got[1] == ref[1], plain
    assert accepted > 100 and fast == accepted
