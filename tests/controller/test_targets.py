"""The Target interface on two targets with the same test body: the in-process p4sim and
p4sim-switch over P4Runtime (our client, real gRPC). Config entities are accepted, read
back, counters read, PacketOut/PacketIn through the program's controller headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import apply_config, load_config
from controller.packets import decode
from controller.packets.build import roce_frame
from controller.targets import (
    DEFAULT_PROGRAM,
    CloneSession,
    CounterQuery,
    RegisterCell,
    RegisterQuery,
    TableEntry,
    TableQuery,
    Target,
    TargetError,
    from_p4,
    open_target,
)
from controller.telemetry import from_counters

LAB = Path(__file__).resolve().parents[2] / "controller" / "examples" / "lab.yaml"


@pytest.fixture(scope="module")
def p4sim_switch(tmp_path_factory):
    """One p4sim-switch process for the module; each test pushes the pipeline afresh."""
    from controller.targets.kinds.p4sim_grpc import start_p4sim_switch

    sw = start_p4sim_switch(DEFAULT_PROGRAM, {}, log_dir=tmp_path_factory.mktemp("sw"))
    yield sw
    sw.close()


@pytest.fixture(scope="module")
def program():
    return from_p4(DEFAULT_PROGRAM)


@pytest.fixture(params=["p4sim", "p4runtime"])
def any_target(request, program):
    if request.param == "p4sim":
        t = open_target("p4sim")
    else:
        sw = request.getfixturevalue("p4sim_switch")
        t = open_target(
            "p4runtime", program=program, grpc_addr=sw.grpc_addr, device_id=sw.device_id
        )
    try:
        yield t
    finally:
        t.close()


def settle(t: Target) -> None:
    t.advance(2_000_000)  # virtual: run the queues; real: wait 2 ms for the server


def test_config_entities_accepted_and_read_back(any_target: Target):
    comp = apply_config(load_config(LAB), any_target)
    assert len(comp.entities) > 20
    routes = any_target.read(TableQuery("RoceIngress.fwd.ipv4_lpm"))
    assert sorted(e.match["hdr.ipv4.dst"].value for e in routes) == [
        0x0A000001,
        0x0A000002,
        0x0A000003,
    ]
    ecn = any_target.read(TableQuery("ecn_profile"))  # a unique suffix works too
    assert {e.params["kmin"] for e in ecn} == {5} and len(ecn) == 4
    any_target.write([RegisterCell("fault_count", 3, 17)])
    (cell,) = any_target.read(RegisterQuery("fault_count", 3))
    assert cell.value == 17
    cells = any_target.read(CounterQuery("roce_rx", 8 * 1 + 3))
    assert cells[0].packets == 0
    with pytest.raises(TargetError) as exc:
        any_target.read(TableQuery("no_such_table"))
    assert exc.value.code == "NOT_FOUND"
    with pytest.raises(TargetError) as exc:
        any_target.write([routes[0]])  # the same route twice
    assert exc.value.code == "ALREADY_EXISTS"


def test_packet_out_to_cpu_comes_back_as_packet_in(any_target: Target):
    frame = roce_frame("10.0.0.1", "10.0.0.3", "SEND_ONLY", 0x301, 9, b"hello")
    any_target.packet_out(frame, {"egress_port": 255})
    pins = []
    for _ in range(200):
        settle(any_target)
        pins += any_target.packet_in()
        if pins:
            break
    assert pins, "no PacketIn"
    assert pins[0].data == frame and pins[0].metadata["ingress_port"] == 255


def test_forwarding_and_counters_in_process():
    t = open_target("p4sim")
    apply_config(load_config(LAB), t)
    frame = roce_frame(
        "10.0.0.1",
        "10.0.0.3",
        "WRITE_ONLY",
        0x301,
        1,
        bytes(256),
        eth_src="02:00:00:00:00:01",
        eth_dst="02:00:00:00:00:fe",
    )
    t.send(1, frame)
    t.send(
        1,
        roce_frame(
            "10.0.0.1",
            "10.0.0.3",
            "WRITE_ONLY",
            0x302,
            1,
            bytes(64),
            eth_src="02:00:00:00:00:01",
            eth_dst="02:00:00:00:00:fe",
        ),
    )
    settle(t)
    outs_all = t.receive()
    outs = [o for o in outs_all if o.port == 3 and decode(o.data).bth_dqpn == 0x301]
    assert len(outs) == 1
    rec = decode(outs[0].data)
    # routed: MACs rewritten to the port MAC and h3, TTL decremented, still a valid RoCEv2 frame
    assert rec.eth_dst == 0x020000000003 and rec.eth_src == 0x020000000103
    assert rec.ttl == 63 and rec.verdict == "ok"
    tel = from_counters(t.counters())
    assert tel.rows[(1, 3)]["roce_rx"] == 2 and tel.rows[(3, 3)]["roce_tx"] == 2
    # lab.yaml mirrors traffic to h3 on port 9; with a QP match only QP 0x301 is copied
    mirrored = [o for o in outs_all if o.port == 9]
    assert len(mirrored) == 1 and mirrored[0].data == frame
    assert t.queue_depth(3, 3) == 0 and t.now() >= 2_000_000


def test_counters_cli(capsys, tmp_path):
    from controller.cli import main

    assert main(["apply", str(LAB)]) == 0
    assert "entities from" in capsys.readouterr().out
    bad = Path(LAB).with_name("bad.yaml")
    assert main(["apply", str(bad)]) == 1  # rejected by check: nothing is programmed
    cap = capsys.readouterr()
    assert "entities from" not in cap.out and "not applied" in cap.err
    assert main(["counters", "--config", str(LAB), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"per_port_class": []' in out
    assert main(["counters", "--target", "bmv2"]) == 2  # no --grpc-addr: a usage error
    assert "--grpc-addr" in capsys.readouterr().err


@pytest.mark.root
@pytest.mark.slow
def test_hosts_through_p4runtime_switch_over_af_packet(tmp_path, program):
    """Wall-clock host models on veths (AF_PACKET) through p4sim-switch over P4Runtime:
    the injection path for BMv2 and hardware."""
    from controller.targets import netns
    from controller.targets.kinds.p4sim_grpc import start_p4sim_switch

    if not netns.is_root():
        pytest.skip("needs root for veth pairs and AF_PACKET")
    from controller.hosts.host import Host, HostSpec
    from controller.hosts.rc import WRITE
    from controller.scenarios.engine import RealtimeEngine

    cfg = load_config(LAB)
    with netns.NetnsSet() as nets:
        ours, theirs = {}, {}
        for port in (1, 3):
            v = nets.add_veth(netns.name("c", port), netns.name("w", port))
            ours[port], theirs[port] = v.outer, v.inner
        sw = start_p4sim_switch(DEFAULT_PROGRAM, theirs, log_dir=tmp_path)
        try:
            t = open_target(
                "p4runtime",
                program=program,
                grpc_addr=sw.grpc_addr,
                device_id=sw.device_id,
                port_map=ours,
            )
            apply_config(cfg, t)
            eng = RealtimeEngine(t)
            hosts = {}
            for name in ("h1", "h3"):
                h = cfg.hosts[name]
                spec = HostSpec(
                    name,
                    h.mac,
                    h.ip,
                    h.port,
                    link_bps=20e6,
                    prop_ns=0,
                    rp_enabled=False,
                    timeout_ns=2_000_000_000,
                    gateway_mac=cfg.router_mac,
                )
                hosts[name] = Host(spec, eng)
                eng.attach(hosts[name], h.port)
            hosts["h1"].add_qp(0x101, 0x301, "10.0.0.3", cfg.hosts["h3"].mac)
            hosts["h3"].add_qp(0x301, 0x101, "10.0.0.1", cfg.hosts["h1"].mac)
            hosts["h1"].post(0x101, WRITE, 16 * 1024)
            for _ in range(100):
                eng.run(50_000_000)
                if hosts["h1"].qps[0x101].requester.idle:
                    break
            req = hosts["h1"].qps[0x101].requester
            assert req.idle, (req.una, req.next_psn, req.stats)
            assert hosts["h3"].qps[0x301].responder.stats.bytes_received == 16 * 1024
            tel = from_counters(t.counters())
            assert tel.rows[(1, 3)]["roce_rx"] >= 16 and tel.rows[(3, 3)]["roce_tx"] >= 16
            t.close()
        finally:
            sw.close()


def test_af_packet_ports_keep_vlan_tags_in_and_out_of_a_namespace():
    """The port map's sockets (the P4Runtime target on BMv2/hardware, the plugin, the lab
    agent) give back a received frame as it was on the wire: the kernel strips 802.1Q tags
    before packet sockets see them, and AfPacketPorts puts them back."""
    from controller.targets import netns
    from controller.targets.afpacket import AfPacketPorts

    if not netns.is_root():
        pytest.skip("needs root for veth pairs and AF_PACKET")
    with netns.NetnsSet() as nets:
        ns = nets.add_netns(netns.name("n", "afp"))
        v = nets.add_veth(netns.name("o", "afp"), netns.name("i", "afp"), ns)
        root_side = AfPacketPorts({1: v.outer})
        ns_side = AfPacketPorts({7: v.inner}, {7: ns})
        try:
            tagged = roce_frame(
                "10.0.0.1", "10.0.0.2", "SEND_ONLY", 0x12, 5, b"x" * 100, vlan=42, pcp=3
            )
            untagged = roce_frame("10.0.0.2", "10.0.0.1", "ACK", 0x34, 5)
            root_side.send(1, tagged)
            ns_side.send(7, untagged)
            got_ns = [f for _, f in _poll_all(ns_side) if decode(f).is_roce]
            got_root = [f for _, f in _poll_all(root_side) if decode(f).is_roce]
            assert got_ns == [tagged] and decode(got_ns[0]).vlan_vid == 42
            assert got_root == [untagged]
            with pytest.raises(TargetError) as err:
                root_side.send(2, tagged)
            assert err.value.code == "NOT_FOUND"
        finally:
            root_side.close()
            ns_side.close()


def _poll_all(ports, wait_s: float = 0.5) -> list[tuple[int, bytes]]:
    import time

    out: list[tuple[int, bytes]] = []
    end = time.monotonic() + wait_s
    while time.monotonic() < end and not out:
        out += ports.poll(0.05)
    return out + ports.poll(0.05)


def test_counters_over_p4runtime_read_every_cell(p4sim_switch, program):
    """counters() reads all of roce_switch.p4's counters in one Read and decodes the wire
    bytes itself: every cell lands where the protobuf parse of the same Read puts it."""
    from controller.targets import CounterCell
    from p4rtproto import p4runtime_pb2

    t = open_target(
        "p4runtime",
        program=program,
        grpc_addr=p4sim_switch.grpc_addr,
        device_id=p4sim_switch.device_id,
    )
    try:
        sizes = dict(t.counter_names())
        assert sum(sizes.values()) > 30_000
        name = next(n for n in sizes if n.endswith("roce_rx"))
        other = next(n for n in sizes if n.endswith("drops"))
        last = sizes[name] - 1
        written = {(name, 0): (1, 64), (name, last): (2**33, 2**40 + 3), (other, 17): (5, 500)}
        t.write([CounterCell(n, i, p, b) for (n, i), (p, b) in written.items()])
        got = t.counters()
        assert {n: len(v) for n, v in got.items()} == sizes
        nonzero = {
            (n, i): v for n, cells in got.items() for i, v in enumerate(cells) if v != (0, 0)
        }
        assert nonzero == written
        # the generated protobuf classes read the same cells
        ent = p4runtime_pb2.Entity()
        ent.counter_entry.counter_id = t.conn.schema.counter(name).id
        slow = {
            e.counter_entry.index.index: (
                e.counter_entry.data.packet_count,
                e.counter_entry.data.byte_count,
            )
            for e in t.conn.read([ent])
        }
        assert [slow.get(i, (0, 0)) for i in range(sizes[name])] == got[name]
        assert t.read(CounterQuery(name, last)) == [CounterCell(name, last, 2**33, 2**40 + 3)]
    finally:
        t.close()


def _tables(t: Target) -> dict[str, list[str]]:
    return {
        name: sorted(repr(e) for e in t.read(TableQuery(name)))
        for name in t.entity_names()["tables"]
    }


def test_apply_config_twice_and_changed(any_target: Target, tmp_path):
    """`rocelab apply` twice is the same switch (it used to fail ALREADY_EXISTS on the
    table entries and clone sessions over P4Runtime); a changed config modifies in place."""
    cfg = load_config(LAB)
    first = apply_config(cfg, any_target)
    once = _tables(any_target)
    assert sum(map(len, once.values())) > 20
    second = apply_config(cfg, any_target)
    assert second.entities == first.entities and _tables(any_target) == once
    # Kmin 5 KB -> 10 KB: the same ECN profile entries, new parameters; nothing else moves.
    text = LAB.read_text().replace("kmin: 5KB", "kmin: 10KB")
    assert text != LAB.read_text()
    changed = tmp_path / "lab.yaml"
    changed.write_text(text)
    apply_config(load_config(changed), any_target)
    now = _tables(any_target)
    ecn = next(n for n in now if n.endswith("ecn_profile"))
    assert {e.params["kmin"] for e in any_target.read(TableQuery(ecn))} == {10}
    assert len(now[ecn]) == len(once[ecn])
    assert {n: v for n, v in now.items() if n != ecn} == {n: v for n, v in once.items() if n != ecn}
    # a plain write still refuses what exists
    with pytest.raises(TargetError) as exc:
        any_target.write([e for e in first.entities if isinstance(e, TableEntry)][:1])
    assert exc.value.code == "ALREADY_EXISTS"


def test_modify_existing_still_reports_other_errors(p4sim_switch, program):
    """Over P4Runtime: entries that exist are modified, and an update that fails for another
    reason is still an error (with its own code) after the others were applied."""
    t = open_target(
        "p4runtime",
        program=program,
        grpc_addr=p4sim_switch.grpc_addr,
        device_id=p4sim_switch.device_id,
    )
    try:
        comp = apply_config(load_config(LAB), t)
        entries = [e for e in comp.entities if isinstance(e, TableEntry)][:3]
        with pytest.raises(TargetError) as exc:
            t.write([*entries, CloneSession(0, [1])], modify_existing=True)
        assert exc.value.code == "INVALID_ARGUMENT" and "clone session 0" in str(exc.value)
        assert "ALREADY_EXISTS" not in str(exc.value)
        t.write(entries, modify_existing=True)  # nothing left to complain about
    finally:
        t.close()
