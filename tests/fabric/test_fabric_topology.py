"""Topologies, routes and ECMP groups, and frames crossing a real multi-switch fabric."""

from __future__ import annotations

import pytest

from controller.config import ConfigError
from controller.fabric.engine import Fabric
from controller.fabric.routing import compute_routes
from controller.fabric.scenarios import policy
from controller.fabric.topology import clockwise_edges, leaf_spine, ring
from controller.packets import decode
from controller.targets.base import TableQuery


def test_leaf_spine_shape_and_routes():
    t = leaf_spine(2, 4, 4)
    assert len(t.hosts) == 16 and len(t.switches) == 6 and len(t.links) == 16 + 8
    r = compute_routes(t)
    # a leaf reaches another leaf's /24 through both spines (an ECMP group of 2)
    assert r["leaf0"].routes["10.0.3.0/24"] == [5, 6]
    assert "10.0.0.0/24" not in r["leaf0"].routes  # its own hosts are host routes
    # a spine has exactly one way down to each leaf
    assert r["spine0"].routes["10.0.2.0/24"] == [3]
    assert t.hosts["h2_1"].ip == "10.0.2.2"


def test_one_way_ring_routes_clockwise():
    t = ring(4, 1)
    r = compute_routes(t, clockwise_edges(t))
    assert r["r0"].routes["10.0.3.0/24"] == [2]  # three hops clockwise, not one back
    assert compute_routes(t)["r0"].routes["10.0.3.0/24"] == [3]


def test_bad_topologies_are_refused():
    with pytest.raises(ValueError, match="at least 3"):
        ring(2)
    with pytest.raises(ValueError, match=">= 1"):
        leaf_spine(0, 2, 2)
    t = leaf_spine(1, 2, 1)
    with pytest.raises(ValueError, match="already cabled"):
        t.connect("leaf0", 2, "leaf1", 3)
    with pytest.raises(ConfigError, match="topology"):
        Fabric(leaf_spine(1, 2, 1), {**policy(), "routes": []})


def test_ecmp_entries_are_written_to_each_switch():
    fab = Fabric(leaf_spine(2, 2, 1), policy())
    lpm = fab.targets["leaf0"].read(
        TableQuery(
            next(n for n in fab.targets["leaf0"].entity_names()["tables"] if n.endswith("ipv4_lpm"))
        )
    )
    ecmp = [e for e in lpm if e.action.endswith("set_ecmp")]
    assert len(ecmp) == 1 and ecmp[0].params == {"group": 1, "size": 2}


def test_frames_cross_leaf_spine_leaf_and_spread_over_both_spines():
    """Eight QPs h0_0 -> h1_0: data arrives (TTL down by 3: leaf, spine, leaf), and the
    5-tuple hash uses both spines."""
    fab = Fabric(leaf_spine(2, 2, 1), policy())
    got: list[bytes] = []
    dst = fab.hosts["h1_0"]
    orig = dst.receive
    dst.receive = lambda fr: (got.append(fr), orig(fr))[1]
    flows = [fab.add_flow("h0_0", "h1_0", 4096) for _ in range(8)]
    fab.run(200_000)
    assert all(fab.delivered(f) == 4096 for f in flows)
    ttls = {fr[14 + 8] for fr in got if decode(fr).is_roce}  # IPv4 TTL (untagged)
    assert ttls == {64 - 3}
    per_spine = {s: fab.targets[s].switch.stats["rx"] for s in ("spine0", "spine1")}
    assert all(n > 0 for n in per_spine.values()), per_spine


def test_deadlock_cycles_needs_a_closed_wait_for_chain():
    from controller.fabric.watchdog import deadlock_cycles

    fab = Fabric(ring(4, 1), policy())
    cw = [(f"r{i}", 2, 3) for i in range(4)]  # port 2: clockwise
    assert deadlock_cycles(fab, cw) == [sorted(cw)]
    assert deadlock_cycles(fab, cw[:3]) == []  # an open chain is congestion, not deadlock
    # the counter-clockwise queues form their own cycle; mixing directions closes none
    ccw = [(f"r{i}", 3, 3) for i in range(4)]
    assert deadlock_cycles(fab, ccw) == [sorted(ccw)]
    assert deadlock_cycles(fab, cw[:2] + ccw[2:]) == []
    assert deadlock_cycles(fab, [(q[0], q[1], 4) for q in cw[:3]] + [cw[3]]) == []  # classes
    # host-facing queues never wait on a switch
    assert deadlock_cycles(fab, [(f"r{i}", 1, 3) for i in range(4)]) == []
