"""Shortest-path next hops (hop count): only neighbours one hop closer to the destination
are next hops; a neighbour at the same distance is not (it would route sideways, and two
such switches would bounce packets between them). Expected ports worked by hand from the
ring's cabling (port 1 host, 2 clockwise, 3 counter-clockwise with one host per switch)."""

from __future__ import annotations

from controller.fabric.routing import compute_routes
from controller.fabric.topology import ring


def test_odd_ring_has_one_next_hop_per_far_switch():
    t = ring(5, 1)
    r = compute_routes(t)["r0"].routes
    pre = {s: t.switches[s].prefix for s in t.switches}
    # r2 is 2 hops clockwise and 3 counter-clockwise; r4 (1 hop back) is 2 hops from r2,
    # as far as r0 itself: not a next hop
    assert r[pre["r2"]] == [2]
    assert r[pre["r3"]] == [3]
    assert r[pre["r1"]] == [2] and r[pre["r4"]] == [3]


def test_even_ring_opposite_switch_is_an_ecmp_pair():
    t = ring(4, 1)
    assert compute_routes(t)["r0"].routes[t.switches["r2"].prefix] == [2, 3]
